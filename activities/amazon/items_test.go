package amazon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func mustStorefront(t *testing.T, host string) storefront {
	t.Helper()
	sf, ok := storefrontOf(host)
	require.True(t, ok, host)
	return sf
}

// requireCode asserts err is a *models.Error with code and returns it.
func requireCode(t *testing.T, err error, code models.Code) *models.Error {
	t.Helper()
	require.Error(t, err)
	var me *models.Error
	require.True(t, errors.As(err, &me), "not a *models.Error: %v", err)
	require.Equal(t, code, me.Code, "error: %v", err)
	return me
}

func TestReadAnswerBuyable(t *testing.T) {
	// Every buyable answer is an in-stock Amazon product whose ID and
	// upstream ID are the ASIN asked for; the rows give the rest.
	tests := []struct {
		name     string
		fixture  string
		asin     string
		host     string
		title    string
		imageURL string
		url      string
		currency string
		price    string
		listing  string
	}{
		{"in stock, sold by Amazon", "getitems_availability.json", "B07YCM5K55", "www.amazon.com",
			"Anker PowerCore 10000 Portable Charger, 10000mAh Power Bank", "https://m.media-amazon.com/images/I/41a8Vqz5SXL._SL500_.jpg",
			"https://www.amazon.com/dp/B07YCM5K55", "USD", "19.99", "Amazon.com"},
		{"scarce stock is still in stock", "getitems_availability.json", "B0BSHF7WHW", "www.amazon.com",
			"Stainless Steel French Press Coffee Maker, 34 oz", "https://m.media-amazon.com/images/I/31Kq0PzqmsL._SL500_.jpg",
			"https://www.amazon.com/dp/B0BSHF7WHW", "USD", "27.50", "Kitchen Corner US"},
		{"the buy-box winner is priced, not the first offer", "getitems_buybox.json", "B08N5WRWNW", "www.amazon.com",
			"Noise Cancelling Wireless Headphones, Black", "https://m.media-amazon.com/images/I/61EXAMPLEL._SL500_.jpg",
			"https://www.amazon.com/dp/B08N5WRWNW", "USD", "248", "Amazon.com"},
		{"no buy-box winner: the first offer, its merchant named by id", "getitems_no_buybox.json", "B0C1NOBBX1", "www.amazon.com",
			"Hand-Thrown Stoneware Mug, 12 oz", "",
			"https://www.amazon.com/dp/B0C1NOBBX1", "USD", "32", "A3POTTERY000"},
		{"euro storefront", "getitems_de.json", "B0DE00EUR1", "www.amazon.de",
			"Kaffeevollautomat mit Milchsystem, Edelstahl", "https://m.media-amazon.com/images/I/71DEEXAMPL._SL500_.jpg",
			"https://www.amazon.de/dp/B0DE00EUR1", "EUR", "1234.50", "Amazon.de"},
		{"found item of a partial result", "getitems_partial.json", "B07YCM5K55", "www.amazon.com",
			"Anker PowerCore 10000 Portable Charger, 10000mAh Power Bank", "https://m.media-amazon.com/images/I/41a8Vqz5SXL._SL500_.jpg",
			"https://www.amazon.com/dp/B07YCM5K55", "USD", "19.99", "Amazon.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := models.Product{
				Marketplace: models.MarketplaceAmazon, ID: tt.asin, Title: tt.title, ImageURL: tt.imageURL,
				ProductURL: tt.url, Currency: tt.currency, Availability: models.InStock,
				UpstreamID: tt.asin, Listing: tt.listing,
			}
			got, err := readAnswer(http.StatusOK, fixture(t, tt.fixture), tt.asin, mustStorefront(t, tt.host))
			require.NoError(t, err)
			price := decimal.RequireFromString(tt.price)
			assert.True(t, price.Equal(got.Price), "price %s, want %s", got.Price, price)
			got.Price = decimal.Zero
			assert.Equal(t, want, got)
		})
	}
}

