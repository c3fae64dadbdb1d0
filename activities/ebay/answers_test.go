package ebay

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// answer is one getItemByLegacyId answer a scripted server gives.
type answer struct {
	status int
	body   string
}

// scripted is a Browse API that grants every token request and answers
// item calls with its script in turn, then with servedItem.
type scripted struct {
	mu     sync.Mutex
	script []answer
	calls  int
	tokens int
}

// servedItem is a fixed-price listing in stock at 84.50 USD.
const servedItem = `{"itemId":"v1|305112233445|0","legacyItemId":"305112233445","title":"A brass desk lamp",
	"price":{"value":"84.50","currency":"USD"},"buyingOptions":["FIXED_PRICE"],
	"itemWebUrl":"https://www.ebay.com/itm/305112233445",
	"estimatedAvailabilities":[{"deliveryOptions":["SHIP_TO_HOME"],"estimatedAvailabilityStatus":"IN_STOCK","estimatedAvailableQuantity":3}]}`

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path == "/identity/v1/oauth2/token" {
		s.tokens++
		_, _ = io.WriteString(w, `{"access_token":"v^1.1#i^1#scripted","expires_in":7200,"token_type":"Application Access Token"}`)
		return
	}
	s.calls++
	a := answer{http.StatusOK, servedItem}
	if len(s.script) > 0 {
		a, s.script = s.script[0], s.script[1:]
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

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
		script []answer
		code   models.Code // "" for the product
		msg    string
		calls  int
		tokens int
	}{
		// Third-party code disagrees on the not-found id: the status decides.
		{"404 errorId 11001", []answer{{404, errs("11001", "API_BROWSE", "")}}, models.CodeProductUnavailable, msgNotFound, 1, 1},
		{"404 errorId 11003", []answer{{404, errs("11003", "API_BROWSE", "")}}, models.CodeProductUnavailable, msgNotFound, 1, 1},
		{"404 errorId 11010", []answer{{404, errs("11010", "API_BROWSE", "")}}, models.CodeProductUnavailable, msgNotFound, 1, 1},
		{"errorId 11006 with itemGroupHref", []answer{{400, itemGroup}}, models.CodeProductUnavailable, msgNeedsVariation, 1, 1},
		{"401 errorId 1001 once: a fresh token", []answer{{401, invalidToken}}, "", "", 2, 2},
		{"401 errorId 1001 with the fresh token too", []answer{{401, invalidToken}, {401, invalidToken}},
			models.CodeMarketplaceUnavailable, msgUnavailable, 2, 2},
		{"429 errorId 2001 once", []answer{{429, tooMany}}, "", "", 2, 1},
		{"429 errorId 2001 on every attempt", []answer{{429, tooMany}, {429, tooMany}, {429, tooMany}},
			models.CodeMarketplaceUnavailable, msgUnavailable, maxAttempts, 1},
		{"200 ended and sold", []answer{{200, ended}}, models.CodeProductUnavailable, msgEnded, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &scripted{script: tt.script}
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
			assert.Equal(t, tt.calls, api.calls, "item calls")
			assert.Equal(t, tt.tokens, api.tokens, "token requests")
		})
	}
}
