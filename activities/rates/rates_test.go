package rates

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/clocktest"
)

// countingProvider counts calls and answers with fn, given the call's
// 1-based number.
type countingProvider struct {
	calls atomic.Int32
	fn    func(ctx context.Context, n int32, base, quote string) (models.Rate, error)
}

func (p *countingProvider) Rate(ctx context.Context, base, quote string) (models.Rate, error) {
	return p.fn(ctx, p.calls.Add(1), base, quote)
}

// priceByCall answers call n with price n, so tests can tell fetches apart.
func priceByCall(clock *clocktest.Clock) *countingProvider {
	return &countingProvider{fn: func(_ context.Context, n int32, base, quote string) (models.Rate, error) {
		return models.Rate{Base: base, Quote: quote, Price: decimal.NewFromInt32(n), Source: "test", At: clock.Now()}, nil
	}}
}

func assertPrice(t *testing.T, want int64, r models.Rate) {
	t.Helper()
	assert.Truef(t, decimal.NewFromInt(want).Equal(r.Price), "want price %d, got %s", want, r.Price)
}

func TestCachedTTL(t *testing.T) {
	const ttl = time.Minute
	tests := []struct {
		name      string
		advance   time.Duration
		wantPrice int64 // 1: served from cache, 2: fetched again
	}{
		{"immediately", 0, 1},
		{"within ttl", 30 * time.Second, 1},
		{"just before ttl", ttl - time.Nanosecond, 1},
		{"at ttl", ttl, 2},
		{"after ttl", time.Hour, 2},
		{"clock stepped back", -time.Second, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktest.New(testNow)
			p := priceByCall(clock)
			c := NewCached(p, ttl, clock.Now)

			first, err := c.Rate(context.Background(), "XLM", "USD")
			require.NoError(t, err)
			assertPrice(t, 1, first)

			clock.Advance(tc.advance)
			second, err := c.Rate(context.Background(), "XLM", "USD")
			require.NoError(t, err)
			assertPrice(t, tc.wantPrice, second)
			assert.Equal(t, int32(tc.wantPrice), p.calls.Load())
		})
	}
}

func TestCachedFailureAfterExpiryIsNotMaskedByStaleRate(t *testing.T) {
	clock := clocktest.New(testNow)
	upstreamDown := errors.New("upstream down")
	var fail atomic.Bool
	p := &countingProvider{fn: func(_ context.Context, n int32, base, quote string) (models.Rate, error) {
		if fail.Load() {
			return models.Rate{}, upstreamDown
		}
		return models.Rate{Base: base, Quote: quote, Price: decimal.NewFromInt32(n), At: clock.Now()}, nil
	}}
	c := NewCached(p, time.Minute, clock.Now)

	r, err := c.Rate(context.Background(), "XLM", "USD")
	require.NoError(t, err)
	assertPrice(t, 1, r)

	fail.Store(true)
	r, err = c.Rate(context.Background(), "XLM", "USD")
	require.NoError(t, err, "within ttl the cached rate is served without asking upstream")
	assertPrice(t, 1, r)
	assert.Equal(t, int32(1), p.calls.Load())

	clock.Advance(time.Minute)
	r, err = c.Rate(context.Background(), "XLM", "USD")
	require.ErrorIs(t, err, upstreamDown)
	assert.Zero(t, r, "the stale rate must not be served")

	// Failures are not cached: the next call asks again.
	_, err = c.Rate(context.Background(), "XLM", "USD")
	require.ErrorIs(t, err, upstreamDown)
	assert.Equal(t, int32(3), p.calls.Load())

	fail.Store(false)
	r, err = c.Rate(context.Background(), "XLM", "USD")
	require.NoError(t, err)
	assertPrice(t, 4, r)
}

