package ebay

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// fixtureNow is when the recorded listings are looked at: after the ended
// listing's end, before the auctions' ends.
var fixtureNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// edited returns a fixture with top-level fields replaced (nil deletes).
func edited(t *testing.T, name string, fields map[string]any) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(fixture(t, name), &m))
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func ebayRef(host, id, variation string) models.ProductRef {
	u := "https://" + host + "/itm/" + id
	if variation != "" {
		u += "?var=" + variation
	}
	return models.ProductRef{Marketplace: models.MarketplaceEbay, ID: id, Host: host, Variation: variation, URL: u}
}

func TestReadAnswerBuyableListings(t *testing.T) {
	tests := []struct {
		name string
		ref  models.ProductRef
		body []byte
		want models.Product
	}{
		{
			name: "fixed price",
			ref:  ebayRef("www.ebay.com", "305112233445", ""),
			body: fixture(t, "item_fixed_price.json"),
			want: models.Product{
				Marketplace: models.MarketplaceEbay, ID: "305112233445",
				Title:        "Vintage Brass Desk Lamp with Green Glass Shade",
				ImageURL:     "https://i.ebayimg.com/images/g/lAmPAAOSwx1Zk3Qe/s-l1600.jpg",
				ProductURL:   "https://www.ebay.com/itm/305112233445",
				Currency:     "USD",
				Price:        decimal.RequireFromString("84.50"),
				Availability: models.InStock,
				UpstreamID:   "v1|305112233445|0",
				Listing:      "attic_finds_pdx",
			},
		},
		{
			name: "auction with Buy It Now is bought at the Buy It Now price",
			ref:  ebayRef("www.ebay.co.uk", "186677889900", ""),
			body: fixture(t, "item_auction_bin.json"),
			want: models.Product{
				Marketplace: models.MarketplaceEbay, ID: "186677889900",
				Title:        "LEGO 10281 Bonsai Tree - New Sealed",
				ImageURL:     "https://i.ebayimg.com/images/g/bOnSAAOSw4pZk7cD/s-l1600.jpg",
				ProductURL:   "https://www.ebay.co.uk/itm/186677889900",
				Currency:     "GBP",
				Price:        decimal.RequireFromString("45.00"),
				Availability: models.InStock,
				UpstreamID:   "v1|186677889900|0",
				Listing:      "brick_and_mortar_uk",
			},
		},
		{
			name: "limited stock of a variation is buyable",
			ref:  ebayRef("www.ebay.com", "394455667711", "663322110099"),
			body: fixture(t, "item_limited_stock.json"),
			want: models.Product{
				Marketplace: models.MarketplaceEbay, ID: "394455667711",
				Title:        "Merino Wool Crew Neck Jumper",
				ImageURL:     "https://i.ebayimg.com/images/g/wOoLAAOSw5jZk2kL/s-l1600.jpg",
				ProductURL:   "https://www.ebay.com/itm/394455667711?var=663322110099",
				Currency:     "USD",
				Price:        decimal.RequireFromString("59.00"),
				Availability: models.InStock,
				UpstreamID:   "v1|394455667711|663322110099",
				Variation:    "663322110099",
				Listing:      "woolly_goods",
			},
		},
		{
			name: "more than ten available has no quantity and is in stock",
			ref:  ebayRef("www.ebay.com", "115566442233", ""),
			body: fixture(t, "item_more_than_ten.json"),
			want: models.Product{
				Marketplace: models.MarketplaceEbay, ID: "115566442233",
				Title:        "USB-C to USB-C Cable 2m, 100W",
				ImageURL:     "https://i.ebayimg.com/images/g/cAbLAAOSw1cZk4mN/s-l1600.jpg",
				ProductURL:   "https://www.ebay.com/itm/115566442233",
				Currency:     "USD",
				Price:        decimal.RequireFromString("9.49"),
				Availability: models.InStock,
				UpstreamID:   "v1|115566442233|0",
				Listing:      "cables_direct",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAnswer(tt.ref, http.StatusOK, tt.body, fixtureNow)
			require.NoError(t, err)
			assert.True(t, tt.want.Price.Equal(got.Price), "price %s, want %s", got.Price, tt.want.Price)
			got.Price, tt.want.Price = decimal.Decimal{}, decimal.Decimal{}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestReadAnswerRefusals(t *testing.T) {
	ref := ebayRef("www.ebay.com", "305112233445", "")
	later := time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		status int
		body   []byte
		now    time.Time
		want   string // product_unavailable message
	}{
		{"auction only", http.StatusOK, fixture(t, "item_auction.json"), fixtureNow, msgAuction},
		{"ended listing", http.StatusOK, fixture(t, "item_ended.json"), fixtureNow, msgEnded},
		{"auction with Buy It Now after its end", http.StatusOK, fixture(t, "item_auction_bin.json"), later, msgEnded},
		{"ends exactly now", http.StatusOK, fixture(t, "item_ended.json"),
			time.Date(2026, 5, 20, 15, 10, 0, 0, time.UTC), msgEnded},
		{"out of stock", http.StatusOK, fixture(t, "item_out_of_stock.json"), fixtureNow, msgOutOfStock},
		{"in stock but quantity zero", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{
			"estimatedAvailabilities": []any{map[string]any{
				"deliveryOptions": []string{"SHIP_TO_HOME"}, "estimatedAvailabilityStatus": "IN_STOCK",
				"estimatedAvailableQuantity": 0,
			}},
		}), fixtureNow, msgOutOfStock},
		{"unknown availability status", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{
			"estimatedAvailabilities": []any{map[string]any{"estimatedAvailabilityStatus": "BACKORDERED"}},
		}), fixtureNow, msgOutOfStock},
		{"local pickup only", http.StatusOK, fixture(t, "item_pickup_only.json"), fixtureNow, msgPickupOnly},
		{"fixed price without a price", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{"price": nil}),
			fixtureNow, msgNoPrice},
		{"classified ad", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{"buyingOptions": []string{"CLASSIFIED_AD"}}),
			fixtureNow, msgNoPrice},
		{"zero price", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{
			"price": map[string]string{"value": "0.00", "currency": "USD"}}), fixtureNow, msgBadListing},
		{"malformed price", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{
			"price": map[string]string{"value": "12,50", "currency": "USD"}}), fixtureNow, msgBadListing},
		{"price without currency", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{
			"price": map[string]string{"value": "12.50"}}), fixtureNow, msgBadListing},
		{"404 errors body", http.StatusNotFound, fixture(t, "error_not_found.json"), fixtureNow, msgNotFound},
		{"404 without a body", http.StatusNotFound, nil, fixtureNow, msgNotFound},
		{"not-found errorId under 400", http.StatusBadRequest, fixture(t, "error_not_found.json"), fixtureNow, msgNotFound},
		{"variation required", http.StatusBadRequest, fixture(t, "error_item_group.json"), fixtureNow, msgNeedsVariation},
		{"being revised", http.StatusBadRequest, fixture(t, "error_not_available.json"), fixtureNow, msgNotBuyableNow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAnswer(ref, tt.status, tt.body, tt.now)
			var me *models.Error
			require.ErrorAs(t, err, &me)
			assert.Equal(t, models.CodeProductUnavailable, me.Code)
			assert.Equal(t, tt.want, me.Message)
			var ue *upstreamError
			assert.False(t, errors.As(err, &ue), "a listing's own refusal is final and not logged as unexpected")
		})
	}
}