func TestReadAnswerNotBuyable(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		status  int
		asin    string
		message string
	}{
		{"out of stock", "getitems_availability.json", 200, "B09V3KXJPB", "This product is out of stock at Amazon"},
		{"pre-order", "getitems_availability.json", 200, "B0DPREORD1", "This product is only available for pre-order at Amazon"},
		{"lead time", "getitems_availability.json", 200, "B07LEADTM1", "This product is not in stock at Amazon: it ships only after a lead time"},
		{"available on a later date", "getitems_availability.json", 200, "B0AVDATE01", "This product is not available at Amazon yet"},
		{"unavailable", "getitems_availability.json", 200, "B01UNAVAIL", "This product is currently unavailable at Amazon"},
		{"unknown availability", "getitems_availability.json", 200, "B0UNKNOWN1", "Amazon does not say this product is in stock"},
		{"no offers", "getitems_no_offers.json", 200, "B00NOOFFER", "This product has no offer that can be bought at Amazon"},
		{"no price", "getitems_no_price.json", 200, "B00NOPRICE", "This product has no offer that can be bought at Amazon: it has no price"},
		{"not accessible, partial result", "getitems_partial.json", 200, "B0GONE0000", "This product was not found at Amazon, or Amazon does not provide its data"},
		{"not accessible, errors only", "getitems_not_accessible.json", 200, "B0GONE0000", "This product was not found at Amazon, or Amazon does not provide its data"},
		{"not accessible, answered 404", "getitems_not_accessible.json", 404, "B0GONE0000", "This product was not found at Amazon, or Amazon does not provide its data"},
		{"none accessible: 404 ResourceNotFoundException", "error_item_not_found.json", 404, "B0GONE0000", "This product was not found at Amazon, or Amazon does not provide its data"},
		{"left out without an error", "getitems_buybox.json", 200, "B0MISSING0", "This product was not found at Amazon, or Amazon does not provide its data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAnswer(tt.status, fixture(t, tt.fixture), tt.asin, mustStorefront(t, "www.amazon.com"))
			me := requireCode(t, err, models.CodeProductUnavailable)
			assert.Equal(t, tt.message, me.Message)
		})
	}
}

// TestReadAnswerAvailabilityTypes pins the rule itself: only the two
// in-stock types can be bought, whatever else the API may add.
func TestReadAnswerAvailabilityTypes(t *testing.T) {
	base := fixture(t, "getitems_availability.json")
	for _, kind := range []string{"IN_STOCK", "IN_STOCK_SCARCE", "OUT_OF_STOCK", "PREORDER", "LEADTIME",
		"AVAILABLE_DATE", "UNAVAILABLE", "UNKNOWN", "", "BACKORDERED"} {
		t.Run(kind, func(t *testing.T) {
			var m map[string]any
			require.NoError(t, json.Unmarshal(base, &m))
			first := m["itemsResult"].(map[string]any)["items"].([]any)[0].(map[string]any)
			l := first["offersV2"].(map[string]any)["listings"].([]any)[0].(map[string]any)
			if kind == "" {
				delete(l, "availability")
			} else {
				l["availability"] = map[string]any{"type": kind}
			}
			body, err := json.Marshal(m)
			require.NoError(t, err)

			p, err := readAnswer(http.StatusOK, body, "B07YCM5K55", mustStorefront(t, "www.amazon.com"))
			if kind == "IN_STOCK" || kind == "IN_STOCK_SCARCE" {
				require.NoError(t, err)
				assert.Equal(t, models.InStock, p.Availability)
				return
			}
			requireCode(t, err, models.CodeProductUnavailable)
		})
	}
}

// TestReadAnswerAmountIsExact: the amount is read from the JSON text,
// exactly, within models.MaxPriceDigits; a larger one (the fixture's
// 90071992547409.93, more digits than a float64 holds) is refused as
// unreadable rather than rounded or stored as a price no sum could hold.
func TestReadAnswerAmountIsExact(t *testing.T) {
	big := fixture(t, "getitems_large_amount.json")
	_, err := readAnswer(http.StatusOK, big, "B0BIGPRICE", mustStorefront(t, "www.amazon.co.jp"))
	requireCode(t, err, models.CodeProductUnavailable)

	exact := bytes.Replace(big, []byte("90071992547409.93"), []byte("123456789.1234567"), 1)
	p, err := readAnswer(http.StatusOK, exact, "B0BIGPRICE", mustStorefront(t, "www.amazon.co.jp"))
	require.NoError(t, err)
	assert.Equal(t, "123456789.1234567", p.Price.String())
	assert.Equal(t, "JPY", p.Currency)
	assert.Equal(t, "https://www.amazon.co.jp/dp/B0BIGPRICE", p.ProductURL)

	for _, amount := range []string{"1e3", "1E+3", "-5", "1234567890"} {
		body := bytes.Replace(big, []byte("90071992547409.93"), []byte(amount), 1)
		_, err := readAnswer(http.StatusOK, body, "B0BIGPRICE", mustStorefront(t, "www.amazon.co.jp"))
		requireCode(t, err, models.CodeProductUnavailable)
	}
}

