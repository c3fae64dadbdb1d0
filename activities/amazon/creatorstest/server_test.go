package creatorstest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
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
	status, body := tokenRequest(t, s, lwaBody(id, secret, Scope))
	require.Equal(t, http.StatusOK, status, string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
		Scope       string `json:"scope"`
	}
	require.NoError(t, json.Unmarshal(body, &tok))
	require.NotEmpty(t, tok.AccessToken)
	assert.Equal(t, "bearer", tok.TokenType)
	assert.Equal(t, 3600, tok.ExpiresIn)
	assert.Equal(t, Scope, tok.Scope)
	return tok.AccessToken
}

// lwaBody is a version 3.x token request's JSON body.
func lwaBody(id, secret, scope string) map[string]any {
	return map[string]any{"grant_type": "client_credentials", "client_id": id, "client_secret": secret, "scope": scope}
}

// tokenRequest posts body to the version 3.x token endpoint as JSON.
func tokenRequest(t *testing.T, s *Server, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	return post(t, s, s.TokenURL(), "application/json", b, nil)
}

// post sends a request with a body and optional headers and returns the
// status and body answered.
func post(t *testing.T, s *Server, u, contentType string, body []byte, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return send(t, s, req)
}

// send sends req through the server's client and returns the answer's
// status and body.
func send(t *testing.T, s *Server, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

func basic(id, secret string) http.Header {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(id, secret)
	return http.Header{"Authorization": r.Header["Authorization"]}
}

func oauthErrorOf(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	return e.Error
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
	return send(t, s, req)
}

var allResources = []string{"itemInfo.title", "images.primary.large", "offersV2.listings.price",
	"offersV2.listings.availability", "offersV2.listings.condition", "offersV2.listings.isBuyBoxWinner",
	"offersV2.listings.merchantInfo"}

func body(ids ...string) map[string]any {
	return map[string]any{"itemIds": ids, "itemIdType": "ASIN", "partnerTag": "memocart-20", "resources": allResources}
}

// tokenCase is one token request and what the endpoint answers it: the
// status and the OAuth error ("" for none).
type tokenCase struct {
	name        string
	contentType string
	body        []byte
	header      http.Header
	status      int
	oauthError  string
}

func TestTokenEndpoint(t *testing.T) {
	s := start(t)
	id, secret := s.Credentials()
	good := lwaBody(id, secret, Scope)
	goodJSON, _ := json.Marshal(good)
	oldForm := url.Values{"grant_type": {"client_credentials"}, "scope": {Scope}}.Encode()
	tests := []tokenCase{
		{"granted", "application/json", goodJSON, nil, 200, ""},
		{"granted with a charset", "application/json; charset=utf-8", goodJSON, nil, 200, ""},
		{"wrong secret", "application/json", mustJSON(lwaBody(id, "nope", Scope)), nil, 401, "invalid_client"},
		{"no credentials", "application/json", mustJSON(map[string]any{"grant_type": "client_credentials", "scope": Scope}), nil, 401, "invalid_client"},
		// The request x/oauth2/clientcredentials makes: a form with HTTP
		// Basic. Amazon documents only the JSON body for 3.x.
		{"a form with HTTP Basic", "application/x-www-form-urlencoded", []byte(oldForm), basic(id, secret), 400, "invalid_request"},
		{"a form with the credentials in it", "application/x-www-form-urlencoded",
			[]byte(url.Values{"grant_type": {"client_credentials"}, "scope": {Scope}, "client_id": {id}, "client_secret": {secret}}.Encode()),
			nil, 400, "invalid_request"},
		{"JSON and HTTP Basic", "application/json", goodJSON, basic(id, secret), 400, "invalid_request"},
		{"no content type", "", goodJSON, nil, 400, "invalid_request"},
		{"an unknown field", "application/json", mustJSON(map[string]any{"grant_type": "client_credentials", "client_id": id,
			"client_secret": secret, "scope": Scope, "audience": "x"}), nil, 400, "invalid_request"},
		// Field names are case-sensitive: encoding/json alone would take
		// Client_Secret for client_secret.
		{"a name in another case", "application/json", mustJSON(map[string]any{"grant_type": "client_credentials", "client_id": id,
			"Client_Secret": secret, "scope": Scope}), nil, 400, "invalid_request"},
		{"wrong grant", "application/json", mustJSON(map[string]any{"grant_type": "password", "client_id": id,
			"client_secret": secret, "scope": Scope}), nil, 400, "unsupported_grant_type"},
		{"the 2.x scope", "application/json", mustJSON(lwaBody(id, secret, CognitoScope)), nil, 400, "invalid_scope"},
		{"no scope", "application/json", mustJSON(map[string]any{"grant_type": "client_credentials", "client_id": id,
			"client_secret": secret}), nil, 400, "invalid_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := post(t, s, s.TokenURL(), tt.contentType, tt.body, tt.header)
			assert.Equal(t, tt.status, status, string(b))
			assert.Equal(t, tt.oauthError, oauthErrorOf(t, b))
		})
	}
	assert.Equal(t, 2, s.TokensIssued())

	s.FailTokenNext(http.StatusServiceUnavailable, 1)
	status, _ := tokenRequest(t, s, good)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	status, _ = tokenRequest(t, s, good)
	assert.Equal(t, http.StatusOK, status)
}

