package amazon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/amazon/creatorstest"
	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/clocktest"
)

// fakeClock only moves when the catalog sleeps, so waits are asserted
// exactly and cost no time.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock {
	return clocktest.New(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
}

// testCatalog is a catalog wired to srv with every region group
// configured, quick retries and a fast pace; mutate changes the config.
func testCatalog(t *testing.T, srv *creatorstest.Server, mutate func(*Config)) (*Catalog, *upstreamtest.LogBuffer) {
	t.Helper()
	id, secret := srv.Credentials()
	logs := &upstreamtest.LogBuffer{}
	cfg := Config{
		APIURL:   srv.URL,
		TokenURL: srv.TokenURL(),
		Credentials: map[RegionGroup]Credential{
			NA: {ClientID: id, ClientSecret: secret, PartnerTag: "memocart-20"},
			EU: {ClientID: id, ClientSecret: secret, PartnerTag: "memocart-21"},
			FE: {ClientID: id, ClientSecret: secret, PartnerTag: "memocart-22"},
		},
		RequestsPerSecond: 1000,
		HTTPClient:        srv.Client(),
		Logger:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	c.backoff.Min, c.backoff.Max = time.Millisecond, 4*time.Millisecond
	return c, logs
}

func newServer(t *testing.T, opts ...creatorstest.Option) *creatorstest.Server {
	t.Helper()
	srv := creatorstest.New(opts...)
	t.Cleanup(srv.Close)
	return srv
}

func amazonRef(t *testing.T, raw string) models.ProductRef {
	t.Helper()
	ref, err := models.ParseProductURL(raw)
	require.NoError(t, err)
	return ref
}

// apiCalls returns the getItems requests the server received.
func apiCalls(srv *creatorstest.Server) []creatorstest.Request {
	var out []creatorstest.Request
	for _, r := range srv.Requests() {
		if r.Path == creatorstest.GetItemsPath {
			out = append(out, r)
		}
	}
	return out
}

func tokenCalls(srv *creatorstest.Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Path == creatorstest.TokenPath {
			n++
		}
	}
	return n
}

func TestProductFromServer(t *testing.T) {
	srv := newServer(t)
	c, _ := testCatalog(t, srv, nil)

	usd, _ := creatorstest.Price("B07YCM5K55", "www.amazon.com")
	eur, _ := creatorstest.Price("B07YCM5K55", "www.amazon.de")
	gbp, _ := creatorstest.Price("B07YCM5K55", "www.amazon.co.uk")
	jpy, _ := creatorstest.Price("B07YCM5K55", "www.amazon.co.jp")
	scarce, _ := creatorstest.Price(creatorstest.ScarceASIN, "www.amazon.com")

	tests := []struct {
		name        string
		url         string
		marketplace string
		currency    string
		price       string
		listing     string
	}{
		{"amazon.com in dollars", "https://www.amazon.com/dp/B07YCM5K55", "www.amazon.com", "USD", usd, "Amazon.com"},
		{"amazon.de in euros", "https://www.amazon.de/dp/B07YCM5K55", "www.amazon.de", "EUR", eur, "Amazon.de"},
		{"amazon.co.uk in pounds", "https://amazon.co.uk/gp/product/B07YCM5K55", "www.amazon.co.uk", "GBP", gbp, "Amazon.co.uk"},
		{"amazon.co.jp in yen", "https://www.amazon.co.jp/dp/B07YCM5K55", "www.amazon.co.jp", "JPY", jpy, "Amazon.co.jp"},
		{"the buy-box winner, listed second", "https://www.amazon.com/dp/" + creatorstest.BuyBoxSecondASIN, "www.amazon.com", "USD",
			creatorstest.BuyBoxWinnerPrice, "Amazon.com"},
		{"scarce stock", "https://www.amazon.com/dp/" + creatorstest.ScarceASIN, "www.amazon.com", "USD", scarce, "Amazon.com"},
		{"the standard offer, not a Prime-exclusive deal", "https://www.amazon.com/dp/" + creatorstest.PrimeDealASIN, "www.amazon.com", "USD",
			creatorstest.PrimeStandardPrice, "Amazon.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := amazonRef(t, tt.url)
			p, err := c.Product(context.Background(), ref)
			require.NoError(t, err)
			assert.Equal(t, models.MarketplaceAmazon, p.Marketplace)
			assert.Equal(t, ref.ID, p.ID)
			assert.Equal(t, ref.ID, p.UpstreamID)
			assert.Equal(t, "https://"+tt.marketplace+"/dp/"+ref.ID, p.ProductURL)
			assert.Equal(t, tt.currency, p.Currency)
			assert.True(t, decimal.RequireFromString(tt.price).Equal(p.Price), "price %s, want %s", p.Price, tt.price)
			assert.Equal(t, models.InStock, p.Availability)
			assert.Equal(t, tt.listing, p.Listing)
			assert.NotEmpty(t, p.Title)
			assert.Equal(t, creatorstest.ImageURL(ref.ID), p.ImageURL)

			calls := apiCalls(srv)
			last := calls[len(calls)-1]
			assert.Equal(t, tt.marketplace, last.Marketplace)
			assert.Equal(t, []string{ref.ID}, last.ItemIDs)
			assert.Equal(t, http.StatusOK, last.Status)
		})
	}
	// The winner's price is not the first offer's: the test above would
	// pass by accident otherwise.
	require.NotEqual(t, creatorstest.BuyBoxOtherPrice, creatorstest.BuyBoxWinnerPrice)
}