func TestReadAnswerUpstreamFailures(t *testing.T) {
	ref := ebayRef("www.ebay.in", "305112233445", "")
	tests := []struct {
		name      string
		status    int
		body      []byte
		ids       []int
		retryable bool
		final     models.Code // the code a non-retryable failure answers, "" for none
	}{
		{"rate limited", http.StatusTooManyRequests, fixture(t, "error_rate_limited.json"), []int{2001}, true, ""},
		{"internal error", http.StatusInternalServerError, fixture(t, "error_internal.json"), []int{11000}, true, ""},
		{"bad gateway without a body", http.StatusBadGateway, []byte("<html>502</html>"), []int(nil), true, ""},
		{"garbled item", http.StatusOK, []byte(`{"itemId": "v1|1|0", "price": `), []int(nil), true, ""},
		{"price as a JSON number", http.StatusOK, edited(t, "item_fixed_price.json", map[string]any{
			"price": map[string]any{"value": 84.5, "currency": "USD"}}), []int(nil), true, ""},
		{"token rejected", http.StatusUnauthorized, fixture(t, "error_invalid_token.json"), []int{1001}, false, ""},
		{"forbidden", http.StatusForbidden, []byte(`{"errors":[{"errorId":1100,"domain":"ACCESS","category":"REQUEST","message":"Access denied"}]}`),
			[]int{1100}, false, ""},
		{"marketplace not supported", http.StatusBadRequest, fixture(t, "error_marketplace_unsupported.json"), []int{11011}, false,
			models.CodeProductUnavailable},
		{"undocumented refusal", http.StatusBadRequest, []byte(`{"errors":[{"errorId":11501,"domain":"API_BROWSE","category":"REQUEST"}]}`),
			[]int{11501}, false, models.CodeProductUnavailable},
		{"redirect", http.StatusMovedPermanently, nil, []int(nil), false, models.CodeMarketplaceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAnswer(ref, tt.status, tt.body, fixtureNow)
			var ue *upstreamError
			require.ErrorAs(t, err, &ue)
			assert.Equal(t, tt.status, ue.Status)
			if tt.ids != nil {
				assert.Equal(t, tt.ids, ue.ErrorIDs)
			}
			assert.Equal(t, tt.retryable, ue.Retryable())
			if tt.final == "" {
				assert.Nil(t, ue.final)
			} else {
				assert.Equal(t, tt.final, models.CodeOf(err))
			}
		})
	}
}

// Messages reach API clients: none may carry eBay's own words.
func TestRefusalMessagesAreOurs(t *testing.T) {
	for _, name := range []string{"error_not_found.json", "error_item_group.json", "error_not_available.json", "error_marketplace_unsupported.json"} {
		t.Run(name, func(t *testing.T) {
			_, err := readAnswer(ebayRef("www.ebay.com", "394455667711", ""), http.StatusBadRequest, fixture(t, name), fixtureNow)
			var me *models.Error
			require.ErrorAs(t, err, &me)
			assert.NotContains(t, me.Message, "api.ebay.com")
			assert.NotContains(t, me.Message, "legacy")
		})
	}
}
