package creatorstest

import (
	"bytes"
	"context"
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
)

func start(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s := New(opts...)
	t.Cleanup(s.Close)
	return s
}

// noRedirects is s's client, seeing redirects instead of following them.
func noRedirects(s *Server) *http.Client {
	c := s.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func token(t *testing.T, s *Server) string {
	t.Helper()
	id, secret := s.Credentials()
	status, body := tokenRequest(t, s, id, secret, url.Values{"grant_type": {"client_credentials"}, "scope": {Scope}})
	require.Equal(t, http.StatusOK, status, string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	require.NoError(t, json.Unmarshal(body, &tok))
	require.NotEmpty(t, tok.AccessToken)
	assert.Equal(t, "bearer", tok.TokenType)
	assert.Equal(t, 3600, tok.ExpiresIn)
	return tok.AccessToken
}

func tokenRequest(t *testing.T, s *Server, id, secret string, form url.Values) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.TokenURL(), strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(id, secret)
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func getItems(t *testing.T, s *Server, tok, marketplace string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, s.URL+GetItemsPath, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("x-marketplace", marketplace)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

var allResources = []string{"itemInfo.title", "images.primary.large", "offersV2.listings.price",
	"offersV2.listings.availability", "offersV2.listings.condition", "offersV2.listings.isBuyBoxWinner",
	"offersV2.listings.merchantInfo"}

func body(ids ...string) map[string]any {
	return map[string]any{"itemIds": ids, "itemIdType": "ASIN", "partnerTag": "memocart-20", "resources": allResources}
}

func TestTokenEndpoint(t *testing.T) {
	s := start(t)
	id, secret := s.Credentials()
	good := url.Values{"grant_type": {"client_credentials"}, "scope": {Scope}}
	tests := []struct {
		name       string
		id, secret string
		form       url.Values
		status     int
		oauthError string
	}{
		{"granted", id, secret, good, 200, ""},
		{"wrong secret", id, "nope", good, 401, "invalid_client"},
		{"no Basic credentials", "", "", url.Values{"grant_type": {"client_credentials"}, "scope": {Scope},
			"client_id": {id}, "client_secret": {secret}}, 401, "invalid_client"},
		{"wrong grant", id, secret, url.Values{"grant_type": {"password"}, "scope": {Scope}}, 400, "unsupported_grant_type"},
		{"wrong scope", id, secret, url.Values{"grant_type": {"client_credentials"}, "scope": {"creatorsapi/default"}}, 400, "invalid_scope"},
		{"no scope", id, secret, url.Values{"grant_type": {"client_credentials"}}, 400, "invalid_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := tokenRequest(t, s, tt.id, tt.secret, tt.form)
			assert.Equal(t, tt.status, status)
			var e struct {
				Error string `json:"error"`
			}
			require.NoError(t, json.Unmarshal(b, &e))
			assert.Equal(t, tt.oauthError, e.Error)
		})
	}
	assert.Equal(t, 1, s.TokensIssued())

	s.FailTokenNext(http.StatusServiceUnavailable, 1)
	status, _ := tokenRequest(t, s, id, secret, good)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	status, _ = tokenRequest(t, s, id, secret, good)
	assert.Equal(t, http.StatusOK, status)
}

func TestSeveralCredentials(t *testing.T) {
	s := start(t, WithCredentials("a", "sa"), WithCredentials("b", "sb"))
	good := url.Values{"grant_type": {"client_credentials"}, "scope": {Scope}}
	for _, c := range [][2]string{{"a", "sa"}, {"b", "sb"}} {
		status, _ := tokenRequest(t, s, c[0], c[1], good)
		assert.Equal(t, http.StatusOK, status)
	}
	status, _ := tokenRequest(t, s, "a", "sb", good)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = tokenRequest(t, s, DefaultClientID, DefaultClientSecret, good)
	assert.Equal(t, http.StatusUnauthorized, status, "the default is replaced")
}

func TestGetItemsValidation(t *testing.T) {
	s := start(t)
	tok := token(t, s)
	tests := []struct {
		name        string
		tok         string
		marketplace string
		body        any
		status      int
		code        string
	}{
		{"no token", "", "www.amazon.com", body("B07YCM5K55"), 401, "Unauthorized"},
		{"unknown token", "forged", "www.amazon.com", body("B07YCM5K55"), 401, "Unauthorized"},
		{"no marketplace", tok, "", body("B07YCM5K55"), 400, "InvalidParameterValue"},
		{"marketplace without www", tok, "amazon.com", body("B07YCM5K55"), 400, "InvalidParameterValue"},
		{"marketplace the API does not serve", tok, "www.amazon.cn", body("B07YCM5K55"), 400, "InvalidParameterValue"},
		{"no ids", tok, "www.amazon.com", body(), 400, "MissingParameter"},
		{"eleven ids", tok, "www.amazon.com", body("B000000001", "B000000002", "B000000003", "B000000004", "B000000005",
			"B000000006", "B000000007", "B000000008", "B000000009", "B000000010", "B000000011"), 400, "InvalidParameterValue"},
		{"wrong id type", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"}, "itemIdType": "SKU",
			"partnerTag": "t-20"}, 400, "InvalidParameterValue"},
		{"no partner tag", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"}, "itemIdType": "ASIN"},
			400, "MissingParameter"},
		{"an unknown resource", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"}, "itemIdType": "ASIN",
			"partnerTag": "t-20", "resources": []string{"OffersV2.Listings.Price"}}, 400, "InvalidParameterValue"},
		{"not JSON", tok, "www.amazon.com", "itemIds=B07YCM5K55", 400, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := getItems(t, s, tt.tok, tt.marketplace, tt.body)
			assert.Equal(t, tt.status, status)
			var resp struct {
				Errors []struct{ Code, Message string }
			}
			require.NoError(t, json.Unmarshal(b, &resp), string(b))
			require.Len(t, resp.Errors, 1)
			assert.Equal(t, tt.code, resp.Errors[0].Code)
			assert.NotEmpty(t, resp.Errors[0].Message)
		})
	}
}