func TestProductNotBuyable(t *testing.T) {
	srv := newServer(t)
	c, _ := testCatalog(t, srv, nil)
	srv.SetItem("B0LEADTIME", creatorstest.Item{Listings: []creatorstest.Listing{
		{Price: "10", Availability: "LEADTIME", BuyBoxWinner: true}}})

	tests := []struct {
		asin    string
		message string
	}{
		{creatorstest.OutOfStockASIN, "This product is out of stock at Amazon"},
		{creatorstest.PreorderASIN, "This product is only available for pre-order at Amazon"},
		{creatorstest.NoOffersASIN, "This product has no offer that can be bought at Amazon"},
		{creatorstest.NoPriceASIN, "This product has no offer that can be bought at Amazon: it has no price"},
		{creatorstest.NotFoundASIN, "This product was not found at Amazon, or Amazon does not provide its data"},
		{"B0LEADTIME", "This product is not in stock at Amazon: it ships only after a lead time"},
		{creatorstest.PrimeOnlyASIN, "This product is offered at Amazon only at a members-only deal price, which Memocart cannot buy at"},
	}
	for _, tt := range tests {
		t.Run(tt.asin, func(t *testing.T) {
			_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/"+tt.asin))
			me := requireCode(t, err, models.CodeProductUnavailable)
			assert.Equal(t, tt.message, me.Message)
		})
	}
	// An answer about the product is not retried.
	assert.Len(t, apiCalls(srv), len(tests))
}

// The catalog reads getItems whichever way the server spells its result
// container, and a 404 ResourceNotFoundException as "not found".
func TestProductWithEitherContainer(t *testing.T) {
	for _, container := range []creatorstest.Container{creatorstest.ItemsResult, creatorstest.ItemResults} {
		t.Run(string(container), func(t *testing.T) {
			srv := newServer(t, creatorstest.WithContainer(container))
			c, _ := testCatalog(t, srv, nil)
			p, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
			require.NoError(t, err)
			usd, _ := creatorstest.Price("B07YCM5K55", "www.amazon.com")
			assert.True(t, decimal.RequireFromString(usd).Equal(p.Price))

			_, err = c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/"+creatorstest.NotFoundASIN))
			requireCode(t, err, models.CodeProductUnavailable)
			calls := apiCalls(srv)
			assert.Equal(t, http.StatusNotFound, calls[len(calls)-1].Status)
			assert.Len(t, calls, 2, "not found is not retried")
		})
	}
}

func TestTokenObtainedOnceAndReused(t *testing.T) {
	srv := newServer(t)
	c, _ := testCatalog(t, srv, nil)
	for _, asin := range []string{"B07YCM5K55", "B08N5WRWNW", "B09V3KXJPB"} {
		_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/"+asin))
		require.NoError(t, err)
	}
	assert.Equal(t, 1, srv.TokensIssued())
	assert.Len(t, apiCalls(srv), 3)
}