func TestCognitoTokenEndpoint(t *testing.T) {
	s := start(t)
	id, secret := s.Credentials()
	form := func(extra ...string) []byte {
		v := url.Values{"grant_type": {"client_credentials"}, "scope": {CognitoScope}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return []byte(v.Encode())
	}
	const formType = "application/x-www-form-urlencoded"
	tests := []tokenCase{
		{"HTTP Basic", formType, form(), basic(id, secret), 200, ""},
		{"credentials in the form", formType, form("client_id", id, "client_secret", secret), nil, 200, ""},
		{"both ways", formType, form("client_id", id, "client_secret", secret), basic(id, secret), 400, "invalid_request"},
		{"wrong secret", formType, form(), basic(id, "nope"), 400, "invalid_client"},
		{"a JSON body", "application/json", mustJSON(lwaBody(id, secret, CognitoScope)), nil, 400, "invalid_request"},
		{"the 3.x scope", formType, form("scope", Scope), basic(id, secret), 400, "invalid_scope"},
		{"an unknown parameter", formType, form("audience", "x"), basic(id, secret), 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := post(t, s, s.CognitoTokenURL(), tt.contentType, tt.body, tt.header)
			assert.Equal(t, tt.status, status, string(b))
			assert.Equal(t, tt.oauthError, oauthErrorOf(t, b))
			if status == http.StatusOK {
				var tok struct {
					AccessToken string `json:"access_token"`
					TokenType   string `json:"token_type"`
				}
				require.NoError(t, json.Unmarshal(b, &tok))
				assert.Equal(t, "Bearer", tok.TokenType)
				st, _ := getItems(t, s, tok.AccessToken, "www.amazon.com", body("B07YCM5K55"))
				assert.Equal(t, http.StatusOK, st, "its tokens are accepted by getItems")
			}
		})
	}
}

func TestSeveralCredentials(t *testing.T) {
	s := start(t, WithCredentials("a", "sa"), WithCredentials("b", "sb"))
	for _, c := range [][2]string{{"a", "sa"}, {"b", "sb"}} {
		status, _ := tokenRequest(t, s, lwaBody(c[0], c[1], Scope))
		assert.Equal(t, http.StatusOK, status)
	}
	status, _ := tokenRequest(t, s, lwaBody("a", "sb", Scope))
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = tokenRequest(t, s, lwaBody(DefaultClientID, DefaultClientSecret, Scope))
	assert.Equal(t, http.StatusUnauthorized, status, "the default is replaced")
}

// apiError is the top-level error body of a failed getItems call.
type apiError struct {
	Type              string   `json:"type"`
	Message           string   `json:"message"`
	Reason            string   `json:"reason"`
	FieldList         []string `json:"fieldList"`
	ResourceType      string   `json:"resourceType"`
	ResourceID        string   `json:"resourceId"`
	RetryAfterSeconds *int     `json:"retryAfterSeconds"`
}