func TestCachedRejectsNonPositivePrice(t *testing.T) {
	for _, price := range []decimal.Decimal{decimal.Zero, decimal.NewFromInt(-1), {}} {
		t.Run(price.String(), func(t *testing.T) {
			p := &countingProvider{fn: func(context.Context, int32, string, string) (models.Rate, error) {
				return models.Rate{Price: price, Source: "broken"}, nil
			}}
			c := NewCached(p, time.Minute, fixedClock)
			for range 2 {
				_, err := c.Rate(context.Background(), "XLM", "USD")
				require.Error(t, err)
				assert.Contains(t, err.Error(), "non-positive")
			}
			assert.Equal(t, int32(2), p.calls.Load(), "a bad rate is not cached")
		})
	}
}

func TestCachedKeysByPair(t *testing.T) {
	clock := clocktest.New(testNow)
	p := priceByCall(clock)
	c := NewCached(p, time.Minute, clock.Now)
	ctx := context.Background()

	usd, err := c.Rate(ctx, "XLM", "USD")
	require.NoError(t, err)
	eur, err := c.Rate(ctx, "XLM", "EUR")
	require.NoError(t, err)
	lower, err := c.Rate(ctx, "xlm", "usd")
	require.NoError(t, err)

	assert.Equal(t, "USD", usd.Quote)
	assert.Equal(t, "EUR", eur.Quote)
	assertPrice(t, 1, usd)
	assertPrice(t, 2, eur)
	assertPrice(t, 1, lower)
	assert.Equal(t, int32(2), p.calls.Load())
}

func TestCachedZeroTTLAlwaysFetches(t *testing.T) {
	clock := clocktest.New(testNow)
	p := priceByCall(clock)
	c := NewCached(p, 0, clock.Now)
	for i := range 3 {
		r, err := c.Rate(context.Background(), "XLM", "USD")
		require.NoError(t, err)
		assertPrice(t, int64(i+1), r)
	}
}

// waiters returns how many callers are waiting on the fetch in flight for
// XLM-USD.
func waiters(c *Cached) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.inflight[pair{"XLM", "USD"}]; ok {
		return f.waiters
	}
	return 0
}

// blockingProvider blocks every call until release is closed (or the
// call's context ends), then answers with result.
func blockingProvider(release <-chan struct{}, result func(n int32) (models.Rate, error)) *countingProvider {
	return &countingProvider{fn: func(ctx context.Context, n int32, _, _ string) (models.Rate, error) {
		select {
		case <-release:
			return result(n)
		case <-ctx.Done():
			return models.Rate{}, ctx.Err()
		}
	}}
}

func TestCachedConcurrentCallersShareOneFetch(t *testing.T) {
	upstreamDown := errors.New("upstream down")
	tests := []struct {
		name    string
		result  func(n int32) (models.Rate, error)
		wantErr error
	}{
		{"success", func(n int32) (models.Rate, error) {
			return models.Rate{Price: decimal.NewFromInt32(n), At: testNow}, nil
		}, nil},
		{"failure", func(int32) (models.Rate, error) { return models.Rate{}, upstreamDown }, upstreamDown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const callers = 20
			release := make(chan struct{})
			p := blockingProvider(release, tc.result)
			c := NewCached(p, time.Minute, fixedClock)

			var wg sync.WaitGroup
			rates := make([]models.Rate, callers)
			errs := make([]error, callers)
			for i := range callers {
				wg.Go(func() { rates[i], errs[i] = c.Rate(context.Background(), "XLM", "USD") })
			}
			// Release only once every caller is in: one fetching, the
			// rest waiting on it. Without sharing, they would each fetch.
			require.Eventually(t, func() bool { return waiters(c) == callers-1 }, 5*time.Second, time.Millisecond)
			close(release)
			wg.Wait()

			assert.Equal(t, int32(1), p.calls.Load())
			for i := range callers {
				if tc.wantErr != nil {
					assert.ErrorIs(t, errs[i], tc.wantErr)
					continue
				}
				require.NoError(t, errs[i])
				assertPrice(t, 1, rates[i])
			}
		})
	}
}

