package ebay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/ebay/browsetest"
	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
)

type harness struct {
	srv  *browsetest.Server
	cat  *Catalog
	logs *upstreamtest.LogBuffer
}

// newHarness starts a test server and a catalog pointed at it, fast
// enough for tests: no pacing to speak of, millisecond backoff.
func newHarness(t *testing.T, mutate ...func(*Config)) *harness {
	t.Helper()
	srv := browsetest.New()
	t.Cleanup(srv.Close)
	id, secret := srv.Credentials()
	logs := &upstreamtest.LogBuffer{}
	cfg := Config{
		APIURL:            srv.URL,
		ClientID:          id,
		ClientSecret:      secret,
		RequestsPerSecond: 1000,
		Logger:            slog.New(slog.NewTextHandler(logs, nil)),
	}
	for _, m := range mutate {
		m(&cfg)
	}
	cat, err := New(cfg)
	require.NoError(t, err)
	cat.backoff.Min, cat.backoff.Max = time.Millisecond, 5*time.Millisecond
	t.Cleanup(func() {
		// Whatever a test did, secrets never reach the logs.
		assert.NotContains(t, logs.String(), secret)
		assert.NotContains(t, logs.String(), "v^1.1#")
	})
	return &harness{srv: srv, cat: cat, logs: logs}
}

func parse(t *testing.T, link string) models.ProductRef {
	t.Helper()
	ref, err := models.ParseProductURL(link)
	require.NoError(t, err)
	return ref
}

func requireCode(t *testing.T, err error, code models.Code, msg string) {
	t.Helper()
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, code, me.Code)
	if msg != "" {
		assert.Equal(t, msg, me.Message)
	}
}

func TestProductAgainstTestServer(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()

	t.Run("any well-formed id is a fixed-price listing", func(t *testing.T) {
		ref := parse(t, "https://www.ebay.com/itm/Some-Title/123456789012?hash=item1c")
		p, err := h.cat.Product(ctx, ref)
		require.NoError(t, err)
		assert.Equal(t, models.MarketplaceEbay, p.Marketplace)
		assert.Equal(t, "123456789012", p.ID)
		assert.Contains(t, p.Title, "test server")
		assert.Equal(t, "https://www.ebay.com/itm/123456789012", p.ProductURL)
		assert.Equal(t, "USD", p.Currency)
		assert.True(t, p.Price.IsPositive())
		assert.Equal(t, models.InStock, p.Availability)
		assert.Equal(t, "v1|123456789012|0", p.UpstreamID)
		assert.Equal(t, "browsetest-seller", p.Listing)
		assert.Equal(t, h.srv.URL+"/images/123456789012.svg", p.ImageURL)

		again, err := h.cat.Product(ctx, ref)
		require.NoError(t, err)
		assert.True(t, p.Price.Equal(again.Price), "the same listing has the same price")
	})

	refusals := []struct {
		id, want string
	}{
		{browsetest.AuctionItem, msgAuction},
		{browsetest.EndedItem, msgEnded},
		{browsetest.OutOfStockItem, msgOutOfStock},
		{browsetest.NotFoundItem, msgNotFound},
		{browsetest.VariationsItem, msgNeedsVariation},
	}
	for _, tt := range refusals {
		t.Run("refuses "+tt.id, func(t *testing.T) {
			_, err := h.cat.Product(ctx, parse(t, "https://www.ebay.com/itm/"+tt.id))
			requireCode(t, err, models.CodeProductUnavailable, tt.want)
		})
	}
	for _, id := range []string{browsetest.AuctionBuyItNowItem, browsetest.LimitedStockItem} {
		t.Run("sells "+id, func(t *testing.T) {
			p, err := h.cat.Product(ctx, parse(t, "https://www.ebay.com/itm/"+id))
			require.NoError(t, err)
			assert.Equal(t, models.InStock, p.Availability)
		})
	}
}