func TestGetItemsAnswer(t *testing.T) {
	s := start(t)
	tok := token(t, s)
	status, b := getItems(t, s, tok, "www.amazon.de", body("B07YCM5K55", NotFoundASIN, "bad-id", BuyBoxSecondASIN))
	require.Equal(t, http.StatusOK, status)

	// The amount is a JSON number, not a string.
	amount, _ := Price("B07YCM5K55", "www.amazon.de")
	assert.Contains(t, string(b), `"amount":`+amount+`,`)

	var resp struct {
		Errors      []struct{ Code, Message string }
		ItemsResult struct {
			Items []struct {
				ASIN          string `json:"asin"`
				DetailPageURL string `json:"detailPageURL"`
				ItemInfo      struct {
					Title struct{ DisplayValue string } `json:"title"`
				} `json:"itemInfo"`
				Images struct {
					Primary struct {
						Large struct{ URL string } `json:"large"`
					} `json:"primary"`
				} `json:"images"`
				OffersV2 struct {
					Listings []struct {
						Availability   struct{ Type string } `json:"availability"`
						IsBuyBoxWinner bool                  `json:"isBuyBoxWinner"`
						MerchantInfo   struct{ Name string } `json:"merchantInfo"`
						Price          struct {
							Money struct {
								Amount   json.Number `json:"amount"`
								Currency string      `json:"currency"`
							} `json:"money"`
						} `json:"price"`
					} `json:"listings"`
				} `json:"offersV2"`
			} `json:"items"`
		} `json:"itemsResult"`
	}
	require.NoError(t, json.Unmarshal(b, &resp))
	require.Len(t, resp.ItemsResult.Items, 2, "partial results: found items are listed")
	first := resp.ItemsResult.Items[0]
	assert.Equal(t, "B07YCM5K55", first.ASIN)
	assert.Equal(t, "https://www.amazon.de/dp/B07YCM5K55?tag=memocart-20&linkCode=ogi&th=1&psc=1", first.DetailPageURL)
	assert.Equal(t, Title("B07YCM5K55"), first.ItemInfo.Title.DisplayValue)
	assert.True(t, strings.HasPrefix(first.ItemInfo.Title.DisplayValue, "Creators Test "))
	assert.Equal(t, ImageURL("B07YCM5K55"), first.Images.Primary.Large.URL)
	require.Len(t, first.OffersV2.Listings, 1)
	assert.Equal(t, json.Number(amount), first.OffersV2.Listings[0].Price.Money.Amount)
	assert.Equal(t, "EUR", first.OffersV2.Listings[0].Price.Money.Currency)
	assert.Equal(t, "IN_STOCK", first.OffersV2.Listings[0].Availability.Type)
	assert.Equal(t, "Amazon.de", first.OffersV2.Listings[0].MerchantInfo.Name)

	bbx := resp.ItemsResult.Items[1].OffersV2.Listings
	require.Len(t, bbx, 2)
	assert.False(t, bbx[0].IsBuyBoxWinner)
	assert.Equal(t, json.Number(BuyBoxOtherPrice), bbx[0].Price.Money.Amount)
	assert.True(t, bbx[1].IsBuyBoxWinner)
	assert.Equal(t, json.Number(BuyBoxWinnerPrice), bbx[1].Price.Money.Amount)

	require.Len(t, resp.Errors, 2)
	assert.Equal(t, "ItemNotAccessible", resp.Errors[0].Code)
	assert.Contains(t, resp.Errors[0].Message, NotFoundASIN)
	assert.Equal(t, "InvalidParameterValue", resp.Errors[1].Code)

	reqs := s.Requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, "www.amazon.de", last.Marketplace)
	assert.Equal(t, []string{"B07YCM5K55", NotFoundASIN, "bad-id", BuyBoxSecondASIN}, last.ItemIDs)
	assert.Equal(t, http.StatusOK, last.Status)
}