func TestCachedLeaderCancelDoesNotFailOthers(t *testing.T) {
	release := make(chan struct{})
	p := blockingProvider(release, func(n int32) (models.Rate, error) {
		return models.Rate{Price: decimal.NewFromInt32(n), At: testNow}, nil
	})
	c := NewCached(p, time.Minute, fixedClock)

	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := c.Rate(leaderCtx, "XLM", "USD")
		leaderErr <- err
	}()
	require.Eventually(t, func() bool { return p.calls.Load() == 1 }, 5*time.Second, time.Millisecond)

	followerDone := make(chan struct{})
	var follower models.Rate
	var followerErr error
	go func() {
		defer close(followerDone)
		follower, followerErr = c.Rate(context.Background(), "XLM", "USD")
	}()
	require.Eventually(t, func() bool { return waiters(c) == 1 }, 5*time.Second, time.Millisecond)

	cancelLeader()
	assert.ErrorIs(t, <-leaderErr, context.Canceled)
	// The follower takes over with its own context and fetches again.
	require.Eventually(t, func() bool { return p.calls.Load() == 2 }, 5*time.Second, time.Millisecond)
	close(release)
	<-followerDone
	require.NoError(t, followerErr)
	assertPrice(t, 2, follower)
}

func TestCachedWaiterHonoursOwnContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	p := blockingProvider(release, func(n int32) (models.Rate, error) {
		return models.Rate{Price: decimal.NewFromInt32(n), At: testNow}, nil
	})
	c := NewCached(p, time.Minute, fixedClock)
	go func() { _, _ = c.Rate(context.Background(), "XLM", "USD") }()
	require.Eventually(t, func() bool { return p.calls.Load() == 1 }, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Rate(ctx, "XLM", "USD")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int32(1), p.calls.Load(), "a waiter does not start its own fetch")
}

func TestCachedProviderPanic(t *testing.T) {
	release := make(chan struct{})
	var panicking atomic.Bool
	panicking.Store(true)
	p := &countingProvider{fn: func(_ context.Context, n int32, _, _ string) (models.Rate, error) {
		if panicking.Load() {
			<-release
			panic("provider bug")
		}
		return models.Rate{Price: decimal.NewFromInt32(n), At: testNow}, nil
	}}
	c := NewCached(p, time.Minute, fixedClock)

	leaderPanic := make(chan any, 1)
	go func() {
		defer func() { leaderPanic <- recover() }()
		_, _ = c.Rate(context.Background(), "XLM", "USD")
	}()
	require.Eventually(t, func() bool { return p.calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	followerErr := make(chan error, 1)
	go func() {
		_, err := c.Rate(context.Background(), "XLM", "USD")
		followerErr <- err
	}()
	require.Eventually(t, func() bool { return waiters(c) == 1 }, 5*time.Second, time.Millisecond)
	close(release)

	assert.Equal(t, "provider bug", <-leaderPanic, "the panic reaches the caller that ran the provider")
	assert.ErrorIs(t, <-followerErr, errProviderPanicked, "waiters are released, not left hanging")

	panicking.Store(false)
	r, err := c.Rate(context.Background(), "XLM", "USD")
	require.NoError(t, err)
	assertPrice(t, 2, r)
}

func TestCachedWithFixedAndCoinbaseAreProviders(t *testing.T) {
	var _ Provider = (*Coinbase)(nil)
	var _ Provider = (*Fixed)(nil)
	var _ Provider = (*Cached)(nil)

	c := NewCached(NewFixed(decimal.RequireFromString("0.25"), fixedClock), time.Minute, fixedClock)
	r, err := c.Rate(context.Background(), "XLM", "USD")
	require.NoError(t, err)
	xlm, err := models.QuoteXLM(decimal.RequireFromString("10"), r.Price)
	require.NoError(t, err)
	assert.Equal(t, "40", xlm.String())
}
