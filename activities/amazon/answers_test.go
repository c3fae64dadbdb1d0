package amazon

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
)

// reply is one answer the scripted upstream gives.
func reply(status int, header http.Header, body string) upstreamtest.Answer {
	return upstreamtest.Answer{Status: status, Header: header, Body: body}
}

// scriptedToken is the token answer of the scripted upstream.
const scriptedToken = `{"access_token":"Atc|scripted","scope":"creatorsapi::default","token_type":"bearer","expires_in":3600}`

// servedBody is an in-stock offer of B07YCM5K55 at 19.99 USD.
const servedBody = `{"itemsResult":{"items":[{"asin":"B07YCM5K55",
	"detailPageURL":"https://www.amazon.com/dp/B07YCM5K55?tag=memocart-20&linkCode=ogi&th=1&psc=1",
	"itemInfo":{"title":{"displayValue":"A desk lamp","label":"Title","locale":"en_US"}},
	"offersV2":{"listings":[{"availability":{"type":"IN_STOCK"},"isBuyBoxWinner":true,
	"merchantInfo":{"name":"Amazon.com"},"price":{"money":{"amount":19.99,"currency":"USD","displayAmount":"$19.99"}}}]}}]}}`

// The documented bodies of the Creators API (shared/reference/
// marketplaces.md, "Amazon product data"), each answered to the catalog
// as Amazon would, and what the catalog makes of it: the code an API
// client gets, how often it asks, and how long it waits between asks.
func TestProductDocumentedAnswers(t *testing.T) {
	const (
		validation = `{"type":"ValidationException","message":"A field failed validation.","reason":"FieldValidationFailed","fieldList":["partnerTag"]}`
		expired    = `{"type":"UnauthorizedException","message":"This token is past its lifetime.","reason":"TokenExpired"}`
		denied     = `{"type":"AccessDeniedException","message":"This associate cannot use the API.","reason":"AssociateNotEligible"}`
		notFound   = `{"type":"ResourceNotFoundException","message":"None of the ids is accessible.","resourceType":"Item","resourceId":"B07YCM5K55"}`
		throttled  = `{"type":"ThrottleException","message":"Request throttling applies."}`
		partial    = `{"errors":[{"code":"ItemNotAccessible","message":"B07YCM5K55 cannot be served."}],
			"itemResults":{"items":[{"asin":"B0OTHER001","detailPageURL":"https://www.amazon.com/dp/B0OTHER001",
			"itemInfo":{"title":{"displayValue":"Another item"}},"offersV2":null}]}}`
		offersNull = `{"itemsResult":{"items":[{"asin":"B07YCM5K55","detailPageURL":"https://www.amazon.com/dp/B07YCM5K55",
			"itemInfo":{"title":{"displayValue":"A desk lamp"}},"images":{"primary":{"large":null}},"offersV2":null}]}}`
	)
	throttledFor := func(secs string) string {
		return `{"type":"ThrottleException","message":"Request throttling applies.","retryAfterSeconds":` + secs + `}`
	}
	retryAfter := func(v string) http.Header { return http.Header{"Retry-After": {v}} }

	tests := []struct {
		name   string
		script []upstreamtest.Answer
		code   models.Code // "" for the product
		calls  int
		tokens int
		// firstWait checks the wait after the first answer; nil when
		// there is none to check.
		firstWait func(t *testing.T, d time.Duration)
	}{
		{name: "400 ValidationException: this deployment's setup", script: []upstreamtest.Answer{reply(400, nil, validation)},
			code: models.CodeLiveUnavailable, calls: 1, tokens: 1},
		{name: "401 UnauthorizedException once: a fresh token", script: []upstreamtest.Answer{reply(401, nil, expired)},
			calls: 2, tokens: 2},
		{name: "401 UnauthorizedException with the fresh token too", script: []upstreamtest.Answer{reply(401, nil, expired), reply(401, nil, expired)},
			code: models.CodeMarketplaceUnavailable, calls: 2, tokens: 2},
		{name: "403 AccessDeniedException: this deployment's setup", script: []upstreamtest.Answer{reply(403, nil, denied)},
			code: models.CodeLiveUnavailable, calls: 1, tokens: 1},
		{name: "404 ResourceNotFoundException: the product, not an outage", script: []upstreamtest.Answer{reply(404, nil, notFound)},
			code: models.CodeProductUnavailable, calls: 1, tokens: 1},
		{name: "429 ThrottleException on every attempt", script: []upstreamtest.Answer{reply(429, nil, throttled), reply(429, nil, throttled), reply(429, nil, throttled)},
			code: models.CodeMarketplaceUnavailable, calls: maxAttempts, tokens: 1},
		{name: "429 with retryAfterSeconds", script: []upstreamtest.Answer{reply(429, nil, throttledFor("2"))},
			calls: 2, tokens: 1, firstWait: func(t *testing.T, d time.Duration) { assert.Equal(t, 2*time.Second, d) }},
		{name: "429 with a Retry-After header in seconds", script: []upstreamtest.Answer{reply(429, retryAfter("3"), throttled)},
			calls: 2, tokens: 1, firstWait: func(t *testing.T, d time.Duration) { assert.Equal(t, 3*time.Second, d) }},
		{name: "429 with a Retry-After header as an HTTP date",
			script: []upstreamtest.Answer{reply(429, retryAfter(time.Now().Add(4*time.Second).UTC().Format(http.TimeFormat)), throttled)},
			calls:  2, tokens: 1, firstWait: func(t *testing.T, d time.Duration) {
				// The date has whole seconds, and some time passes before it is read.
				assert.Greater(t, d, 2*time.Second)
				assert.LessOrEqual(t, d, 4*time.Second)
			}},
		{name: "429 with both hints: the longer one", script: []upstreamtest.Answer{reply(429, retryAfter("3"), throttledFor("1"))},
			calls: 2, tokens: 1, firstWait: func(t *testing.T, d time.Duration) { assert.Equal(t, 3*time.Second, d) }},
		{name: "429 with a Retry-After longer than the catalog waits", script: []upstreamtest.Answer{reply(429, retryAfter("60"), throttled)},
			code: models.CodeMarketplaceUnavailable, calls: 1, tokens: 1},
		{name: "200 with errors[] ItemNotAccessible and other items", script: []upstreamtest.Answer{reply(200, nil, partial)},
			code: models.CodeProductUnavailable, calls: 1, tokens: 1},
		{name: "200 with offersV2 null", script: []upstreamtest.Answer{reply(200, nil, offersNull)},
			code: models.CodeProductUnavailable, calls: 1, tokens: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &upstreamtest.Script{TokenPath: "/auth/o2/token", Token: scriptedToken,
				ContentType: "application/json; charset=utf-8", Answers: tt.script, Served: servedBody}
			srv := httptest.NewServer(api)
			t.Cleanup(srv.Close)
			clock := newFakeClock()
			c, err := New(Config{
				APIURL:            srv.URL,
				TokenURL:          srv.URL + "/auth/o2/token",
				Credentials:       map[RegionGroup]Credential{NA: {ClientID: "id", ClientSecret: "secret", PartnerTag: "memocart-20"}},
				RequestsPerSecond: 1000,
				HTTPClient:        srv.Client(),
				Logger:            slog.New(slog.DiscardHandler),
				Now:               clock.Now,
			})
			require.NoError(t, err)
			c.backoff.Min, c.backoff.Max = time.Millisecond, 4*time.Millisecond
			c.sleep = clock.Sleep

			p, err := c.Product(context.Background(), amazonRef(t, "https://www.amazon.com/dp/B07YCM5K55"))
			if tt.code == "" {
				require.NoError(t, err)
				assert.Equal(t, "B07YCM5K55", p.ID)
				assert.Equal(t, "19.99", p.Price.StringFixed(2))
			} else {
				requireCode(t, err, tt.code)
			}
			calls, tokens := api.Counts()
			assert.Equal(t, tt.calls, calls, "getItems calls")
			assert.Equal(t, tt.tokens, tokens, "token requests")
			if tt.firstWait != nil {
				slept := clock.Slept()
				require.NotEmpty(t, slept)
				tt.firstWait(t, slept[0])
			}
		})
	}
}