// clockedCatalog is a catalog of a new server on a clock the test moves.
func clockedCatalog(t *testing.T) (*creatorstest.Server, *Catalog, *fakeClock) {
	t.Helper()
	srv := newServer(t)
	clock := newFakeClock()
	c, _ := testCatalog(t, srv, func(cfg *Config) { cfg.Now = clock.Now })
	return srv, c, clock
}

func TestTokenRenewedBeforeExpiry(t *testing.T) {
	srv, c, clock := clockedCatalog(t)
	ref := amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55")

	_, err := c.Product(context.Background(), ref)
	require.NoError(t, err)
	clock.Advance(3600*time.Second - tokenMargin - time.Second)
	_, err = c.Product(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, 1, srv.TokensIssued(), "still within the token's life less the margin")

	clock.Advance(2 * time.Second)
	_, err = c.Product(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.TokensIssued(), "replaced a margin before it expires")
}

func TestRevokedTokenRefreshedOnce(t *testing.T) {
	srv := newServer(t)
	c, _ := testCatalog(t, srv, nil)
	ref := amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55")
	_, err := c.Product(context.Background(), ref)
	require.NoError(t, err)

	srv.ExpireTokens()
	_, err = c.Product(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.TokensIssued())
	calls := apiCalls(srv)
	require.Len(t, calls, 3)
	assert.Equal(t, http.StatusUnauthorized, calls[1].Status)
	assert.Equal(t, http.StatusOK, calls[2].Status)
}

// productWhileFailing asks for a product while every getItems call
// answers status.
func productWhileFailing(t *testing.T, status int) (*creatorstest.Server, *upstreamtest.LogBuffer, error) {
	t.Helper()
	srv := newServer(t)
	c, logs := testCatalog(t, srv, nil)
	srv.FailNext(status, 10)
	_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
	return srv, logs, err
}

func TestCredentialsRejected(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		apiCalls int
		tokens   int
	}{
		// A 401 gets one fresh token, and no more.
		{"401 twice", http.StatusUnauthorized, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, logs, err := productWhileFailing(t, tt.status)
			me := requireCode(t, err, models.CodeMarketplaceUnavailable)
			assert.Equal(t, "Amazon product data is unavailable right now; retry later", me.Message)
			assert.Len(t, apiCalls(srv), tt.apiCalls)
			assert.Equal(t, tt.tokens, srv.TokensIssued())
			assert.Contains(t, logs.String(), "level=ERROR")
			assert.Contains(t, logs.String(), "credentials rejected by the Creators API")
		})
	}
}

// AccessDeniedException and ValidationException are this deployment's
// setup (an ineligible Associates account, a wrong partner tag): not
// retried, not "retry later", and logged for an operator with Amazon's
// type and reason.
func TestAccountRefused(t *testing.T) {
	tests := []struct {
		name   string
		status int
		logged []string
	}{
		{"403 AccessDeniedException", http.StatusForbidden, []string{"AccessDeniedException", "AssociateNotEligible"}},
		{"400 ValidationException", http.StatusBadRequest, []string{"ValidationException", "FieldValidationFailed", "partnerTag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, logs, err := productWhileFailing(t, tt.status)
			me := requireCode(t, err, models.CodeLiveUnavailable)
			assert.NotContains(t, me.Message, "retry later")
			assert.False(t, errors.Is(err, models.ErrMarketplaceUnavailable))
			assert.Len(t, apiCalls(srv), 1, "not retried")
			assert.Contains(t, logs.String(), "level=ERROR")
			for _, want := range tt.logged {
				assert.Contains(t, logs.String(), want)
			}
		})
	}
}