func TestProductVariation(t *testing.T) {
	h := newHarness(t)
	// ParseProductURL does not fill Variation yet: the ref is built here.
	small := ebayRef("www.ebay.com", browsetest.VariationsItem, browsetest.VariationSmall)
	large := ebayRef("www.ebay.com", browsetest.VariationsItem, browsetest.VariationLarge)

	ps, err := h.cat.Product(t.Context(), small)
	require.NoError(t, err)
	pl, err := h.cat.Product(t.Context(), large)
	require.NoError(t, err)

	assert.Equal(t, "v1|"+browsetest.VariationsItem+"|"+browsetest.VariationLarge, pl.UpstreamID)
	assert.Equal(t, browsetest.VariationLarge, pl.Variation)
	assert.Equal(t, large.URL, pl.ProductURL)
	assert.Contains(t, pl.Title, "Size: Large")
	assert.False(t, ps.Price.Equal(pl.Price), "each variation has its own price")

	reqs := h.srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, browsetest.VariationsItem, reqs[1].LegacyItemID)
	assert.Equal(t, browsetest.VariationLarge, reqs[1].LegacyVariationID)

	_, err = h.cat.Product(t.Context(), ebayRef("www.ebay.com", browsetest.VariationsItem, "500000000999"))
	requireCode(t, err, models.CodeProductUnavailable, msgNotFound)
}

func TestProductMarketplaceFromHost(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		link, marketplace, currency string
	}{
		{"https://www.ebay.com/itm/123456789012", "EBAY_US", "USD"},
		{"https://www.ebay.co.uk/itm/123456789012", "EBAY_GB", "GBP"},
		{"https://m.ebay.de/itm/123456789012", "EBAY_DE", "EUR"},
		{"https://befr.ebay.be/itm/123456789012", "EBAY_BE", "EUR"},
		{"https://www.ebay.com.au/itm/123456789012", "EBAY_AU", "AUD"},
		{"https://www.ebay.ch/itm/123456789012", "EBAY_CH", "CHF"},
		{"https://www.ebay.com.sg/itm/123456789012", "EBAY_SG", "SGD"},
	}
	for _, tt := range tests {
		t.Run(tt.marketplace, func(t *testing.T) {
			p, err := h.cat.Product(t.Context(), parse(t, tt.link))
			require.NoError(t, err)
			assert.Equal(t, tt.currency, p.Currency)
			reqs := h.srv.Requests()
			assert.Equal(t, tt.marketplace, reqs[len(reqs)-1].MarketplaceID)
		})
	}
}

// Every storefront ParseProductURL accepts has a marketplace id.
func TestMarketplaceIDsCoverParsedHosts(t *testing.T) {
	for site, want := range marketplaceIDs {
		ref := parse(t, "https://"+site+"/itm/123456789012")
		got, ok := marketplaceID(ref.Host)
		assert.True(t, ok, site)
		assert.Equal(t, want, got, site)
	}
	_, ok := marketplaceID("www.ebay.cn")
	assert.False(t, ok)
}

func TestProductShipToContext(t *testing.T) {
	h := newHarness(t)
	ref := parse(t, "https://www.ebay.de/itm/123456789012")

	_, err := h.cat.Product(t.Context(), ref)
	require.NoError(t, err)
	ref.ShipTo = "fr"
	_, err = h.cat.Product(t.Context(), ref)
	require.NoError(t, err)

	reqs := h.srv.Requests()
	require.Len(t, reqs, 2)
	assert.Empty(t, reqs[0].EndUserContext, "a preview names no destination")
	assert.Equal(t, "contextualLocation=country%3DFR", reqs[1].EndUserContext)
	assert.Equal(t, "FR", reqs[1].ShipTo)
}

func TestProductTokenReuseAndRefresh(t *testing.T) {
	h := newHarness(t)
	ref := parse(t, "https://www.ebay.com/itm/123456789012")

	for range 3 {
		_, err := h.cat.Product(t.Context(), ref)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, h.srv.TokensIssued(), "one token serves every call")

	h.srv.ExpireTokens()
	_, err := h.cat.Product(t.Context(), ref)
	require.NoError(t, err)
	assert.Equal(t, 2, h.srv.TokensIssued(), "a 401 fetches one new token")
	reqs := h.srv.Requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, 401, reqs[3].Status)
	assert.Equal(t, 200, reqs[4].Status)

	_, err = h.cat.Product(t.Context(), ref)
	require.NoError(t, err)
	assert.Equal(t, 2, h.srv.TokensIssued(), "the new token is kept")
}

func TestProductTokenRejectedTwice(t *testing.T) {
	h := newHarness(t)
	h.srv.FailNext(401, 10)
	_, err := h.cat.Product(t.Context(), parse(t, "https://www.ebay.com/itm/123456789012"))
	requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
	assert.Len(t, h.srv.Requests(), 2, "one refresh, then give up")
	assert.Equal(t, 2, h.srv.TokensIssued())
	assert.Contains(t, h.logs.String(), "credentials rejected")
}