func TestReadAnswerUnreadablePrices(t *testing.T) {
	tests := []struct {
		name  string
		money string
	}{
		{"zero", `{"amount": 0, "currency": "USD"}`},
		{"negative", `{"amount": -5, "currency": "USD"}`},
		{"no currency", `{"amount": 19.99}`},
		{"bad currency", `{"amount": 19.99, "currency": "dollars"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"itemsResult":{"items":[{"asin":"B07YCM5K55","offersV2":{"listings":[{"availability":{"type":"IN_STOCK"},` +
				`"isBuyBoxWinner":true,"price":{"money":` + tt.money + `}}]}}]}}`
			_, err := readAnswer(http.StatusOK, []byte(body), "B07YCM5K55", mustStorefront(t, "www.amazon.com"))
			requireCode(t, err, models.CodeProductUnavailable)
		})
	}
}

func TestReadAnswerUpstreamFailures(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      []byte
		codes     []string
		retryable bool
	}{
		{"throttled", 429, fixture(t, "error_throttled.json"), []string{"ThrottleException"}, true},
		{"server error", 500, fixture(t, "error_internal.json"), []string{"InternalServerException"}, true},
		{"server error without a body", 503, nil, nil, true},
		{"unauthorized", 401, fixture(t, "error_unauthorized.json"), []string{"UnauthorizedException", "TokenExpired"}, false},
		{"forbidden", 403, fixture(t, "error_forbidden.json"), []string{"AccessDeniedException", "AssociateNotEligible"}, false},
		{"bad request", 400, fixture(t, "error_invalid_partner_tag.json"), []string{"ValidationException", "FieldValidationFailed"}, false},
		{"404 not about items", 404, []byte(`<html>not found</html>`), nil, false},
		{"404 of another resource", 404, []byte(`{"type":"UnknownOperationException","message":"no such operation"}`),
			[]string{"UnknownOperationException"}, false},
		{"200 about the call", 200, fixture(t, "getitems_call_errors.json"), []string{"InvalidPartnerTag"}, false},
		{"200 unreadable", 200, []byte(`{"itemsResult": [`), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAnswer(tt.status, tt.body, "B07YCM5K55", mustStorefront(t, "www.amazon.com"))
			var ue *upstreamError
			require.True(t, errors.As(err, &ue), "not an upstreamError: %v", err)
			assert.Equal(t, tt.status, ue.Status)
			assert.Equal(t, tt.codes, ue.Codes)
			assert.Equal(t, tt.retryable, ue.Retryable())
			// What reaches logs never carries the upstream's messages.
			assert.NotContains(t, err.Error(), "eligibility")
			assert.NotContains(t, err.Error(), "throttling")
		})
	}
}

// The body's retryAfterSeconds is how long Amazon asks to wait; a
// ValidationException's fieldList reaches the logs.
func TestReadAnswerErrorDetails(t *testing.T) {
	sf := mustStorefront(t, "www.amazon.com")
	_, err := readAnswer(429, fixture(t, "error_throttled_retry_after.json"), "B07YCM5K55", sf)
	var ue *upstreamError
	require.True(t, errors.As(err, &ue), "not an upstreamError: %v", err)
	assert.Equal(t, 30*time.Second, ue.RetryAfter)

	_, err = readAnswer(429, []byte(`{"type":"ThrottleException","message":"m","retryAfterSeconds":99999999999999}`), "B07YCM5K55", sf)
	require.True(t, errors.As(err, &ue))
	assert.Positive(t, ue.RetryAfter, "a huge value does not overflow")

	_, err = readAnswer(400, fixture(t, "error_invalid_partner_tag.json"), "B07YCM5K55", sf)
	require.True(t, errors.As(err, &ue))
	assert.Equal(t, []string{"partnerTag"}, ue.Fields)
}

// Amazon's GetItems reference page spells the result container
// itemResults, its SDK and cURL page itemsResult: both are read.
func TestReadAnswerContainerSpellings(t *testing.T) {
	sf := mustStorefront(t, "www.amazon.com")
	for _, container := range []string{"itemsResult", "itemResults"} {
		t.Run(container, func(t *testing.T) {
			body := `{"` + container + `":{"items":[{"asin":"B07YCM5K55","itemInfo":{"title":{"displayValue":"A lamp"}},
				"offersV2":{"listings":[{"availability":{"type":"IN_STOCK"},"isBuyBoxWinner":true,
				"price":{"money":{"amount":12.5,"currency":"USD"}}}]}}]}}`
			p, err := readAnswer(200, []byte(body), "B07YCM5K55", sf)
			require.NoError(t, err)
			assert.Equal(t, "A lamp", p.Title)
			assert.True(t, decimal.RequireFromString("12.5").Equal(p.Price))
		})
	}
}