// The token request has the shape of the credential's version: a JSON
// body for 3.x (Login with Amazon), a form with HTTP Basic for 2.x
// (Cognito). The test server refuses any other shape, as the real
// endpoints do.
func TestTokenRequestPerCredentialVersion(t *testing.T) {
	tests := []struct {
		name     string
		version  string
		tokenURL func(*creatorstest.Server) string
	}{
		{"3.x default", "", (*creatorstest.Server).TokenURL},
		{"3.1", "3.1", (*creatorstest.Server).TokenURL},
		{"2.1", "2.1", (*creatorstest.Server).CognitoTokenURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			id, secret := srv.Credentials()
			c, logs := testCatalog(t, srv, func(cfg *Config) {
				cfg.TokenURL = tt.tokenURL(srv)
				cfg.Credentials = map[RegionGroup]Credential{NA: {ClientID: id, ClientSecret: secret, PartnerTag: "memocart-20", Version: tt.version}}
			})
			_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
			require.NoError(t, err, logs.String())
			assert.Equal(t, 1, srv.TokensIssued())
		})
	}
	t.Run("a 3.x credential sent to the 2.x endpoint is refused", func(t *testing.T) {
		srv := newServer(t)
		c, logs := testCatalog(t, srv, func(cfg *Config) { cfg.TokenURL = srv.CognitoTokenURL() })
		_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
		requireCode(t, err, models.CodeMarketplaceUnavailable)
		assert.Zero(t, srv.TokensIssued())
		assert.Contains(t, logs.String(), "oauth_error=invalid_request")
	})
}

func TestTokenEndpointFailures(t *testing.T) {
	t.Run("wrong secret", func(t *testing.T) {
		srv := newServer(t)
		id, _ := srv.Credentials()
		c, logs := testCatalog(t, srv, func(cfg *Config) {
			cfg.Credentials = map[RegionGroup]Credential{NA: {ClientID: id, ClientSecret: "not-the-secret", PartnerTag: "memocart-20"}}
		})
		_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
		requireCode(t, err, models.CodeMarketplaceUnavailable)
		assert.Equal(t, 1, tokenCalls(srv), "a refused credential is not retried")
		assert.Empty(t, apiCalls(srv))
		assert.Contains(t, logs.String(), "credentials rejected by the token endpoint")
		assert.Contains(t, logs.String(), "oauth_error=invalid_client")
		assert.NotContains(t, logs.String(), "not-the-secret")
	})
	t.Run("outage", func(t *testing.T) {
		srv := newServer(t)
		c, _ := testCatalog(t, srv, nil)
		srv.FailTokenNext(http.StatusServiceUnavailable, 10)
		_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
		requireCode(t, err, models.CodeMarketplaceUnavailable)
		assert.Equal(t, maxAttempts, tokenCalls(srv))
		assert.Empty(t, apiCalls(srv))
	})
	t.Run("blip", func(t *testing.T) {
		srv := newServer(t)
		c, _ := testCatalog(t, srv, nil)
		srv.FailTokenNext(http.StatusInternalServerError, 1)
		_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
		require.NoError(t, err)
		assert.Equal(t, 2, tokenCalls(srv))
	})
}

func TestThrottledThenServed(t *testing.T) {
	srv, c, clock := clockedCatalog(t)
	c.sleep = clock.Sleep
	srv.RateLimitNext(1, 2*time.Second)

	p, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
	require.NoError(t, err)
	assert.Equal(t, "B07YCM5K55", p.ID)
	calls := apiCalls(srv)
	require.Len(t, calls, 2)
	assert.Equal(t, http.StatusTooManyRequests, calls[0].Status)
	// The wait honoured the body's retryAfterSeconds, longer than the
	// backoff alone.
	assert.Equal(t, []time.Duration{2 * time.Second}, clock.Slept())
}

func TestRetryPolicy(t *testing.T) {
	tests := []struct {
		name     string
		inject   func(*creatorstest.Server)
		ctx      func() (context.Context, context.CancelFunc)
		wantErr  bool
		apiCalls int
	}{
		{
			name:     "a 5xx blip is ridden out",
			inject:   func(s *creatorstest.Server) { s.FailNext(http.StatusServiceUnavailable, 2) },
			apiCalls: 3,
		},
		{
			name:     "a 5xx burst longer than the retries",
			inject:   func(s *creatorstest.Server) { s.FailNext(http.StatusInternalServerError, 10) },
			wantErr:  true,
			apiCalls: maxAttempts,
		},
		{
			name:     "throttled on every attempt",
			inject:   func(s *creatorstest.Server) { s.RateLimitNext(10, 0) },
			wantErr:  true,
			apiCalls: maxAttempts,
		},
		{
			name:     "a retryAfterSeconds too long to wait for",
			inject:   func(s *creatorstest.Server) { s.RateLimitNext(1, time.Minute) },
			wantErr:  true,
			apiCalls: 1,
		},
		{
			name:   "a retryAfterSeconds past the caller's deadline",
			inject: func(s *creatorstest.Server) { s.RateLimitNext(1, 3*time.Second) },
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 2*time.Second)
			},
			wantErr:  true,
			apiCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			c, _ := testCatalog(t, srv, nil)
			tt.inject(srv)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			start := time.Now()
			_, err := c.Product(ctx, amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
			if tt.wantErr {
				me := requireCode(t, err, models.CodeMarketplaceUnavailable)
				assert.Equal(t, msgUnavailable, me.Message)
			} else {
				require.NoError(t, err)
			}
			assert.Len(t, apiCalls(srv), tt.apiCalls)
			assert.Less(t, time.Since(start), time.Second, "no long wait was made")
		})
	}
}