func apiErrorOf(t *testing.T, b []byte) apiError {
	t.Helper()
	var e apiError
	require.NoError(t, json.Unmarshal(b, &e), string(b))
	assert.NotEmpty(t, e.Message)
	assert.NotContains(t, string(b), `"errors"`, "a failed call has a top-level body")
	return e
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
		typ         string
		field       string
	}{
		{"no token", "", "www.amazon.com", body("B07YCM5K55"), 401, "UnauthorizedException", ""},
		{"unknown token", "forged", "www.amazon.com", body("B07YCM5K55"), 401, "UnauthorizedException", ""},
		{"no marketplace", tok, "", body("B07YCM5K55"), 400, "ValidationException", "x-marketplace"},
		{"marketplace without www", tok, "amazon.com", body("B07YCM5K55"), 400, "ValidationException", "x-marketplace"},
		{"marketplace the API does not serve", tok, "www.amazon.cn", body("B07YCM5K55"), 400, "ValidationException", "x-marketplace"},
		{"no ids", tok, "www.amazon.com", body(), 400, "ValidationException", "itemIds"},
		{"eleven ids", tok, "www.amazon.com", body("B000000001", "B000000002", "B000000003", "B000000004", "B000000005",
			"B000000006", "B000000007", "B000000008", "B000000009", "B000000010", "B000000011"), 400, "ValidationException", "itemIds"},
		{"wrong id type", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"}, "itemIdType": "SKU",
			"partnerTag": "t-20"}, 400, "ValidationException", "itemIdType"},
		{"no partner tag", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"}, "itemIdType": "ASIN"},
			400, "ValidationException", "partnerTag"},
		{"an unknown resource", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"}, "itemIdType": "ASIN",
			"partnerTag": "t-20", "resources": []string{"OffersV2.Listings.Price"}}, 400, "ValidationException", "resources"},
		{"an unknown field", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"}, "itemIdType": "ASIN",
			"partnerTag": "t-20", "PartnerType": "Associates"}, 400, "ValidationException", "PartnerType"},
		{"not JSON", tok, "www.amazon.com", "itemIds=B07YCM5K55", 400, "ValidationException", "body"},
		// The API's names are lowerCamelCase, matched exactly.
		{"PA-API 5's PascalCase names", tok, "www.amazon.com", map[string]any{"ItemIds": []string{"B07YCM5K55"},
			"ItemIdType": "ASIN", "PartnerTag": "t-20", "Resources": allResources}, 400, "ValidationException", "ItemIdType"},
		{"one name in another case", tok, "www.amazon.com", map[string]any{"itemIds": []string{"B07YCM5K55"},
			"itemIdType": "ASIN", "partnerTag": "t-20", "Resources": allResources}, 400, "ValidationException", "Resources"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := getItems(t, s, tt.tok, tt.marketplace, tt.body)
			assert.Equal(t, tt.status, status)
			e := apiErrorOf(t, b)
			assert.Equal(t, tt.typ, e.Type)
			if tt.field != "" {
				assert.Equal(t, []string{tt.field}, e.FieldList)
			}
		})
	}

	good, _ := json.Marshal(body("B07YCM5K55"))
	headers := []struct {
		name   string
		header http.Header
		status int
		typ    string
	}{
		{"a form content type", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, 400, "ValidationException"},
		{"no content type", http.Header{}, 400, "ValidationException"},
		{"a charset other than UTF-8", http.Header{"Content-Type": {"application/json; charset=iso-8859-1"}}, 400, "ValidationException"},
		{"HTTP Basic instead of a bearer token", http.Header{"Content-Type": {"application/json"},
			"Authorization": basic(s.Credentials())["Authorization"]}, 401, "UnauthorizedException"},
		{"the token without its scheme", http.Header{"Content-Type": {"application/json"}, "Authorization": {tok}}, 401, "UnauthorizedException"},
	}
	for _, tt := range headers {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header.Clone()
			h.Set("x-marketplace", "www.amazon.com")
			if h.Get("Authorization") == "" {
				h.Set("Authorization", "Bearer "+tok)
			}
			status, b := post(t, s, s.URL+GetItemsPath, "", good, h)
			assert.Equal(t, tt.status, status)
			assert.Equal(t, tt.typ, apiErrorOf(t, b).Type)
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

// When no requested item is accessible the whole call is a 404 with a
// top-level ResourceNotFoundException, not a 200 with errors[].
func TestGetItemsNoneAccessible(t *testing.T) {
	s := start(t)
	tok := token(t, s)
	status, b := getItems(t, s, tok, "www.amazon.com", body(NotFoundASIN))
	assert.Equal(t, http.StatusNotFound, status)
	e := apiErrorOf(t, b)
	assert.Equal(t, "ResourceNotFoundException", e.Type)
	assert.Equal(t, "Item", e.ResourceType)
	assert.Equal(t, NotFoundASIN, e.ResourceID)
}

// The result container is spelled as the test chose.
func TestContainerSpelling(t *testing.T) {
	for _, c := range []Container{ItemsResult, ItemResults} {
		t.Run(string(c), func(t *testing.T) {
			var opts []Option
			if c != ItemsResult {
				opts = append(opts, WithContainer(c))
			}
			s := start(t, opts...)
			status, b := getItems(t, s, token(t, s), "www.amazon.com", body("B07YCM5K55"))
			require.Equal(t, http.StatusOK, status)
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &m))
			assert.Contains(t, m, string(c))
			assert.Len(t, m, 1)
		})
	}
}