// An offer at a restricted deal price (Prime members only) is not the
// product's price: the standard offer is, and without one the product
// cannot be bought.
func TestReadAnswerRestrictedDeals(t *testing.T) {
	sf := mustStorefront(t, "www.amazon.com")
	listing := func(amount, access string, winner bool) string {
		deal := ""
		if access != "" {
			deal = `,"dealDetails":{"accessType":"` + access + `","percentClaimed":12}`
		}
		return fmt.Sprintf(`{"availability":{"type":"IN_STOCK"},"isBuyBoxWinner":%t,"type":"LIGHTNING_DEAL",
			"price":{"money":{"amount":%s,"currency":"USD"}}%s}`, winner, amount, deal)
	}
	body := func(listings ...string) []byte {
		return []byte(`{"itemsResult":{"items":[{"asin":"B07YCM5K55","offersV2":{"listings":[` +
			strings.Join(listings, ",") + `]}}]}}`)
	}
	tests := []struct {
		name  string
		body  []byte
		price string // "" = product_unavailable
	}{
		{"Prime-exclusive buy box, standard offer second", body(listing("24.99", "PRIME_EXCLUSIVE", true), listing("31.5", "", false)), "31.5"},
		{"early access", body(listing("24.99", "PRIME_EARLY_ACCESS", true), listing("31.5", "ALL", false)), "31.5"},
		{"a deal open to all is quoted", body(listing("24.99", "ALL", true), listing("31.5", "", false)), "24.99"},
		{"only a Prime-exclusive offer", body(listing("24.99", "PRIME_EXCLUSIVE", true)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := readAnswer(200, tt.body, "B07YCM5K55", sf)
			if tt.price == "" {
				me := requireCode(t, err, models.CodeProductUnavailable)
				assert.Contains(t, me.Message, "members-only deal price")
				return
			}
			require.NoError(t, err)
			assert.True(t, decimal.RequireFromString(tt.price).Equal(p.Price), "price %s, want %s", p.Price, tt.price)
		})
	}
	assert.True(t, slices.Contains(resources, "offersV2.listings.dealDetails"), "deal details are asked for")
}

func TestRequestBody(t *testing.T) {
	b, err := json.Marshal(getItemsRequest{ItemIDs: []string{"B07YCM5K55"}, ItemIDType: "ASIN", PartnerTag: "memocart-20", Resources: resources})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, []any{"B07YCM5K55"}, m["itemIds"])
	assert.Equal(t, "ASIN", m["itemIdType"])
	assert.Equal(t, "memocart-20", m["partnerTag"])
	for _, r := range []string{"itemInfo.title", "images.primary.large", "offersV2.listings.price",
		"offersV2.listings.availability", "offersV2.listings.isBuyBoxWinner", "offersV2.listings.merchantInfo"} {
		assert.True(t, slices.Contains(resources, r), r)
	}
}

func TestStorefronts(t *testing.T) {
	tests := []struct {
		host  string
		group RegionGroup
		ok    bool
	}{
		{"www.amazon.com", NA, true}, {"amazon.ca", NA, true}, {"www.amazon.com.mx", NA, true}, {"www.amazon.com.br", NA, true},
		{"www.amazon.co.uk", EU, true}, {"www.amazon.de", EU, true}, {"www.amazon.fr", EU, true}, {"www.amazon.it", EU, true},
		{"www.amazon.es", EU, true}, {"www.amazon.nl", EU, true}, {"www.amazon.se", EU, true}, {"www.amazon.pl", EU, true},
		{"www.amazon.com.tr", EU, true}, {"www.amazon.ae", EU, true}, {"www.amazon.sa", EU, true}, {"www.amazon.eg", EU, true},
		{"www.amazon.in", EU, true}, {"www.amazon.ie", EU, true}, {"www.amazon.com.be", EU, true},
		{"www.amazon.co.jp", FE, true}, {"www.amazon.sg", FE, true}, {"www.amazon.com.au", FE, true},
		{"www.amazon.cn", "", true},
		{"", NA, true},
		{"www.amazon.com.evil.example", "", false}, {"amzn.to", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			sf, ok := storefrontOf(tt.host)
			require.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.group, sf.group)
		})
	}
}