func TestBoundedTime(t *testing.T) {
	t.Run("the caller's deadline", func(t *testing.T) {
		srv := newServer(t)
		srv.SetSlowDelay(10 * time.Second)
		c, _ := testCatalog(t, srv, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Product(ctx, amazonRef(t, "https://www.amazon.com/dp/"+creatorstest.SlowASIN))
		requireCode(t, err, models.CodeMarketplaceUnavailable)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), 3*time.Second)
		assert.Len(t, apiCalls(srv), 1)
	})
	t.Run("each request's timeout", func(t *testing.T) {
		srv := newServer(t)
		srv.SetSlowDelay(10 * time.Second)
		c, _ := testCatalog(t, srv, func(cfg *Config) { cfg.Timeout = 200 * time.Millisecond })
		// The token first, so that each attempt below is a getItems call:
		// on a loaded machine a token fetch may itself take 200 ms.
		require.Eventually(t, func() bool {
			_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
			return err == nil
		}, 10*time.Second, 10*time.Millisecond)
		before := len(apiCalls(srv))
		start := time.Now()
		_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/"+creatorstest.SlowASIN))
		requireCode(t, err, models.CodeMarketplaceUnavailable)
		assert.Less(t, time.Since(start), 3*time.Second)
		assert.Len(t, apiCalls(srv)[before:], maxAttempts, "a timed-out request is retried like an outage")
	})
	t.Run("an answer read after the request's deadline", func(t *testing.T) {
		// The transport hands back an empty 200 once the request's own
		// deadline has passed, as a server giving up on a cancelled request
		// may: a timeout to retry, not an answer.
		srv := newServer(t)
		var late atomic.Int32
		inner := srv.Client()
		c, _ := testCatalog(t, srv, func(cfg *Config) {
			cfg.Timeout = 100 * time.Millisecond
			cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.URL.Path != creatorstest.GetItemsPath {
					return inner.Transport.RoundTrip(r)
				}
				late.Add(1)
				<-r.Context().Done()
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{},
					Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
			})}
		})
		_, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
		requireCode(t, err, models.CodeMarketplaceUnavailable)
		assert.EqualValues(t, maxAttempts, late.Load())
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestLiveModeUnavailable(t *testing.T) {
	srv := newServer(t)
	id, secret := srv.Credentials()
	onlyNA := func(cfg *Config) {
		cfg.Credentials = map[RegionGroup]Credential{NA: {ClientID: id, ClientSecret: secret, PartnerTag: "memocart-20"}}
	}
	tests := []struct {
		name    string
		mutate  func(*Config)
		url     string
		message string
		logged  string
	}{
		{"a group without credentials", onlyNA, "https://www.amazon.de/dp/B07YCM5K55",
			"Live product data for amazon.de (EU) is not configured on this deployment", "region_group=EU"},
		{"another one", onlyNA, "https://www.amazon.co.jp/dp/B07YCM5K55",
			"Live product data for amazon.co.jp (FE) is not configured on this deployment", "region_group=FE"},
		{"a storefront no group serves", nil, "https://www.amazon.cn/dp/B07YCM5K55",
			"Live product data for amazon.cn is not available: Amazon's product data API does not serve that storefront", ""},
		{"no credentials at all", func(cfg *Config) { cfg.Credentials = nil }, "https://amzn.to/abcd123",
			"Live product data from Amazon is not configured on this deployment", "no Creators API credentials are configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.Requests())
			c, logs := testCatalog(t, srv, tt.mutate)
			for range 2 {
				_, err := c.Product(context.Background(), amazonRef(t, tt.url))
				me := requireCode(t, err, models.CodeLiveUnavailable)
				assert.Equal(t, tt.message, me.Message)
			}
			assert.Len(t, srv.Requests(), before, "nothing asked of Amazon")
			if tt.logged != "" {
				assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), "warned once: %s", logs)
				assert.Contains(t, logs.String(), tt.logged)
			}
		})
	}
}

