package rates

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/memocart/memocart/models"
)

// Provider returns the current price of base in quote.
type Provider interface {
	Rate(ctx context.Context, base, quote string) (models.Rate, error)
}

// errProviderPanicked is what callers sharing a fetch get when the
// provider panicked in another caller's goroutine.
var errProviderPanicked = errors.New("rates: provider panicked")

// Cached wraps a Provider and keeps the last rate it returned for each
// pair for a while, so a burst of orders costs one upstream request.
//
// It never serves a rate older than its ttl: once the ttl has passed it
// fetches again and, if that fails, returns the error instead of the old
// rate, because a quote at a stale price can under-collect and refusing
// the order is the safer failure. Failures are not cached, so the next
// call tries again.
//
// Callers that arrive while a fetch for their pair is in flight wait for
// it and share its result rather than starting another. Cached is safe
// for concurrent use.
type Cached struct {
	p   Provider
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	rates    map[pair]cachedRate
	inflight map[pair]*fetch
}

// pair is a cache key.
type pair struct{ base, quote string }

// cachedRate is a rate and when this cache fetched it. The ttl runs from
// the fetch on our own clock, not from Rate.At, so a provider whose clock
// is off can't stretch or shrink it.
type cachedRate struct {
	rate      models.Rate
	fetchedAt time.Time
}

// fetch is one upstream request that several callers may be waiting on.
type fetch struct {
	done chan struct{} // closed when rate, err and leaderCancelled are set
	rate models.Rate
	err  error
	// leaderCancelled is set when the fetch failed because the context of
	// the caller that ran it ended; the others then try again with their
	// own, rather than failing for someone else's cancellation.
	leaderCancelled bool
	// waiters counts callers sharing this fetch, for tests.
	waiters int
}

// NewCached returns a cache in front of p that keeps each rate for ttl.
// A ttl of zero or less caches nothing but still shares concurrent
// fetches. now is the clock (time.Now if nil).
func NewCached(p Provider, ttl time.Duration, now func() time.Time) *Cached {
	if now == nil {
		now = time.Now
	}
	return &Cached{
		p:        p,
		ttl:      ttl,
		now:      now,
		rates:    map[pair]cachedRate{},
		inflight: map[pair]*fetch{},
	}
}

// Rate returns the cached rate for base in quote if it was fetched less
// than ttl ago, and otherwise fetches a new one from the wrapped provider.
func (c *Cached) Rate(ctx context.Context, base, quote string) (models.Rate, error) {
	// Providers ignore case, so "xlm" and "XLM" share one entry.
	k := pair{strings.ToUpper(base), strings.ToUpper(quote)}
	for {
		c.mu.Lock()
		if r, ok := c.fresh(k); ok {
			c.mu.Unlock()
			return r, nil
		}
		if f, ok := c.inflight[k]; ok {
			f.waiters++
			c.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return models.Rate{}, ctx.Err()
			}
			if f.leaderCancelled && ctx.Err() == nil {
				continue
			}
			return f.rate, f.err
		}
		f := &fetch{done: make(chan struct{}), err: errProviderPanicked}
		c.inflight[k] = f
		c.mu.Unlock()

		c.run(ctx, k, f)
		return f.rate, f.err
	}
}

// fresh returns the cached rate for k if it is younger than the ttl.
// c.mu must be held.
func (c *Cached) fresh(k pair) (models.Rate, bool) {
	cr, ok := c.rates[k]
	if !ok {
		return models.Rate{}, false
	}
	// A negative age means the clock stepped back: refetch rather than
	// trust an entry whose age is unknown.
	age := c.now().Sub(cr.fetchedAt)
	if age < 0 || age >= c.ttl {
		delete(c.rates, k)
		return models.Rate{}, false
	}
	return cr.rate, true
}

// run fetches k from the provider into f, caches a good result, and
// releases the callers waiting on f, even if the provider panics.
func (c *Cached) run(ctx context.Context, k pair, f *fetch) {
	defer func() {
		c.mu.Lock()
		delete(c.inflight, k)
		if f.err == nil {
			c.rates[k] = cachedRate{rate: f.rate, fetchedAt: c.now()}
		}
		c.mu.Unlock()
		close(f.done)
	}()
	r, err := c.p.Rate(ctx, k.base, k.quote)
	switch {
	case err != nil:
		f.err = err
		f.leaderCancelled = ctx.Err() != nil
	case !r.Price.IsPositive():
		// Providers check this too; a zero price cached would turn every
		// quote for ttl into an error at best.
		f.err = fmt.Errorf("rates: %s returned a non-positive %s-%s price %s", r.Source, k.base, k.quote, r.Price)
	default:
		f.rate, f.err = r, nil
	}
}
