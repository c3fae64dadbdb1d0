package marketplaces

import (
	"context"
	"fmt"
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

// countingCatalog answers with a product priced by its call count, or err.
type countingCatalog struct {
	calls atomic.Int32
	err   error
	delay time.Duration
}

func (c *countingCatalog) Product(ctx context.Context, ref models.ProductRef) (models.Product, error) {
	n := c.calls.Add(1)
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	if c.err != nil {
		return models.Product{}, c.err
	}
	return models.Product{Marketplace: ref.Marketplace, ID: ref.ID, Currency: "USD", Price: decimal.NewFromInt(int64(n)), Availability: models.InStock}, nil
}

func ref(id, shipTo string) models.ProductRef {
	return models.ProductRef{Marketplace: models.MarketplaceAmazon, ID: id, Host: "www.amazon.com", URL: "https://www.amazon.com/dp/" + id, ShipTo: shipTo}
}

func TestRouterCachesForTTLPerKey(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	amazon := &countingCatalog{}
	r := NewRouter(Config{Catalogs: map[models.Marketplace]Catalog{models.MarketplaceAmazon: amazon}, TTL: 10 * time.Minute, Now: clk.Now})
	ctx := t.Context()

	p, err := r.Product(ctx, ref("B0AAAAAAAA", ""))
	require.NoError(t, err)
	assert.Equal(t, "1", p.Price.String())
	clk.Advance(10*time.Minute - time.Second)
	p, err = r.Product(ctx, ref("B0AAAAAAAA", ""))
	require.NoError(t, err)
	assert.Equal(t, "1", p.Price.String(), "served from the cache within the TTL")
	assert.Equal(t, int32(1), amazon.calls.Load())

	// Another destination, variation or product is another entry.
	_, err = r.Product(ctx, ref("B0AAAAAAAA", "US"))
	require.NoError(t, err)
	v := ref("B0AAAAAAAA", "")
	v.Variation = "7"
	_, err = r.Product(ctx, v)
	require.NoError(t, err)
	assert.Equal(t, int32(3), amazon.calls.Load())

	// Never older than the TTL.
	clk.Advance(time.Second)
	p, err = r.Product(ctx, ref("B0AAAAAAAA", ""))
	require.NoError(t, err)
	assert.Equal(t, "4", p.Price.String(), "expired: asked again")
}

func TestRouterErrors(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	tests := []struct {
		name       string
		err        error
		cachedFor  time.Duration // 0: not cached at all
		wantCode   models.Code
		wantCached bool
	}{
		{"unavailable is remembered briefly", fmt.Errorf("amazon: %w", models.Errorf(models.CodeProductUnavailable, "out of stock")), time.Minute, models.CodeProductUnavailable, true},
		{"an outage is never cached", models.ErrMarketplaceUnavailable, 0, models.CodeMarketplaceUnavailable, false},
		{"missing configuration is never cached", models.ErrLiveUnavailable, 0, models.CodeLiveUnavailable, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &countingCatalog{err: tc.err}
			r := NewRouter(Config{Catalogs: map[models.Marketplace]Catalog{models.MarketplaceAmazon: c}, NegativeTTL: time.Minute, Now: clk.Now})
			for range 2 {
				_, err := r.Product(t.Context(), ref("B0BBBBBBBB", ""))
				assert.Equal(t, tc.wantCode, models.CodeOf(err))
			}
			if tc.wantCached {
				assert.Equal(t, int32(1), c.calls.Load())
				clk.Advance(tc.cachedFor)
				_, _ = r.Product(t.Context(), ref("B0BBBBBBBB", ""))
				assert.Equal(t, int32(2), c.calls.Load(), "asked again once the negative TTL passed")
			} else {
				assert.Equal(t, int32(2), c.calls.Load())
			}
		})
	}
}

func TestRouterUnconfiguredMarketplace(t *testing.T) {
	r := NewRouter(Config{Catalogs: map[models.Marketplace]Catalog{models.MarketplaceAmazon: &countingCatalog{}}})
	_, err := r.Product(t.Context(), models.ProductRef{Marketplace: models.MarketplaceEbay, ID: "123456789012"})
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, models.CodeLiveUnavailable, me.Code)
	assert.Contains(t, me.Message, "ebay")
}

func TestRouterCoalescesConcurrentMisses(t *testing.T) {
	c := &countingCatalog{delay: 50 * time.Millisecond}
	r := NewRouter(Config{Catalogs: map[models.Marketplace]Catalog{models.MarketplaceAmazon: c}})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Product(t.Context(), ref("B0CCCCCCCC", ""))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), c.calls.Load())
}

func TestRouterBoundsItsMemory(t *testing.T) {
	c := &countingCatalog{}
	r := NewRouter(Config{Catalogs: map[models.Marketplace]Catalog{models.MarketplaceAmazon: c}, MaxEntries: 100})
	for i := range 1000 {
		_, err := r.Product(t.Context(), ref(fmt.Sprintf("B0%08d", i), ""))
		require.NoError(t, err)
	}
	r.mu.Lock()
	n := len(r.entries)
	r.mu.Unlock()
	assert.LessOrEqual(t, n, 100)
}

func TestRouterCacheDisabled(t *testing.T) {
	c := &countingCatalog{}
	r := NewRouter(Config{Catalogs: map[models.Marketplace]Catalog{models.MarketplaceAmazon: c}, TTL: -1})
	for range 3 {
		_, err := r.Product(t.Context(), ref("B0DDDDDDDD", ""))
		require.NoError(t, err)
	}
	assert.Equal(t, int32(3), c.calls.Load())
}

func TestRouterHonoursTheCallersContext(t *testing.T) {
	c := &countingCatalog{delay: time.Second}
	r := NewRouter(Config{Catalogs: map[models.Marketplace]Catalog{models.MarketplaceAmazon: c}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Product(ctx, ref("B0EEEEEEEE", ""))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 900*time.Millisecond)
}