func TestPacing(t *testing.T) {
	t.Run("one credential is spaced out", func(t *testing.T) {
		srv := newServer(t)
		clock := newFakeClock()
		c, _ := testCatalog(t, srv, func(cfg *Config) {
			cfg.RequestsPerSecond = 2
			cfg.Now = clock.Now
		})
		c.sleep = clock.Sleep
		// Storefronts of different groups with the same credential share
		// its pace: Amazon counts per credential.
		for _, u := range []string{"https://www.amazon.com/dp/B07YCM5K55", "https://www.amazon.de/dp/B07YCM5K55",
			"https://www.amazon.com/dp/B08N5WRWNW", "https://www.amazon.co.uk/dp/B08N5WRWNW"} {
			_, err := c.Product(context.Background(), amazonRef(t, u))
			require.NoError(t, err)
		}
		want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
		assert.Equal(t, want, clock.Slept())
		assert.Len(t, apiCalls(srv), 4)
	})
	t.Run("credentials are paced apart", func(t *testing.T) {
		srv := newServer(t, creatorstest.WithCredentials("na-id", "na-secret"), creatorstest.WithCredentials("eu-id", "eu-secret"))
		clock := newFakeClock()
		c, _ := testCatalog(t, srv, func(cfg *Config) {
			cfg.RequestsPerSecond = 1
			cfg.Now = clock.Now
			cfg.Credentials = map[RegionGroup]Credential{
				NA: {ClientID: "na-id", ClientSecret: "na-secret", PartnerTag: "memocart-20"},
				EU: {ClientID: "eu-id", ClientSecret: "eu-secret", PartnerTag: "memocart-21"},
			}
		})
		c.sleep = clock.Sleep
		for _, u := range []string{"https://www.amazon.com/dp/B07YCM5K55", "https://www.amazon.de/dp/B07YCM5K55",
			"https://www.amazon.com/dp/B08N5WRWNW", "https://www.amazon.de/dp/B08N5WRWNW"} {
			_, err := c.Product(context.Background(), amazonRef(t, u))
			require.NoError(t, err)
		}
		// The second NA call waits its second; the EU calls, on their own
		// credential, wait for nothing more.
		assert.Equal(t, []time.Duration{time.Second}, clock.Slept())
		assert.Equal(t, 2, srv.TokensIssued())
	})
	t.Run("a slot past the deadline is not waited for", func(t *testing.T) {
		srv := newServer(t)
		c, _ := testCatalog(t, srv, func(cfg *Config) { cfg.RequestsPerSecond = 0.01 })
		ref := amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55")
		_, err := c.Product(context.Background(), ref)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err = c.Product(ctx, ref)
		requireCode(t, err, models.CodeMarketplaceUnavailable)
		assert.Less(t, time.Since(start), 500*time.Millisecond)
		assert.Len(t, apiCalls(srv), 1)
	})
}

func TestConcurrentLookups(t *testing.T) {
	srv := newServer(t)
	c, _ := testCatalog(t, srv, nil)
	var refs []models.ProductRef
	for i := range 16 {
		u := fmt.Sprintf("https://www.amazon.com/dp/B0TEST%04d", i)
		if i%4 == 0 {
			u = fmt.Sprintf("https://amzn.to/conc%d", i%3)
		}
		refs = append(refs, amazonRef(t, u))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(refs))
	for _, ref := range refs {
		wg.Go(func() {
			if _, err := c.Product(context.Background(), ref); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, 1, srv.TokensIssued(), "concurrent callers share one token request")
}

func TestNewValidates(t *testing.T) {
	good := Credential{ClientID: "id", ClientSecret: "secret", PartnerTag: "tag-20"}
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{}, true},
		{"all groups", Config{Credentials: map[RegionGroup]Credential{NA: good, EU: good, FE: good}}, true},
		{"a zero credential is absent", Config{Credentials: map[RegionGroup]Credential{EU: {}}}, true},
		{"unknown group", Config{Credentials: map[RegionGroup]Credential{"CN": good}}, false},
		{"no partner tag", Config{Credentials: map[RegionGroup]Credential{NA: {ClientID: "id", ClientSecret: "s"}}}, false},
		{"no secret", Config{Credentials: map[RegionGroup]Credential{NA: {ClientID: "id", PartnerTag: "t"}}}, false},
		{"bad API URL", Config{APIURL: "creatorsapi.amazon"}, false},
		{"bad token URL", Config{TokenURL: "ftp://example.com/token"}, false},
		{"negative rate", Config{RequestsPerSecond: -1}, false},
		{"negative timeout", Config{Timeout: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			assert.Equal(t, tt.ok, err == nil, "err: %v", err)
		})
	}
}