func TestProductWrongCredentials(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ClientSecret = "not-the-secret" })
	_, err := h.cat.Product(t.Context(), parse(t, "https://www.ebay.com/itm/123456789012"))
	requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
	assert.Empty(t, h.srv.Requests(), "no item call without a token")
	assert.Equal(t, 0, h.srv.TokensIssued())
	assert.Contains(t, h.logs.String(), "credentials rejected by the token endpoint")
	assert.Contains(t, h.logs.String(), "invalid_client")
	assert.NotContains(t, h.logs.String(), "not-the-secret")
}

func TestProductRetries(t *testing.T) {
	ref := models.ProductRef{Marketplace: models.MarketplaceEbay, ID: "123456789012", Host: "www.ebay.com",
		URL: "https://www.ebay.com/itm/123456789012"}

	t.Run("429 then success", func(t *testing.T) {
		h := newHarness(t)
		h.srv.RateLimitNext(2, 0)
		_, err := h.cat.Product(t.Context(), ref)
		require.NoError(t, err)
		assert.Len(t, h.srv.Requests(), 3)
	})
	t.Run("Retry-After is honoured", func(t *testing.T) {
		h := newHarness(t)
		h.srv.RateLimitNext(1, time.Second)
		start := time.Now()
		_, err := h.cat.Product(t.Context(), ref)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), time.Second)
	})
	t.Run("a Retry-After too long is not waited for", func(t *testing.T) {
		h := newHarness(t)
		h.srv.RateLimitNext(5, 30*time.Second)
		start := time.Now()
		_, err := h.cat.Product(t.Context(), ref)
		requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Len(t, h.srv.Requests(), 1)
	})
	t.Run("5xx then success", func(t *testing.T) {
		h := newHarness(t)
		h.srv.FailNext(500, 1)
		_, err := h.cat.Product(t.Context(), ref)
		require.NoError(t, err)
	})
	t.Run("5xx burst", func(t *testing.T) {
		h := newHarness(t)
		h.srv.FailNext(503, 10)
		_, err := h.cat.Product(t.Context(), ref)
		requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
		assert.Len(t, h.srv.Requests(), maxAttempts)
		assert.Contains(t, h.logs.String(), "giving up")
	})
	t.Run("daily quota", func(t *testing.T) {
		h := newHarness(t)
		h.srv.SetDailyQuota(2)
		for range 2 {
			_, err := h.cat.Product(t.Context(), ref)
			require.NoError(t, err)
		}
		_, err := h.cat.Product(t.Context(), ref)
		requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
		assert.Len(t, h.srv.Requests(), 2+maxAttempts)

		// A day later the quota is back; the token has expired meanwhile.
		h.srv.Advance(24 * time.Hour)
		_, err = h.cat.Product(t.Context(), ref)
		require.NoError(t, err)
		assert.Equal(t, 2, h.srv.TokensIssued())
	})
}

func TestProductTimeouts(t *testing.T) {
	ref := parse(t, "https://www.ebay.com/itm/"+browsetest.SlowItem)

	t.Run("the caller's deadline", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := h.cat.Product(ctx, ref)
		requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), time.Second)
	})
	t.Run("each request's timeout", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Timeout = 150 * time.Millisecond })
		start := time.Now()
		_, err := h.cat.Product(t.Context(), ref)
		requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
		assert.Less(t, time.Since(start), 2*time.Second)
		assert.Len(t, h.srv.Requests(), maxAttempts)
	})
	t.Run("slow but in time", func(t *testing.T) {
		h := newHarness(t)
		h.srv.SetSlowDelay(50 * time.Millisecond)
		_, err := h.cat.Product(t.Context(), ref)
		require.NoError(t, err)
	})
	t.Run("no retry that cannot finish before the deadline", func(t *testing.T) {
		h := newHarness(t)
		h.cat.backoff.Min, h.cat.backoff.Max = time.Second, time.Second
		h.srv.FailNext(503, 10)
		ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := h.cat.Product(ctx, parse(t, "https://www.ebay.com/itm/123456789012"))
		requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
		assert.Less(t, time.Since(start), 300*time.Millisecond, "gives up at once instead of sleeping into the deadline")
		assert.Len(t, h.srv.Requests(), 1)
	})
	t.Run("a cancelled context makes no call", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := h.cat.Product(ctx, parse(t, "https://www.ebay.com/itm/123456789012"))
		requireCode(t, err, models.CodeMarketplaceUnavailable, msgUnavailable)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, h.srv.Requests())
	})
}

