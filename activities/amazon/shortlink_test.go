package amazon

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/amazon/creatorstest"
	"github.com/memocart/memocart/models"
)

// hostRequests returns the method and path of the requests srv received
// on host.
func hostRequests(srv *creatorstest.Server, host string) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Host == host {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

func TestShortLinksResolve(t *testing.T) {
	tests := []struct {
		name        string
		link        string
		asin        string
		marketplace string
		// The requests the follower makes, by host; product pages are
		// never fetched.
		requests map[string][]string
	}{
		{
			name: "amzn.to", link: "https://amzn.to/3xYzAbC", asin: creatorstest.ShortLinkASIN("3xYzAbC"),
			marketplace: "www.amazon.com",
			requests:    map[string][]string{"amzn.to": {"HEAD /3xYzAbC"}},
		},
		{
			name: "a.co", link: "https://a.co/d/8kLmNoP", asin: creatorstest.ShortLinkASIN("8kLmNoP"),
			marketplace: "www.amazon.com",
			requests:    map[string][]string{"a.co": {"HEAD /d/8kLmNoP"}},
		},
		{
			name: "amzn.eu leads to amazon.de", link: "https://amzn.eu/d/eUr0Pe1", asin: creatorstest.ShortLinkASIN("eUr0Pe1"),
			marketplace: "www.amazon.de",
			requests:    map[string][]string{"amzn.eu": {"HEAD /d/eUr0Pe1"}},
		},
		{
			name: "amzn.asia leads to amazon.co.jp", link: "https://amzn.asia/d/jP00001", asin: creatorstest.ShortLinkASIN("jP00001"),
			marketplace: "www.amazon.co.jp",
			requests:    map[string][]string{"amzn.asia": {"HEAD /d/jP00001"}},
		},
		{
			name: "two hops through another short-link service", link: "https://a.co/d/" + creatorstest.CodeTwoHops,
			asin: creatorstest.ShortLinkASIN(creatorstest.CodeTwoHops), marketplace: "www.amazon.com",
			requests: map[string][]string{
				"a.co":    {"HEAD /d/" + creatorstest.CodeTwoHops},
				"amzn.to": {"HEAD /" + creatorstest.CodeTwoHops},
			},
		},
		{
			name: "HEAD not allowed: GET", link: "https://amzn.to/" + creatorstest.CodeNoHead,
			asin: creatorstest.ShortLinkASIN(creatorstest.CodeNoHead), marketplace: "www.amazon.com",
			requests: map[string][]string{"amzn.to": {"HEAD /" + creatorstest.CodeNoHead, "GET /" + creatorstest.CodeNoHead}},
		},
		{
			name: "a relative Location on the storefront", link: "https://amzn.to/" + creatorstest.CodeRelative,
			asin: creatorstest.ShortLinkASIN(creatorstest.CodeRelative), marketplace: "www.amazon.com",
			requests: map[string][]string{
				"amzn.to":        {"HEAD /" + creatorstest.CodeRelative},
				"www.amazon.com": {"HEAD /exec/obidos/ASIN/" + creatorstest.ShortLinkASIN(creatorstest.CodeRelative)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			c, _ := testCatalog(t, srv, nil)
			p, err := c.Product(context.Background(), amazonRef(t, tt.link))
			require.NoError(t, err)
			assert.Equal(t, tt.asin, p.ID)
			assert.Equal(t, "https://"+tt.marketplace+"/dp/"+tt.asin, p.ProductURL)
			calls := apiCalls(srv)
			require.Len(t, calls, 1)
			assert.Equal(t, tt.marketplace, calls[0].Marketplace)
			assert.Equal(t, []string{tt.asin}, calls[0].ItemIDs)
			for _, host := range []string{"amzn.to", "a.co", "amzn.eu", "amzn.asia", "www.amazon.com", "www.amazon.de", "www.amazon.co.jp"} {
				assert.Equal(t, tt.requests[host], hostRequests(srv, host), host)
			}
		})
	}
}

func TestShortLinksRefused(t *testing.T) {
	tests := []struct {
		name    string
		link    string
		code    models.Code
		message string
		// hosts that must never have been contacted
		forbidden []string
		// requests made to the link's host
		hops int
	}{
		{
			name: "a redirect off Amazon", link: "https://amzn.to/" + creatorstest.CodeEvil,
			code: models.CodeInvalidURL, message: "the short link does not lead to an Amazon product page",
			forbidden: []string{creatorstest.EvilHost}, hops: 1,
		},
		{
			name: "a redirect to an IP address", link: "https://a.co/d/" + creatorstest.CodeIPLiteral,
			code: models.CodeInvalidURL, message: "the short link does not lead to an Amazon product page",
			forbidden: []string{creatorstest.IPLiteralHost}, hops: 1,
		},
		{
			name: "a redirect loop", link: "https://amzn.to/" + creatorstest.CodeLoop,
			code: models.CodeInvalidURL, message: "the short link redirects too many times", hops: maxHops,
		},
		{
			name: "a dead link", link: "https://amzn.eu/d/" + creatorstest.CodeNotFound,
			code: models.CodeInvalidURL, message: "the short link does not resolve", hops: 1,
		},
		{
			name: "the short-link service is down", link: "https://amzn.to/" + creatorstest.CodeDown,
			code: models.CodeMarketplaceUnavailable, message: msgUnavailable, hops: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			c, _ := testCatalog(t, srv, nil)
			ref := amazonRef(t, tt.link)
			_, err := c.Product(context.Background(), ref)
			me := requireCode(t, err, tt.code)
			if tt.code == models.CodeInvalidURL {
				assert.Equal(t, models.DefaultMessage(models.CodeInvalidURL)+": "+tt.message, me.Message)
			} else {
				assert.Equal(t, tt.message, me.Message)
			}
			assert.Len(t, hostRequests(srv, ref.Host), tt.hops)
			for _, host := range tt.forbidden {
				assert.Zero(t, srv.Dials()[host], "dialled %s", host)
				assert.Empty(t, hostRequests(srv, host), "asked %s", host)
			}
			assert.Empty(t, apiCalls(srv))
			assert.Zero(t, c.short.len(), "failures are not cached")
		})
	}
}

func TestShortLinkCache(t *testing.T) {
	srv, c, clock := clockedCatalog(t)
	ref := amazonRef(t, "https://amzn.to/cAcHe01")

	first, err := c.Product(context.Background(), ref)
	require.NoError(t, err)
	second, err := c.Product(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, first, second)
	assert.Len(t, hostRequests(srv, "amzn.to"), 1, "the second lookup resolved from the cache")
	assert.Len(t, apiCalls(srv), 2, "products themselves are not cached here")

	// The same code on another host is another link.
	_, err = c.Product(context.Background(), amazonRef(t, "https://a.co/d/cAcHe01"))
	require.NoError(t, err)
	assert.Len(t, hostRequests(srv, "a.co"), 1)

	clock.Advance(shortCacheTTL)
	_, err = c.Product(context.Background(), ref)
	require.NoError(t, err)
	assert.Len(t, hostRequests(srv, "amzn.to"), 2, "resolved again once expired")
}

func TestShortLinkCacheIsBounded(t *testing.T) {
	clock := newFakeClock()
	s := newShortLinks(http.DefaultClient, hopTimeout, clock.Now, slog.New(slog.DiscardHandler))
	for i := range shortCacheSize + 50 {
		s.store(string(rune(i)), models.ProductRef{ID: "B07YCM5K55"})
	}
	assert.Equal(t, shortCacheSize, s.len())
	_, ok := s.lookup(string(rune(shortCacheSize + 49)))
	assert.True(t, ok, "the newest entry is kept")
}

func TestShortLinkOnUnconfiguredStorefront(t *testing.T) {
	srv := newServer(t)
	id, secret := srv.Credentials()
	c, _ := testCatalog(t, srv, func(cfg *Config) {
		cfg.Credentials = map[RegionGroup]Credential{NA: {ClientID: id, ClientSecret: secret, PartnerTag: "memocart-20"}}
	})
	_, err := c.Product(context.Background(), amazonRef(t, "https://amzn.eu/d/eUr0Pe1"))
	me := requireCode(t, err, models.CodeLiveUnavailable)
	assert.Equal(t, "Live product data for amazon.de (EU) is not configured on this deployment", me.Message)
}

func TestShortLinkHopTimeout(t *testing.T) {
	srv := newServer(t)
	c, _ := testCatalog(t, srv, func(cfg *Config) { cfg.Timeout = 100 * time.Millisecond })
	// A short-link service that never answers.
	c.short.client.Transport = hangingTransport{}
	start := time.Now()
	_, err := c.Product(context.Background(), amazonRef(t, "https://amzn.to/hAnG001"))
	requireCode(t, err, models.CodeMarketplaceUnavailable)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// hangingTransport answers nothing until the request is given up.
type hangingTransport struct{}

func (hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

func TestFirstHopIsChecked(t *testing.T) {
	srv := newServer(t)
	c, _ := testCatalog(t, srv, nil)
	// Refs ParseProductURL would never make, whose URL is not the short
	// link their host says.
	for _, raw := range []string{"https://evil.example/abcd", "https://amzn.to:8443/abcd", "https://user@amzn.to/abcd", "ftp://amzn.to/abcd"} {
		ref := models.ProductRef{Marketplace: models.MarketplaceAmazon, ShortCode: "abcd", Host: "amzn.to", URL: raw}
		_, err := c.Product(context.Background(), ref)
		requireCode(t, err, models.CodeInvalidURL)
	}
	assert.Empty(t, srv.Requests())
	assert.Empty(t, srv.Dials())
}

func TestAllowedHop(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://amzn.to/abc", true},
		{"https://a.co/d/abc", true},
		{"https://amzn.eu/d/abc", true},
		{"https://amzn.asia/d/abc", true},
		{"https://www.amazon.com/dp/B07YCM5K55?tag=x", true},
		{"https://amazon.de/dp/B07YCM5K55", true},
		{"https://WWW.AMAZON.CO.UK/dp/B07YCM5K55", true},
		{"http://www.amazon.com/dp/B07YCM5K55", true},
		{"https://www.amazon.com:443/dp/B07YCM5K55", true},
		{"http://www.amazon.com:80/dp/B07YCM5K55", true},
		{"https://www.amazon.com:8443/dp/B07YCM5K55", false},
		{"http://www.amazon.com:443/dp/B07YCM5K55", false},
		{"https://user:pass@www.amazon.com/dp/B07YCM5K55", false},
		{"https://www.amazon.com@evil.example/dp/B07YCM5K55", false},
		{"https://evil.example/dp/B07YCM5K55", false},
		{"https://www.amazon.com.evil.example/dp/B07YCM5K55", false},
		{"https://notamazon.com/dp/B07YCM5K55", false},
		{"https://smile.amazon.com/dp/B07YCM5K55", false},
		{"https://bit.ly/abc", false},
		{"https://169.254.169.254/latest/meta-data/", false},
		{"https://127.0.0.1/dp/B07YCM5K55", false},
		{"https://[::1]/dp/B07YCM5K55", false},
		{"ftp://www.amazon.com/dp/B07YCM5K55", false},
		{"javascript:alert(1)", false},
		{"//www.amazon.com/dp/B07YCM5K55", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			require.NoError(t, err)
			assert.Equal(t, tt.ok, allowedHop(u))
		})
	}
}