func TestNewWiring(t *testing.T) {
	a := Credential{ClientID: "id-a", ClientSecret: "s", PartnerTag: "t"}
	b := Credential{ClientID: "id-b", ClientSecret: "s", PartnerTag: "t"}
	c, err := New(Config{Credentials: map[RegionGroup]Credential{NA: a, EU: b, FE: a}})
	require.NoError(t, err)
	assert.Same(t, c.groups[NA].limiter, c.groups[FE].limiter, "one limiter per credential")
	assert.NotSame(t, c.groups[NA].limiter, c.groups[EU].limiter)
	assert.Equal(t, "https://api.amazon.com/auth/o2/token", c.groups[NA].tokenURL)
	assert.Equal(t, "https://api.amazon.co.uk/auth/o2/token", c.groups[EU].tokenURL)
	assert.Equal(t, "https://api.amazon.co.jp/auth/o2/token", c.groups[FE].tokenURL)
	assert.Equal(t, DefaultAPIURL, c.apiURL)

	// Version 2.x credentials get their token from Cognito, in the AWS
	// region of their group.
	v2 := func(v string) Credential {
		return Credential{ClientID: "id-" + v, ClientSecret: "s", PartnerTag: "t", Version: v}
	}
	c, err = New(Config{Credentials: map[RegionGroup]Credential{NA: v2("2.1"), EU: v2("2.2"), FE: v2("2.x")}})
	require.NoError(t, err)
	assert.Equal(t, "https://creatorsapi.auth.us-east-1.amazoncognito.com/oauth2/token", c.groups[NA].tokenURL)
	assert.Equal(t, "https://creatorsapi.auth.eu-south-2.amazoncognito.com/oauth2/token", c.groups[EU].tokenURL)
	assert.Equal(t, "https://creatorsapi.auth.us-west-2.amazoncognito.com/oauth2/token", c.groups[FE].tokenURL)

	c, err = New(Config{TokenURL: "https://127.0.0.1:9/auth/o2/token", Credentials: map[RegionGroup]Credential{EU: a}})
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:9/auth/o2/token", c.groups[EU].tokenURL)

	for _, bad := range []string{"1.1", "3.2", "4", "v3"} {
		_, err = New(Config{Credentials: map[RegionGroup]Credential{NA: {ClientID: "i", ClientSecret: "s", PartnerTag: "t", Version: bad}}})
		assert.Error(t, err, "version %q for NA", bad)
	}
}

func TestNotAnAmazonRef(t *testing.T) {
	c, err := New(Config{Credentials: map[RegionGroup]Credential{NA: {ClientID: "i", ClientSecret: "s", PartnerTag: "t"}}})
	require.NoError(t, err)
	for _, ref := range []models.ProductRef{
		{Marketplace: models.MarketplaceEbay, ID: "123456789012", Host: "www.ebay.com"},
		{Marketplace: models.MarketplaceAmazon, ID: "not-an-asin", Host: "www.amazon.com"},
		{Marketplace: models.MarketplaceAmazon, ID: "B07YCM5K55", Host: "www.amazon.evil.example"},
		{Marketplace: models.MarketplaceAmazon, ShortCode: "abcd", Host: "bit.ly", URL: "https://bit.ly/abcd"},
	} {
		_, err := c.Product(context.Background(), ref)
		requireCode(t, err, models.CodeInvalidURL)
		assert.False(t, errors.Is(err, models.ErrMarketplaceUnavailable))
	}
}