func TestOnlyRequestedResourcesAreServed(t *testing.T) {
	s := start(t)
	tok := token(t, s)
	status, b := getItems(t, s, tok, "www.amazon.com", map[string]any{"itemIds": []string{BuyBoxSecondASIN},
		"itemIdType": "ASIN", "partnerTag": "t-20", "resources": []string{"offersV2.listings.price"}})
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(b), `"amount":`)
	for _, absent := range []string{"isBuyBoxWinner", "itemInfo", "images", "availability", "merchantInfo"} {
		assert.NotContains(t, string(b), absent)
	}
}

func TestCurrencies(t *testing.T) {
	for marketplace, want := range map[string]string{"www.amazon.com": "USD", "www.amazon.de": "EUR",
		"www.amazon.co.uk": "GBP", "www.amazon.co.jp": "JPY", "www.amazon.ca": "CAD"} {
		amount, currency := Price("B07YCM5K55", marketplace)
		assert.Equal(t, want, currency, marketplace)
		assert.NotContains(t, amount, "e", "a plain decimal")
		if currency == "JPY" {
			assert.NotContains(t, amount, ".", "yen are whole")
		}
	}
	a, _ := Price("B07YCM5K55", "www.amazon.com")
	b, _ := Price("B08N5WRWNW", "www.amazon.com")
	assert.NotEqual(t, a, b, "prices vary by ASIN")
}

func TestFailureInjection(t *testing.T) {
	s := start(t)
	tok := token(t, s)

	s.RateLimitNext(1, 1500*time.Millisecond)
	req, _ := http.NewRequest(http.MethodPost, s.URL+GetItemsPath, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"), "rounded up to whole seconds")

	s.FailNext(http.StatusBadGateway, 2)
	for range 2 {
		status, b := getItems(t, s, tok, "www.amazon.com", body("B07YCM5K55"))
		assert.Equal(t, http.StatusBadGateway, status)
		assert.Contains(t, string(b), `"code":"InternalFailure"`)
	}
	status, _ := getItems(t, s, tok, "www.amazon.com", body("B07YCM5K55"))
	assert.Equal(t, http.StatusOK, status)

	s.ExpireTokens()
	status, _ = getItems(t, s, tok, "www.amazon.com", body("B07YCM5K55"))
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestSlowItemAndClose(t *testing.T) {
	s := New()
	tok := token(t, s)
	s.SetSlowDelay(time.Hour)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b, _ := json.Marshal(body(SlowASIN))
		req, _ := http.NewRequest(http.MethodPost, s.URL+GetItemsPath, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-marketplace", "www.amazon.com")
		if resp, err := s.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the slow item")
	}
	<-done
}

func TestSlowItemHonoursTheClient(t *testing.T) {
	s := start(t)
	tok := token(t, s)
	s.SetSlowDelay(300 * time.Millisecond)
	start := time.Now()
	status, _ := getItems(t, s, tok, "www.amazon.com", body(SlowASIN))
	assert.Equal(t, http.StatusOK, status)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
}

func TestShortLinkHosts(t *testing.T) {
	s := start(t)
	c := noRedirects(s)
	tests := []struct {
		method   string
		url      string
		status   int
		location string
	}{
		{"HEAD", "https://amzn.to/abcd123", 301, ShortLinkTarget("amzn.to", "abcd123") + "?ref_=creatorstest&th=1&psc=1"},
		{"GET", "https://a.co/d/abcd123", 302, "https://www.amazon.com/dp/" + ShortLinkASIN("abcd123") + "?ref_=creatorstest&th=1&psc=1"},
		{"HEAD", "https://amzn.eu/d/abcd123", 301, "https://www.amazon.de/dp/" + ShortLinkASIN("abcd123") + "?ref_=creatorstest&th=1&psc=1"},
		{"HEAD", "https://amzn.asia/d/abcd123", 301, "https://www.amazon.co.jp/dp/" + ShortLinkASIN("abcd123") + "?ref_=creatorstest&th=1&psc=1"},
		{"HEAD", "https://amzn.to/" + CodeEvil, 301, "https://evil.example/dp/" + EvilASIN},
		{"HEAD", "https://amzn.to/" + CodeIPLiteral, 301, "https://169.254.169.254/dp/" + IPLiteralASIN},
		{"HEAD", "https://amzn.to/" + CodeLoop, 301, "https://amzn.to/" + CodeLoop},
		{"HEAD", "https://a.co/d/" + CodeTwoHops, 302, "https://amzn.to/" + CodeTwoHops},
		{"HEAD", "https://amzn.to/" + CodeTwoHops, 301, ShortLinkTarget("amzn.to", CodeTwoHops) + "?ref_=creatorstest&th=1"},
		{"HEAD", "https://amzn.to/" + CodeNoHead, 405, ""},
		{"GET", "https://amzn.to/" + CodeNoHead, 301, ShortLinkTarget("amzn.to", CodeNoHead) + "?ref_=creatorstest&th=1"},
		{"HEAD", "https://amzn.to/" + CodeNotFound, 404, ""},
		{"HEAD", "https://amzn.to/" + CodeDown, 503, ""},
		{"HEAD", "https://amzn.to/" + CodeRelative, 301, "https://www.amazon.com/exec/obidos/ASIN/" + ShortLinkASIN(CodeRelative)},
		{"HEAD", "https://www.amazon.com/exec/obidos/ASIN/B07YCM5K55", 301, "/dp/B07YCM5K55"},
		{"GET", "https://www.amazon.de/gp/product/B07YCM5K55", 301, "/dp/B07YCM5K55"},
		{"GET", "https://www.amazon.com/dp/B07YCM5K55", 200, ""},
		{"HEAD", "https://amazon.co.uk/dp/B07YCM5K55/ref=sr_1_1", 200, ""},
		{"GET", "https://www.amazon.com/gp/cart", 404, ""},
		{"HEAD", "https://a.co/abcd123", 404, ""},
		{"POST", "https://amzn.to/abcd123", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.url, nil)
			require.NoError(t, err)
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, tt.location, resp.Header.Get("Location"))
		})
	}
}

