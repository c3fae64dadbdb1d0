// Package marketplaces is the live product catalog the API prices carts
// with: it sends each lookup to the client of the link's marketplace and
// keeps answers for a while, so previews and carts of popular products do
// not spend the marketplaces' small request quotas.
//
// It may import models and golang.org/x/sync.
package marketplaces

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/memocart/memocart/models"
)

// Catalog looks up one marketplace's products (activities/amazon,
// activities/ebay).
type Catalog interface {
	Product(ctx context.Context, ref models.ProductRef) (models.Product, error)
}

// Defaults of Config.
const (
	DefaultTTL         = 10 * time.Minute
	DefaultNegativeTTL = time.Minute
	DefaultMaxEntries  = 50_000
)

// Config configures a Router.
type Config struct {
	// Catalogs maps each marketplace to its client. A marketplace without
	// one answers live_mode_unavailable naming it.
	Catalogs map[models.Marketplace]Catalog
	// TTL is how long a product is served from the cache: the oldest a
	// price or an availability shown may be. Zero means DefaultTTL; a
	// negative TTL disables caching.
	TTL time.Duration
	// NegativeTTL is how long "this product cannot be bought" is
	// remembered; shorter, since a product comes back in stock.
	NegativeTTL time.Duration
	// MaxEntries bounds the cache's memory.
	MaxEntries int
	Now        func() time.Time
}

// Router is the live catalog: one client per marketplace behind a cache
// keyed by (marketplace, product, variation, destination). Outages
// (marketplace_unavailable) are never cached and never answered from a
// stale entry: a client gets a 503 and retries. Safe for concurrent use.
type Router struct {
	cfg   Config
	group singleflight.Group

	mu      sync.Mutex
	entries map[string]entry
}

type entry struct {
	product models.Product
	err     error
	expires time.Time
}

// NewRouter returns a Router over cfg.Catalogs.
func NewRouter(cfg Config) *Router {
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.NegativeTTL == 0 {
		cfg.NegativeTTL = DefaultNegativeTTL
	}
	if cfg.NegativeTTL > cfg.TTL {
		cfg.NegativeTTL = cfg.TTL
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Router{cfg: cfg, entries: map[string]entry{}}
}

// Product returns the product ref names, from the cache while it is fresh.
// Concurrent lookups of the same key make one upstream call.
func (r *Router) Product(ctx context.Context, ref models.ProductRef) (models.Product, error) {
	c, ok := r.cfg.Catalogs[ref.Marketplace]
	if !ok || c == nil {
		return models.Product{}, models.Errorf(models.CodeLiveUnavailable,
			"Live product data from %s is not configured on this deployment", ref.Marketplace)
	}
	if r.cfg.TTL < 0 {
		return c.Product(ctx, ref)
	}
	key := cacheKey(ref)
	if e, ok := r.lookup(key); ok {
		return e.product, e.err
	}
	// The upstream call is shared by everyone waiting on this key, so it
	// must not end when the first caller gives up; its clients bound it.
	ch := r.group.DoChan(key, func() (any, error) {
		p, err := c.Product(context.WithoutCancel(ctx), ref)
		r.store(key, p, err)
		return p, err
	})
	select {
	case <-ctx.Done():
		return models.Product{}, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return models.Product{}, res.Err
		}
		return res.Val.(models.Product), nil
	}
}

// cacheKey names a lookup. A short link is keyed by the link itself: the
// marketplace client remembers what it resolves to.
func cacheKey(ref models.ProductRef) string {
	id := ref.ID
	if ref.IsShortLink() {
		id = ref.URL
	}
	return fmt.Sprintf("%s|%s|%s|%s|%s", ref.Marketplace, ref.Host, id, ref.Variation, ref.ShipTo)
}

func (r *Router) lookup(key string) (entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok {
		return entry{}, false
	}
	if !r.cfg.Now().Before(e.expires) {
		delete(r.entries, key)
		return entry{}, false
	}
	return e, true
}

// store caches a product, or the answer that it cannot be bought; any
// other failure (an outage, a missing configuration, a cancelled request)
// is not an answer about the product and is not kept.
func (r *Router) store(key string, p models.Product, err error) {
	ttl := r.cfg.TTL
	switch {
	case err == nil:
	case errors.Is(err, models.ErrProductUnavailable), errors.Is(err, models.ErrInvalidURL):
		ttl = r.cfg.NegativeTTL
	default:
		return
	}
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) >= r.cfg.MaxEntries {
		r.evictLocked(now)
	}
	r.entries[key] = entry{product: p, err: err, expires: now.Add(ttl)}
}

// evictLocked drops expired entries and, if the cache is still full, an
// arbitrary tenth of it: simpler than LRU, and a cache this size only
// fills under a scan of distinct products, where recency means little.
func (r *Router) evictLocked(now time.Time) {
	for k, e := range r.entries {
		if !now.Before(e.expires) {
			delete(r.entries, k)
		}
	}
	drop := len(r.entries) - r.cfg.MaxEntries + max(1, r.cfg.MaxEntries/10)
	for k := range r.entries {
		if drop <= 0 {
			break
		}
		delete(r.entries, k)
		drop--
	}
}
