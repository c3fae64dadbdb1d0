package ebay

import (
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
const scriptedToken = `{"access_token":"v^1.1#i^1#scripted","expires_in":7200,"token_type":"Application Access Token"}`

// servedItem is a fixed-price listing in stock at 84.50 USD.
const servedItem = `{"itemId":"v1|305112233445|0","legacyItemId":"305112233445","title":"A brass desk lamp",
	"price":{"value":"84.50","currency":"USD"},"buyingOptions":["FIXED_PRICE"],
	"itemWebUrl":"https://www.ebay.com/itm/305112233445",
	"estimatedAvailabilities":[{"deliveryOptions":["SHIP_TO_HOME"],"estimatedAvailabilityStatus":"IN_STOCK","estimatedAvailableQuantity":3}]}`

// The Browse API's documented answers (shared/reference/marketplaces.md,
// "eBay product data"), each answered to the catalog as eBay would, and
// what the catalog makes of it: the code and message an API client gets,
// and how often it asks.
func TestProductDocumentedAnswers(t *testing.T) {
	errs := func(id, domain, params string) string {
		return `{"errors":[{"errorId":` + id + `,"domain":"` + domain + `","category":"REQUEST","message":"m","longMessage":"l"` +
			params + `}]}`
	}
	var (
		invalidToken = errs("1001", "OAuth", "")
		tooMany      = errs("2001", "ACCESS", "")
		itemGroup    = errs("11006", "API_BROWSE",
			`,"parameters":[{"name":"itemGroupHref","value":"https://api.ebay.com/buy/browse/v1/item/get_items_by_item_group?item_group_id=305112233445"}]`)
		// Ended and sold: still a 200, out of stock, its end in the past.
		ended = `{"itemId":"v1|305112233445|0","legacyItemId":"305112233445","title":"A brass desk lamp",
			"price":{"value":"84.50","currency":"USD"},"buyingOptions":["FIXED_PRICE"],"itemEndDate":"2026-05-20T15:10:00.000Z",
			"estimatedAvailabilities":[{"estimatedAvailabilityStatus":"OUT_OF_STOCK","estimatedAvailableQuantity":0,"estimatedSoldQuantity":1}]}`
	)
	tests := []struct {
		name   string
		script []upstreamtest.Answer
		code   models.Code // "" for the product
		msg    string
		calls  int
		tokens int
	}{
		// Third-party code disagrees on the not-found id: the status decides.
		{"404 errorId 11001", []upstreamtest.Answer{reply(404, nil, errs("11001", "API_BROWSE", ""))}, models.CodeProductUnavailable, msgNotFound, 1, 1},
		{"404 errorId 11003", []upstreamtest.Answer{reply(404, nil, errs("11003", "API_BROWSE", ""))}, models.CodeProductUnavailable, msgNotFound, 1, 1},
		{"404 errorId 11010", []upstreamtest.Answer{reply(404, nil, errs("11010", "API_BROWSE", ""))}, models.CodeProductUnavailable, msgNotFound, 1, 1},
		{"errorId 11006 with itemGroupHref", []upstreamtest.Answer{reply(400, nil, itemGroup)}, models.CodeProductUnavailable, msgNeedsVariation, 1, 1},
		{"401 errorId 1001 once: a fresh token", []upstreamtest.Answer{reply(401, nil, invalidToken)}, "", "", 2, 2},
		{"401 errorId 1001 with the fresh token too", []upstreamtest.Answer{reply(401, nil, invalidToken), reply(401, nil, invalidToken)},
			models.CodeMarketplaceUnavailable, msgUnavailable, 2, 2},
		{"429 errorId 2001 once", []upstreamtest.Answer{reply(429, nil, tooMany)}, "", "", 2, 1},
		{"429 errorId 2001 on every attempt", []upstreamtest.Answer{reply(429, nil, tooMany), reply(429, nil, tooMany), reply(429, nil, tooMany)},
			models.CodeMarketplaceUnavailable, msgUnavailable, maxAttempts, 1},
		{"200 ended and sold", []upstreamtest.Answer{reply(200, nil, ended)}, models.CodeProductUnavailable, msgEnded, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &upstreamtest.Script{TokenPath: "/identity/v1/oauth2/token", Token: scriptedToken,
				ContentType: "application/json", Answers: tt.script, Served: servedItem}
			srv := httptest.NewServer(api)
			t.Cleanup(srv.Close)
			c, err := New(Config{
				APIURL: srv.URL, ClientID: "app-id", ClientSecret: "cert-id", RequestsPerSecond: 1000,
				HTTPClient: srv.Client(), Logger: slog.New(slog.DiscardHandler),
				Now: func() time.Time { return fixtureNow },
			})
			require.NoError(t, err)
			c.backoff.Min, c.backoff.Max = time.Millisecond, 5*time.Millisecond

			p, err := c.Product(t.Context(), ebayRef("www.ebay.com", "305112233445", ""))
			if tt.code == "" {
				require.NoError(t, err)
				assert.Equal(t, "v1|305112233445|0", p.UpstreamID)
				assert.Equal(t, "84.50", p.Price.StringFixed(2))
			} else {
				requireCode(t, err, tt.code, tt.msg)
			}
			calls, tokens := api.Counts()
			assert.Equal(t, tt.calls, calls, "item calls")
			assert.Equal(t, tt.tokens, tokens, "token requests")
		})
	}
}