func TestClientReachesTheServerForAnyHost(t *testing.T) {
	s := start(t)
	c := noRedirects(s)
	for _, u := range []string{"https://evil.example/dp/x", "https://169.254.169.254/latest", "https://creatorsapi.amazon/nowhere"} {
		resp, err := c.Get(u)
		require.NoError(t, err, u)
		resp.Body.Close()
	}
	dials := s.Dials()
	assert.Equal(t, 1, dials[EvilHost])
	assert.Equal(t, 1, dials[IPLiteralHost])
	assert.Equal(t, 1, dials["creatorsapi.amazon"])
	assert.Zero(t, dials["amzn.to"])

	hosts := map[string]int{}
	for _, r := range s.Requests() {
		hosts[r.Host]++
	}
	assert.Equal(t, map[string]int{EvilHost: 1, IPLiteralHost: 1, "creatorsapi.amazon": 1}, hosts)

	// A client that does not trust the server's certificate is refused:
	// the trust comes from Client, not from a disabled check.
	plain := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, strings.TrimPrefix(s.URL, "https://"))
	}}}
	_, err := plain.Get("https://amzn.to/abcd123")
	require.Error(t, err)
}

func TestWithListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := start(t, WithListener(l))
	assert.Equal(t, "https://"+l.Addr().String(), s.URL)
	token(t, s)
}

func TestShortLinkASIN(t *testing.T) {
	for _, code := range []string{"abcd", "ABCD", "3xYzAbC", CodeEvil} {
		a := ShortLinkASIN(code)
		assert.True(t, isASIN(a), a)
		assert.False(t, strings.HasPrefix(a, "B0CAT"), a)
		assert.Equal(t, a, ShortLinkASIN(code), "stable")
	}
	assert.NotEqual(t, ShortLinkASIN("abcd"), ShortLinkASIN("ABCD"), "codes are case-sensitive")
	for _, asin := range []string{OutOfStockASIN, PreorderASIN, NoOffersASIN, NoPriceASIN, NotFoundASIN,
		BuyBoxSecondASIN, ScarceASIN, SlowASIN, EvilASIN, IPLiteralASIN} {
		assert.True(t, isASIN(asin), asin)
		assert.True(t, strings.HasPrefix(asin, "B0CAT"), asin)
	}
}
