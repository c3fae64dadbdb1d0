package browsetest_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/ebay/browsetest"
)

func newServer(t *testing.T, opts ...browsetest.Option) *browsetest.Server {
	t.Helper()
	s := browsetest.New(opts...)
	t.Cleanup(s.Close)
	return s
}

type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	TokenType   string `json:"token_type"`
	Error       string `json:"error"`
}

func requestToken(t *testing.T, s *browsetest.Server, id, secret string, form url.Values) (int, tokenAnswer) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/identity/v1/oauth2/token",
		strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var ans tokenAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ans))
	return resp.StatusCode, ans
}

var grant = url.Values{"grant_type": {"client_credentials"}, "scope": {browsetest.Scope}}

func token(t *testing.T, s *browsetest.Server) string {
	t.Helper()
	id, secret := s.Credentials()
	status, ans := requestToken(t, s, id, secret, grant)
	require.Equal(t, http.StatusOK, status)
	return ans.AccessToken
}

type errorsBody struct {
	Errors []struct {
		ErrorID    int    `json:"errorId"`
		Domain     string `json:"domain"`
		Category   string `json:"category"`
		Message    string `json:"message"`
		Parameters []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"parameters"`
	} `json:"errors"`
}

type answer struct {
	status int
	header http.Header
	item   map[string]any
	errs   errorsBody
}

// getItem calls getItemByLegacyId; query is the raw query string.
func getItem(t *testing.T, s *browsetest.Server, tok, marketplace, query string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		s.URL+"/buy/browse/v1/item/get_item_by_legacy_id?"+query, nil)
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if marketplace != "" {
		req.Header.Set("X-EBAY-C-MARKETPLACE-ID", marketplace)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	a := answer{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, &a.item))
	} else {
		require.NoError(t, json.Unmarshal(body, &a.errs))
		require.NotEmpty(t, a.errs.Errors, "every failure carries eBay's errors body")
	}
	return a
}

func (a answer) errorID() int {
	if len(a.errs.Errors) == 0 {
		return 0
	}
	return a.errs.Errors[0].ErrorID
}

func price(a answer) map[string]any {
	p, _ := a.item["price"].(map[string]any)
	return p
}

func TestTokenEndpoint(t *testing.T) {
	s := newServer(t)
	id, secret := s.Credentials()
	tests := []struct {
		name       string
		id, secret string
		form       url.Values
		status     int
		oauthError string
	}{
		{"granted", id, secret, grant, http.StatusOK, ""},
		{"wrong secret", id, "nope", grant, http.StatusUnauthorized, "invalid_client"},
		{"unknown client", "someone-else", secret, grant, http.StatusUnauthorized, "invalid_client"},
		{"wrong grant", id, secret, url.Values{"grant_type": {"authorization_code"}, "scope": {browsetest.Scope}},
			http.StatusBadRequest, "unsupported_grant_type"},
		{"no scope", id, secret, url.Values{"grant_type": {"client_credentials"}}, http.StatusBadRequest, "invalid_scope"},
		{"seller scope", id, secret, url.Values{"grant_type": {"client_credentials"},
			"scope": {browsetest.Scope + " https://api.ebay.com/oauth/api_scope/sell.inventory"}},
			http.StatusBadRequest, "invalid_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, ans := requestToken(t, s, tt.id, tt.secret, tt.form)
			assert.Equal(t, tt.status, status)
			assert.Equal(t, tt.oauthError, ans.Error)
			if tt.status == http.StatusOK {
				assert.True(t, strings.HasPrefix(ans.AccessToken, "v^1.1#"))
				assert.Equal(t, 7200, ans.ExpiresIn)
				assert.Equal(t, "Application Access Token", ans.TokenType)
			}
		})
	}
	assert.Equal(t, 1, s.TokensIssued())
}

// The grant is a form body with the credentials as HTTP Basic, as eBay
// documents it; any other shape is refused before a token is issued.
func TestTokenRequestShape(t *testing.T) {
	s := newServer(t)
	id, secret := s.Credentials()
	r, _ := http.NewRequest(http.MethodPost, "/", nil)
	r.SetBasicAuth(id, secret)
	basic := r.Header.Get("Authorization")
	const form = "application/x-www-form-urlencoded"
	withCreds := url.Values{"grant_type": {"client_credentials"}, "scope": {browsetest.Scope}, "client_id": {id}, "client_secret": {secret}}
	tests := []struct {
		name          string
		contentType   string
		authorization string
		path          string
		body          string
		status        int
		oauthError    string
	}{
		{"a form with HTTP Basic", form, basic, "", grant.Encode(), http.StatusOK, ""},
		{"a form with a charset", form + "; charset=UTF-8", basic, "", grant.Encode(), http.StatusOK, ""},
		{"a JSON body", "application/json", basic, "",
			`{"grant_type":"client_credentials","scope":"` + browsetest.Scope + `"}`, http.StatusBadRequest, "invalid_request"},
		{"no Content-Type", "", basic, "", grant.Encode(), http.StatusBadRequest, "invalid_request"},
		{"the credentials in the form, not HTTP Basic", form, "", "", withCreds.Encode(), http.StatusUnauthorized, "invalid_client"},
		{"a bearer token instead of HTTP Basic", form, "Bearer " + secret, "", grant.Encode(), http.StatusUnauthorized, "invalid_client"},
		{"the grant in the query string", form, basic, "?" + grant.Encode(), "", http.StatusBadRequest, "unsupported_grant_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/identity/v1/oauth2/token"+tt.path,
				strings.NewReader(tt.body))
			require.NoError(t, err)
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.authorization != "" {
				req.Header.Set("Authorization", tt.authorization)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var ans tokenAnswer
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&ans))
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, tt.oauthError, ans.Error)
		})
	}
	assert.Equal(t, 2, s.TokensIssued())
}

func TestWithCredentials(t *testing.T) {
	s := newServer(t, browsetest.WithCredentials("my-app", "my-cert"))
	status, _ := requestToken(t, s, browsetest.DefaultClientID, browsetest.DefaultClientSecret, grant)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = requestToken(t, s, "my-app", "my-cert", grant)
	assert.Equal(t, http.StatusOK, status)
}

func TestItemRequiresTokenAndMarketplace(t *testing.T) {
	s := newServer(t)
	tok := token(t, s)

	a := getItem(t, s, "", "EBAY_US", "legacy_item_id=123456789012")
	assert.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, 1001, a.errorID())
	assert.Equal(t, "OAuth", a.errs.Errors[0].Domain)

	a = getItem(t, s, "made-up", "EBAY_US", "legacy_item_id=123456789012")
	assert.Equal(t, http.StatusUnauthorized, a.status)

	// A live token, but not as "Bearer <token>".
	id, secret := s.Credentials()
	basic, _ := http.NewRequest(http.MethodGet, "/", nil)
	basic.SetBasicAuth(id, secret)
	for name, auth := range map[string]string{
		"the token without its scheme": tok,
		"the token as Basic":           "Basic " + tok,
		"the keyset as HTTP Basic":     basic.Header.Get("Authorization"),
	} {
		a = getItem(t, s, "", "EBAY_US", "legacy_item_id=123456789012", "Authorization", auth)
		assert.Equal(t, http.StatusUnauthorized, a.status, name)
		assert.Equal(t, 1001, a.errorID(), name)
	}

	for _, mp := range []string{"", "EBAY_XX", "ebay_us"} {
		a = getItem(t, s, tok, mp, "legacy_item_id=123456789012")
		assert.Equal(t, http.StatusBadRequest, a.status, "marketplace %q", mp)
		assert.Equal(t, 11011, a.errorID())
	}

	s.ExpireTokens()
	a = getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789012")
	assert.Equal(t, http.StatusUnauthorized, a.status)
}

func TestDefaultItem(t *testing.T) {
	s := newServer(t)
	tok := token(t, s)

	us := getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789012")
	require.Equal(t, http.StatusOK, us.status)
	assert.Equal(t, "v1|123456789012|0", us.item["itemId"])
	assert.Equal(t, "123456789012", us.item["legacyItemId"])
	assert.Contains(t, us.item["title"], "test server")
	assert.Equal(t, []any{"FIXED_PRICE"}, us.item["buyingOptions"])
	assert.Equal(t, "USD", price(us)["currency"])
	assert.Regexp(t, `^\d+\.\d\d$`, price(us)["value"])
	assert.NotContains(t, us.item, "itemEndDate")
	assert.Equal(t, "https://www.ebay.com/itm/123456789012", us.item["itemWebUrl"])
	avs := us.item["estimatedAvailabilities"].([]any)
	require.Len(t, avs, 1)
	assert.Equal(t, "IN_STOCK", avs[0].(map[string]any)["estimatedAvailabilityStatus"])

	again := getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789012")
	assert.Equal(t, price(us)["value"], price(again)["value"], "prices are stable")
	other := getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789013")
	assert.NotEqual(t, price(us)["value"], price(other)["value"], "prices vary by item")

	for mp, currency := range map[string]string{"EBAY_GB": "GBP", "EBAY_DE": "EUR", "EBAY_AU": "AUD"} {
		a := getItem(t, s, tok, mp, "legacy_item_id=123456789012")
		assert.Equal(t, currency, price(a)["currency"], mp)
		assert.Equal(t, price(us)["value"], price(a)["value"], mp)
	}

	for _, bad := range []string{"12345678", "1234567890123456", "12345678901a"} {
		a := getItem(t, s, tok, "EBAY_US", "legacy_item_id="+bad)
		assert.Equal(t, http.StatusNotFound, a.status, bad)
		assert.Equal(t, 11003, a.errorID(), bad)
	}
	assert.Equal(t, http.StatusBadRequest, getItem(t, s, tok, "EBAY_US", "").status)
}

func TestReservedItems(t *testing.T) {
	s := newServer(t)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s.SetNow(now)
	tok := token(t, s)
	get := func(query string) answer { return getItem(t, s, tok, "EBAY_US", query) }
	endDate := func(a answer) time.Time {
		end, err := time.Parse(time.RFC3339, a.item["itemEndDate"].(string))
		require.NoError(t, err)
		return end
	}

	t.Run("auction", func(t *testing.T) {
		a := get("legacy_item_id=" + browsetest.AuctionItem)
		require.Equal(t, http.StatusOK, a.status)
		assert.NotContains(t, a.item, "price")
		assert.Equal(t, []any{"AUCTION"}, a.item["buyingOptions"])
		assert.Contains(t, a.item, "currentBidPrice")
		assert.EqualValues(t, 7, a.item["bidCount"])
		assert.True(t, endDate(a).After(now))
	})
	t.Run("auction with Buy It Now", func(t *testing.T) {
		a := get("legacy_item_id=" + browsetest.AuctionBuyItNowItem)
		assert.Equal(t, []any{"AUCTION", "FIXED_PRICE"}, a.item["buyingOptions"])
		assert.NotEmpty(t, price(a)["value"])
		assert.True(t, endDate(a).After(now))
	})
	t.Run("ended", func(t *testing.T) {
		a := get("legacy_item_id=" + browsetest.EndedItem)
		require.Equal(t, http.StatusOK, a.status)
		assert.True(t, endDate(a).Before(now))
	})
	t.Run("out of stock", func(t *testing.T) {
		a := get("legacy_item_id=" + browsetest.OutOfStockItem)
		av := a.item["estimatedAvailabilities"].([]any)[0].(map[string]any)
		assert.Equal(t, "OUT_OF_STOCK", av["estimatedAvailabilityStatus"])
		assert.EqualValues(t, 0, av["estimatedAvailableQuantity"])
	})
	t.Run("limited stock", func(t *testing.T) {
		a := get("legacy_item_id=" + browsetest.LimitedStockItem)
		av := a.item["estimatedAvailabilities"].([]any)[0].(map[string]any)
		assert.Equal(t, "LIMITED_STOCK", av["estimatedAvailabilityStatus"])
		assert.EqualValues(t, 2, av["estimatedAvailableQuantity"])
	})
	t.Run("not found", func(t *testing.T) {
		a := get("legacy_item_id=" + browsetest.NotFoundItem)
		assert.Equal(t, http.StatusNotFound, a.status)
		assert.Equal(t, 11003, a.errorID())
	})
	t.Run("variations", func(t *testing.T) {
		a := get("legacy_item_id=" + browsetest.VariationsItem)
		assert.Equal(t, http.StatusBadRequest, a.status)
		require.Equal(t, 11006, a.errorID())
		require.Len(t, a.errs.Errors[0].Parameters, 1)
		assert.Equal(t, "itemGroupHref", a.errs.Errors[0].Parameters[0].Name)
		assert.Contains(t, a.errs.Errors[0].Parameters[0].Value, "item_group_id="+browsetest.VariationsItem)

		small := get("legacy_item_id=" + browsetest.VariationsItem + "&legacy_variation_id=" + browsetest.VariationSmall)
		large := get("legacy_item_id=" + browsetest.VariationsItem + "&legacy_variation_id=" + browsetest.VariationLarge)
		require.Equal(t, http.StatusOK, large.status)
		assert.Equal(t, "v1|"+browsetest.VariationsItem+"|"+browsetest.VariationLarge, large.item["itemId"])
		assert.Contains(t, large.item["title"], "Size: Large")
		assert.NotEqual(t, price(small)["value"], price(large)["value"])
		assert.Contains(t, large.item, "primaryItemGroup")

		unknown := get("legacy_item_id=" + browsetest.VariationsItem + "&legacy_variation_id=500000000999")
		assert.Equal(t, http.StatusNotFound, unknown.status)
	})
	t.Run("slow", func(t *testing.T) {
		s.SetSlowDelay(200 * time.Millisecond)
		start := time.Now()
		a := get("legacy_item_id=" + browsetest.SlowItem)
		assert.Equal(t, http.StatusOK, a.status)
		assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	})
}

func TestSetItem(t *testing.T) {
	s := newServer(t)
	tok := token(t, s)
	s.SetItem("222233334444", browsetest.Item{
		Title: "Custom", Price: "19.99", Currency: "USD", Seller: "someone",
		BuyingOptions: []string{"FIXED_PRICE", "BEST_OFFER"},
	})
	s.SetItem(browsetest.AuctionItem, browsetest.Item{NotFound: true})
	s.SetItem("222233335555", browsetest.Item{Price: "5.00", Availability: "OUT_OF_STOCK"})

	a := getItem(t, s, tok, "EBAY_GB", "legacy_item_id=222233334444")
	assert.Equal(t, "Custom", a.item["title"])
	assert.Equal(t, map[string]any{"value": "19.99", "currency": "USD"}, price(a))
	assert.Equal(t, "someone", a.item["seller"].(map[string]any)["username"])
	av := a.item["estimatedAvailabilities"].([]any)[0].(map[string]any)
	assert.Equal(t, "IN_STOCK", av["estimatedAvailabilityStatus"])
	assert.EqualValues(t, 10, av["estimatedAvailableQuantity"])

	assert.Equal(t, http.StatusNotFound, getItem(t, s, tok, "EBAY_US", "legacy_item_id="+browsetest.AuctionItem).status)

	out := getItem(t, s, tok, "EBAY_US", "legacy_item_id=222233335555")
	av = out.item["estimatedAvailabilities"].([]any)[0].(map[string]any)
	assert.Equal(t, "OUT_OF_STOCK", av["estimatedAvailabilityStatus"])
	assert.EqualValues(t, 0, av["estimatedAvailableQuantity"])
}

func TestClock(t *testing.T) {
	s := newServer(t)
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s.SetNow(start)
	tok := token(t, s)
	s.SetItem("222233334444", browsetest.Item{Price: "1.00", EndDate: start.Add(time.Hour)})

	s.Advance(30 * time.Minute)
	assert.Equal(t, start.Add(30*time.Minute), s.Now())
	a := getItem(t, s, tok, "EBAY_US", "legacy_item_id="+browsetest.EndedItem)
	end, err := time.Parse(time.RFC3339, a.item["itemEndDate"].(string))
	require.NoError(t, err)
	assert.True(t, end.Before(s.Now()))
	a = getItem(t, s, tok, "EBAY_US", "legacy_item_id=222233334444")
	assert.Equal(t, "2026-06-01T13:00:00.000Z", a.item["itemEndDate"])

	// Tokens live 7200 seconds of the server's clock.
	s.Advance(2 * time.Hour)
	assert.Equal(t, http.StatusUnauthorized, getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789012").status)

	// Without SetNow the clock is real time, shifted by Advance.
	real := newServer(t)
	before := time.Now()
	real.Advance(time.Hour)
	assert.WithinDuration(t, before.Add(time.Hour), real.Now(), time.Second)
}

func TestFailureInjection(t *testing.T) {
	s := newServer(t)
	tok := token(t, s)
	get := func() answer { return getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789012") }

	s.FailNext(http.StatusServiceUnavailable, 2)
	assert.Equal(t, 11000, get().errorID())
	assert.Equal(t, http.StatusServiceUnavailable, get().status)
	assert.Equal(t, http.StatusOK, get().status)

	s.RateLimitNext(1, 1500*time.Millisecond)
	a := get()
	assert.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Equal(t, 2001, a.errorID())
	assert.Equal(t, "ACCESS", a.errs.Errors[0].Domain)
	assert.Equal(t, "2", a.header.Get("Retry-After"))
	assert.Equal(t, http.StatusOK, get().status)

	s.RateLimitNext(1, 0)
	assert.Empty(t, get().header.Get("Retry-After"))

	s.SetLatency(100 * time.Millisecond)
	start := time.Now()
	get()
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	s.SetLatency(0)

	statuses := func() []int {
		var out []int
		for _, r := range s.Requests() {
			out = append(out, r.Status)
		}
		return out
	}
	assert.Equal(t, []int{503, 503, 200, 429, 200, 429, 200}, statuses())
}

func TestDailyQuota(t *testing.T) {
	s := newServer(t)
	s.SetNow(time.Date(2026, 6, 1, 23, 0, 0, 0, time.UTC))
	tok := token(t, s)
	get := func() answer { return getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789012") }

	s.SetDailyQuota(2)
	assert.Equal(t, http.StatusOK, get().status)
	assert.Equal(t, http.StatusOK, get().status)
	a := get()
	assert.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Equal(t, 2001, a.errorID())

	s.Advance(90 * time.Minute) // past midnight UTC, token still valid
	assert.Equal(t, http.StatusOK, get().status)

	s.SetDailyQuota(0)
	for range 3 {
		assert.Equal(t, http.StatusOK, get().status)
	}
}

func TestRequestsRecordHeaders(t *testing.T) {
	s := newServer(t)
	tok := token(t, s)
	getItem(t, s, tok, "EBAY_DE", "legacy_item_id=123456789012&legacy_variation_id=987654321",
		"X-EBAY-C-ENDUSERCTX", "contextualLocation=country%3DAT%2Czip%3D1010")
	getItem(t, s, tok, "EBAY_GB", "legacy_item_id=123456789012")

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, browsetest.Request{
		Path:              "/buy/browse/v1/item/get_item_by_legacy_id?legacy_item_id=123456789012&legacy_variation_id=987654321",
		MarketplaceID:     "EBAY_DE",
		EndUserContext:    "contextualLocation=country%3DAT%2Czip%3D1010",
		ShipTo:            "AT",
		LegacyItemID:      "123456789012",
		LegacyVariationID: "987654321",
		Status:            http.StatusOK,
	}, reqs[0])
	assert.Equal(t, "EBAY_GB", reqs[1].MarketplaceID)
	assert.Empty(t, reqs[1].ShipTo)
}

func TestWithListenerAndImages(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := newServer(t, browsetest.WithListener(l))
	assert.Equal(t, "http://"+l.Addr().String(), s.URL)
	tok := token(t, s)
	a := getItem(t, s, tok, "EBAY_US", "legacy_item_id=123456789012")
	require.Equal(t, http.StatusOK, a.status)

	imageURL := a.item["image"].(map[string]any)["imageUrl"].(string)
	resp, err := http.Get(imageURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
}