func TestProductPacing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RequestsPerSecond = 5 })
	ref := parse(t, "https://www.ebay.com/itm/123456789012")
	start := time.Now()
	for range 8 {
		_, err := h.cat.Product(t.Context(), ref)
		require.NoError(t, err)
	}
	// A burst of 5, then one call every 200ms.
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)
}

func TestProductConcurrentCallsShareOneToken(t *testing.T) {
	h := newHarness(t)
	h.srv.SetLatency(20 * time.Millisecond)
	refs := make([]models.ProductRef, 10)
	for i := range refs {
		refs[i] = parse(t, fmt.Sprintf("https://www.ebay.com/itm/1234567890%02d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(refs))
	for i, ref := range refs {
		wg.Go(func() { _, errs[i] = h.cat.Product(t.Context(), ref) })
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, 1, h.srv.TokensIssued())
}

func TestProductUnconfigured(t *testing.T) {
	srv := browsetest.New()
	defer srv.Close()
	cat, err := New(Config{APIURL: srv.URL})
	require.NoError(t, err)
	_, err = cat.Product(t.Context(), parse(t, "https://www.ebay.com/itm/123456789012"))
	requireCode(t, err, models.CodeLiveUnavailable, "Live product data from eBay is not configured on this deployment")
	assert.Empty(t, srv.Requests())
	assert.Equal(t, 0, srv.TokensIssued())
}

func TestProductRejectsForeignRefs(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		ref  models.ProductRef
	}{
		{"retailer ref", models.ProductRef{Marketplace: models.MarketplaceAmazon, ID: "B07YCM5K55", Host: "www.amazon.com"}},
		{"malformed id", models.ProductRef{Marketplace: models.MarketplaceEbay, ID: "12ab", Host: "www.ebay.com"}},
		{"malformed variation", ebayRef("www.ebay.com", "123456789012", "12&x=1")},
		{"unknown site", models.ProductRef{Marketplace: models.MarketplaceEbay, ID: "123456789012", Host: "www.ebay.cn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.cat.Product(t.Context(), tt.ref)
			requireCode(t, err, models.CodeInvalidURL, "")
		})
	}
	assert.Empty(t, h.srv.Requests())
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"half the keyset", Config{ClientID: "id"}},
		{"relative URL", Config{APIURL: "api.ebay.com"}},
		{"negative rate", Config{RequestsPerSecond: -1}},
		{"negative timeout", Config{Timeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			assert.Error(t, err)
		})
	}
	c, err := New(Config{})
	require.NoError(t, err)
	assert.Equal(t, DefaultAPIURL, c.apiURL)
	assert.Equal(t, DefaultTimeout, c.timeout)
	assert.InDelta(t, DefaultRequestsPerSecond, float64(c.limiter.Limit()), 0)
}

// The catalog's retry policy is this package's; upstream tests how a
// Backoff grows.
func TestBackoffGrowsWithJitter(t *testing.T) {
	c, err := New(Config{})
	require.NoError(t, err)
	c.backoff.Jitter = func(n int64) int64 { return n - 1 } // the top of each range
	assert.Equal(t, backoffMin, c.backoff.Wait(1))
	assert.Equal(t, 2*backoffMin, c.backoff.Wait(2))
	assert.Equal(t, backoffMax, c.backoff.Wait(10))
	c.backoff.Jitter = func(int64) int64 { return 0 } // the bottom
	assert.Equal(t, backoffMin/2, c.backoff.Wait(1))
}

func TestEndUserContext(t *testing.T) {
	assert.Equal(t, "contextualLocation=country%3DUS", endUserContext("US"))
	assert.Equal(t, "contextualLocation=country%3DGB", endUserContext("gb"))
	for _, bad := range []string{"", "USA", "U", "1A", "U,"} {
		assert.Empty(t, endUserContext(bad), bad)
	}
}

// errors.Is still sees the cause of a marketplace_unavailable answer, and
// its message never does.
func TestMarketplaceUnavailableKeepsCause(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	err := marketplaceUnavailable(cause)
	assert.ErrorIs(t, err, cause)
	assert.ErrorIs(t, err, models.ErrMarketplaceUnavailable)
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.False(t, strings.Contains(me.Message, "dial"))
}