// A restricted deal is served in dealDetails, when asked for.
func TestDealDetails(t *testing.T) {
	s := start(t)
	req := body(PrimeDealASIN)
	req["resources"] = append(slices.Clone(allResources), "offersV2.listings.dealDetails")
	status, b := getItems(t, s, token(t, s), "www.amazon.com", req)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(b), `"dealDetails":{"accessType":"PRIME_EXCLUSIVE"}`)
	assert.Contains(t, string(b), `"amount":`+PrimeStandardPrice)

	status, b = getItems(t, s, token(t, s), "www.amazon.com", body(PrimeDealASIN))
	require.Equal(t, http.StatusOK, status)
	assert.NotContains(t, string(b), "dealDetails", "not asked for")
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
	status, b := getItems(t, s, tok, "www.amazon.com", body("B07YCM5K55"))
	assert.Equal(t, http.StatusTooManyRequests, status)
	e := apiErrorOf(t, b)
	assert.Equal(t, "ThrottleException", e.Type)
	require.NotNil(t, e.RetryAfterSeconds)
	assert.Equal(t, 2, *e.RetryAfterSeconds, "rounded up to whole seconds")

	for _, tt := range []struct {
		status       int
		typ, reason  string
		resourceType string
	}{
		{http.StatusBadRequest, "ValidationException", "FieldValidationFailed", ""},
		{http.StatusUnauthorized, "UnauthorizedException", "TokenExpired", ""},
		{http.StatusForbidden, "AccessDeniedException", "AssociateNotEligible", ""},
		{http.StatusNotFound, "ResourceNotFoundException", "", "Item"},
		{http.StatusBadGateway, "InternalServerException", "", ""},
		{http.StatusBadGateway, "InternalServerException", "", ""},
	} {
		s.FailNext(tt.status, 1)
		status, b := getItems(t, s, tok, "www.amazon.com", body("B07YCM5K55"))
		assert.Equal(t, tt.status, status)
		e := apiErrorOf(t, b)
		assert.Equal(t, tt.typ, e.Type)
		assert.Equal(t, tt.reason, e.Reason)
		assert.Equal(t, tt.resourceType, e.ResourceType)
	}
	status, _ = getItems(t, s, tok, "www.amazon.com", body("B07YCM5K55"))
	assert.Equal(t, http.StatusOK, status)

	s.ExpireTokens()
	status, b = getItems(t, s, tok, "www.amazon.com", body("B07YCM5K55"))
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "UnauthorizedException", apiErrorOf(t, b).Type)
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
		assert.True(t, models.IsASIN(a), a)
		assert.False(t, strings.HasPrefix(a, "B0CAT"), a)
		assert.Equal(t, a, ShortLinkASIN(code), "stable")
	}
	assert.NotEqual(t, ShortLinkASIN("abcd"), ShortLinkASIN("ABCD"), "codes are case-sensitive")
	for _, asin := range []string{OutOfStockASIN, PreorderASIN, NoOffersASIN, NoPriceASIN, NotFoundASIN,
		BuyBoxSecondASIN, ScarceASIN, SlowASIN, EvilASIN, IPLiteralASIN} {
		assert.True(t, models.IsASIN(asin), asin)
		assert.True(t, strings.HasPrefix(asin, "B0CAT"), asin)
	}
}
