package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// cartResponse is the Cart as served, money kept raw so the test sees
// whether each amount is a JSON number.
type cartResponse struct {
	Cart cartBody `json:"cart"`
}

type cartBody struct {
	ID               string            `json:"id"`
	Status           string            `json:"status"`
	Currency         string            `json:"currency"`
	Subtotal         json.RawMessage   `json:"subtotal"`
	Shipping         json.RawMessage   `json:"shipping"`
	Tax              json.RawMessage   `json:"tax"`
	ServiceFee       json.RawMessage   `json:"service_fee"`
	Total            json.RawMessage   `json:"total"`
	ShipToCountry    string            `json:"ship_to_country"`
	ShipToPostalCode string            `json:"ship_to_postal_code"`
	CreatedAt        string            `json:"created_at"`
	ExpiresAt        string            `json:"expires_at"`
	Items            []cartItemBody    `json:"items"`
	Metadata         map[string]string `json:"metadata"`
}

type cartItemBody struct {
	ProductURL  string          `json:"product_url"`
	Marketplace string          `json:"marketplace"`
	ProductID   string          `json:"product_id"`
	Title       string          `json:"title"`
	ImageURL    string          `json:"image_url"`
	Quantity    int             `json:"quantity"`
	UnitPrice   json.RawMessage `json:"unit_price"`
	LineTotal   json.RawMessage `json:"line_total"`
	UpstreamID  string          `json:"upstream_id"`
	Variation   string          `json:"variation"`
	Listing     string          `json:"listing"`
}

type cartItemReq struct {
	ProductURL string `json:"product_url"`
	Quantity   int    `json:"quantity"`
}

func cartJSON(country string, items ...cartItemReq) string {
	b, _ := json.Marshal(map[string]any{"items": items, "ship_to_country": country})
	return string(b)
}

const (
	amazonURL = "https://www.amazon.com/dp/B07XJ8C8F5"
	ebayURL   = "https://www.ebay.com/itm/123456789012"
	shortURL  = "https://amzn.to/3xYzAbC"
)

// createCart posts a cart that must succeed and returns it decoded.
func createCart(t *testing.T, e *env, key, body string) (cartBody, response) {
	t.Helper()
	r := e.post(t, "/v1/carts", key, body)
	require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
	var got cartResponse
	decodeStrict(t, r.body, &got)
	return got.Cart, r
}

func TestCreateCart(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		key := e.key(t, "acme", models.ModeTest, models.TierFree)

		tests := []struct {
			name        string
			country     string
			wantCountry string
			items       []cartItemReq
		}{
			{"two marketplaces to the US", "US", "US", []cartItemReq{{amazonURL, 2}, {ebayURL, 1}}},
			{"lowercase country is normalised", "us", "US", []cartItemReq{{ebayURL, 3}, {amazonURL, 1}}},
			{"short link to Germany", "de", "DE", []cartItemReq{{shortURL, 1}, {ebayURL, 10}}},
			{"destination without a pricing row", "BR", "BR", []cartItemReq{{amazonURL, 1}}},
			{"twenty items", "GB", "GB", twentyItems()},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cart, r := createCart(t, e, key, cartJSON(tt.country, tt.items...))
				assert.NotEmpty(t, r.header.Get("X-Request-Id"))

				assert.NotEmpty(t, cart.ID)
				assert.Equal(t, "ready", cart.Status)
				assert.Equal(t, "USD", cart.Currency)
				assert.Equal(t, tt.wantCountry, cart.ShipToCountry)

				subtotal := amount(t, "subtotal", cart.Subtotal)
				shipping := amount(t, "shipping", cart.Shipping)
				tax := amount(t, "tax", cart.Tax)
				fee := amount(t, "service_fee", cart.ServiceFee)
				total := amount(t, "total", cart.Total)
				sum := subtotal.Add(shipping).Add(tax).Add(fee)
				assert.Truef(t, total.Equal(sum), "total %s != subtotal+shipping+tax+service_fee = %s", total, sum)

				// Items come back in request order, priced like the preview.
				require.Len(t, cart.Items, len(tt.items))
				lines := make([]models.CartLine, len(tt.items))
				linesSum := decimal.Zero
				for i, it := range cart.Items {
					p := sandboxProduct(t, tt.items[i].ProductURL)
					lines[i] = models.CartLine{Product: p, Quantity: tt.items[i].Quantity}
					assert.Equal(t, p.ProductURL, it.ProductURL, "items[%d].product_url", i)
					assert.Equal(t, string(p.Marketplace), it.Marketplace, "items[%d].marketplace", i)
					assert.Equal(t, p.ID, it.ProductID, "items[%d].product_id", i)
					assert.Equal(t, p.Title, it.Title, "items[%d].title", i)
					assert.Equal(t, p.ImageURL, it.ImageURL, "items[%d].image_url", i)
					assert.Equal(t, tt.items[i].Quantity, it.Quantity, "items[%d].quantity", i)
					unit := amount(t, fmt.Sprintf("items[%d].unit_price", i), it.UnitPrice)
					line := amount(t, fmt.Sprintf("items[%d].line_total", i), it.LineTotal)
					assert.Truef(t, unit.Equal(p.Price), "items[%d].unit_price %s, want %s", i, unit, p.Price)
					wantLine := unit.Mul(decimal.NewFromInt(int64(it.Quantity)))
					assert.Truef(t, line.Equal(wantLine), "items[%d].line_total %s, want %s", i, line, wantLine)
					linesSum = linesSum.Add(line)
				}
				assert.Truef(t, subtotal.Equal(linesSum), "subtotal %s != sum of line totals %s", subtotal, linesSum)

				// The amounts are the configured pricing rules' quote.
				want, err := models.DefaultPricingRules().Quote(tt.wantCountry, lines)
				require.NoError(t, err)
				for _, c := range []struct {
					name      string
					got, want decimal.Decimal
				}{
					{"subtotal", subtotal, want.Subtotal}, {"shipping", shipping, want.Shipping},
					{"tax", tax, want.Tax}, {"service_fee", fee, want.ServiceFee}, {"total", total, want.Total},
				} {
					assert.Truef(t, c.got.Equal(c.want), "%s %s, want %s", c.name, c.got, c.want)
				}

				created, err := time.Parse(time.RFC3339, cart.CreatedAt)
				require.NoError(t, err)
				expires, err := time.Parse(time.RFC3339, cart.ExpiresAt)
				require.NoError(t, err)
				assert.True(t, strings.HasSuffix(cart.CreatedAt, "Z") && strings.HasSuffix(cart.ExpiresAt, "Z"), "UTC timestamps")
				now := e.clock.Now()
				assert.Falsef(t, created.After(now), "created_at %s is after the clock's %s", created, now)
				assert.Lessf(t, now.Sub(created), time.Second, "created_at %s is not the clock's %s", created, now)
				assert.Equal(t, testCartTTL, expires.Sub(created), "expires_at is created_at + 30 min")
			})
		}

		t.Run("each cart has its own id", func(t *testing.T) {
			body := cartJSON("US", cartItemReq{amazonURL, 1})
			a, _ := createCart(t, e, key, body)
			b, _ := createCart(t, e, key, body)
			assert.NotEqual(t, a.ID, b.ID)
		})

		t.Run("items match the preview", func(t *testing.T) {
			cart, _ := createCart(t, e, key, cartJSON("US", cartItemReq{shortURL, 1}, cartItemReq{ebayURL, 1}))
			for i, link := range []string{shortURL, ebayURL} {
				r := e.post(t, "/v1/products/preview", key, previewBody(link))
				require.Equal(t, http.StatusOK, r.status)
				var p productResponse
				decodeStrict(t, r.body, &p)
				it := cart.Items[i]
				assert.Equal(t, p.Product.ProductURL, it.ProductURL)
				assert.Equal(t, p.Product.Title, it.Title)
				assert.Equal(t, p.Product.ImageURL, it.ImageURL)
				assert.Equal(t, p.Product.Marketplace, it.Marketplace)
				assert.Equal(t, string(p.Product.Price), string(it.UnitPrice))
			}
		})

		t.Run("postal code is kept", func(t *testing.T) {
			cart, _ := createCart(t, e, key, `{"items":[{"product_url":"`+amazonURL+`","quantity":1}],"ship_to_country":"US","ship_to_postal_code":"94105"}`)
			assert.Equal(t, "94105", cart.ShipToPostalCode)
		})
	})
}

func twentyItems() []cartItemReq {
	items := make([]cartItemReq, models.MaxCartItems)
	for i := range items {
		items[i] = cartItemReq{fmt.Sprintf("https://www.ebay.com/itm/1000000000%02d", i), 1}
	}
	return items
}

// cartErrorCase is a cart request that must fail with the contract's
// error body; message is checked exactly when the contract fixes it.
type cartErrorCase struct {
	name    string
	body    string
	status  int
	code    models.Code
	field   string
	message string
}

func TestCreateCartErrors(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		key := e.key(t, "acme", models.ModeTest, models.TierFree)
		item := `{"product_url":"` + amazonURL + `","quantity":1}`
		withItems := func(items string) string { return `{"items":` + items + `,"ship_to_country":"US"}` }
		tooMany := withItems(`[` + strings.TrimSuffix(strings.Repeat(item+",", models.MaxCartItems+1), ",") + `]`)

		tests := []cartErrorCase{
			// Shape of the request.
			{name: "empty body", body: "", status: 400, code: models.CodeInvalidRequest},
			{name: "malformed JSON", body: `{"items":[`, status: 400, code: models.CodeInvalidRequest},
			{name: "array body", body: `[` + item + `]`, status: 400, code: models.CodeInvalidRequest},
			{name: "unknown top-level field", body: `{"items":[` + item + `],"ship_to_country":"US","coupon":"X"}`, status: 400, code: models.CodeInvalidRequest, field: "coupon"},
			{name: "unknown item field", body: withItems(`[{"product_url":"` + amazonURL + `","quantity":1,"qty":2}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].qty"},
			{name: "item is not an object", body: withItems(`[` + item + `,5]`), status: 400, code: models.CodeInvalidRequest, field: "items[1]"},
			{name: "trailing garbage", body: withItems(`[`+item+`]`) + `x`, status: 400, code: models.CodeInvalidRequest},

			// items.
			{name: "missing items", body: `{"ship_to_country":"US"}`, status: 400, code: models.CodeInvalidRequest, field: "items"},
			{name: "null items", body: withItems(`null`), status: 400, code: models.CodeInvalidRequest, field: "items"},
			{name: "empty items", body: withItems(`[]`), status: 400, code: models.CodeInvalidRequest, field: "items"},
			{name: "21 items", body: tooMany, status: 400, code: models.CodeInvalidRequest, field: "items"},
			{name: "items is an object", body: withItems(item), status: 400, code: models.CodeInvalidRequest, field: "items"},
			{name: "missing product_url", body: withItems(`[{"quantity":1}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].product_url"},
			{name: "empty product_url", body: withItems(`[` + item + `,{"product_url":"","quantity":1}]`), status: 400, code: models.CodeInvalidRequest, field: "items[1].product_url"},
			{name: "missing quantity", body: withItems(`[{"product_url":"` + amazonURL + `"}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].quantity"},
			{name: "null quantity", body: withItems(`[{"product_url":"` + amazonURL + `","quantity":null}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].quantity"},
			{name: "quantity 0", body: withItems(`[{"product_url":"` + amazonURL + `","quantity":0}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].quantity"},
			{name: "quantity -1", body: withItems(`[{"product_url":"` + amazonURL + `","quantity":-1}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].quantity"},
			{name: "quantity 11", body: withItems(`[` + item + `,{"product_url":"` + ebayURL + `","quantity":11}]`), status: 400, code: models.CodeInvalidRequest, field: "items[1].quantity"},
			{name: "quantity 1.5", body: withItems(`[{"product_url":"` + amazonURL + `","quantity":1.5}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].quantity"},
			{name: "quantity 1.5 in the second item", body: withItems(`[` + item + `,{"product_url":"` + ebayURL + `","quantity":1.5}]`), status: 400, code: models.CodeInvalidRequest, field: "items[1].quantity"},
			{name: `quantity "2"`, body: withItems(`[{"product_url":"` + amazonURL + `","quantity":"2"}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].quantity"},
			{name: "quantity 1e30", body: withItems(`[{"product_url":"` + amazonURL + `","quantity":1e30}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].quantity"},
			{name: "product_url is a number", body: withItems(`[{"product_url":5,"quantity":1}]`), status: 400, code: models.CodeInvalidRequest, field: "items[0].product_url"},

			// ship_to_country.
			{name: "missing ship_to_country", body: `{"items":[` + item + `]}`, status: 400, code: models.CodeInvalidRequest, field: "ship_to_country"},
			{name: "empty ship_to_country", body: `{"items":[` + item + `],"ship_to_country":""}`, status: 400, code: models.CodeInvalidRequest, field: "ship_to_country"},
			{name: "alpha-3 ship_to_country", body: `{"items":[` + item + `],"ship_to_country":"USA"}`, status: 400, code: models.CodeInvalidRequest, field: "ship_to_country"},
			{name: "unassigned ship_to_country", body: `{"items":[` + item + `],"ship_to_country":"XX"}`, status: 400, code: models.CodeInvalidRequest, field: "ship_to_country"},
			{name: "country name", body: `{"items":[` + item + `],"ship_to_country":"Germany"}`, status: 400, code: models.CodeInvalidRequest, field: "ship_to_country"},
			{name: "numeric ship_to_country", body: `{"items":[` + item + `],"ship_to_country":840}`, status: 400, code: models.CodeInvalidRequest, field: "ship_to_country"},

			// Product links.
			{name: "bad product url in the second item", body: withItems(`[` + item + `,{"product_url":"https://amazon.com.evil.com/dp/B07XJ8C8F5","quantity":1}]`), status: 400, code: models.CodeInvalidURL, field: "items[1].product_url"},
			{name: "non-marketplace product url", body: withItems(`[{"product_url":"https://example.com/dp/B07XJ8C8F5","quantity":1}]`), status: 400, code: models.CodeInvalidURL, field: "items[0].product_url"},
			{
				name:   "unavailable amazon product",
				body:   withItems(`[` + item + `,{"product_url":"https://www.amazon.com/dp/` + sandbox.UnavailableASIN + `","quantity":1}]`),
				status: 422, code: models.CodeProductUnavailable, field: "items[1].product_url",
				message: "One or more products unavailable: items[1]: Product is unavailable or removed",
			},
			{
				name:   "unavailable ebay product",
				body:   withItems(`[{"product_url":"https://www.ebay.com/itm/` + sandbox.UnavailableEbayItem + `","quantity":2},` + item + `]`),
				status: 422, code: models.CodeProductUnavailable, field: "items[0].product_url",
				message: "One or more products unavailable: items[0]: Product is unavailable or removed",
			},
		}
		for _, cc := range []string{"KP", "IR", "CU", "SY", "kp", " ir "} {
			tests = append(tests, cartErrorCase{
				name: "sanctioned destination " + cc, body: cartJSON(cc, cartItemReq{amazonURL, 1}),
				status: 422, code: models.CodeShippingUnavailable, field: anyField, message: "Cannot ship to destination",
			})
		}
		// The destination is refused before any product is looked up.
		tests = append(tests, cartErrorCase{
			name:   "sanctioned destination with an unavailable product",
			body:   cartJSON("KP", cartItemReq{"https://www.amazon.com/dp/" + sandbox.UnavailableASIN, 1}),
			status: 422, code: models.CodeShippingUnavailable, field: anyField, message: "Cannot ship to destination",
		})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.send(t, request{method: http.MethodPost, path: "/v1/carts", auth: "Bearer " + key, body: tt.body})
				d := requireError(t, r, tt.status, tt.code, tt.field)
				if tt.message != "" {
					assert.Equal(t, tt.message, d.Message)
				}
			})
		}
	})
}

func TestGetCart(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		pro := e.key(t, "acme", models.ModeTest, models.TierPro)
		free := e.key(t, "acme", models.ModeTest, models.TierFree)      // same account, Free plan
		live := e.key(t, "acme", models.ModeLive, models.TierPro)       // same account, other mode
		otherPro := e.key(t, "globex", models.ModeTest, models.TierPro) // another account
		enterprise := e.enterpriseKey(t, "acme", 100)

		created, r := createCart(t, e, pro, cartJSON("us", cartItemReq{amazonURL, 2}, cartItemReq{ebayURL, 1}))
		var createdRaw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(r.body, &createdRaw))
		path := "/v1/carts/" + created.ID

		t.Run("pro key reads its own cart", func(t *testing.T) {
			r := e.get(t, path, pro)
			require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			var got cartResponse
			decodeStrict(t, r.body, &got)
			assert.Equal(t, created.ID, got.Cart.ID)
			for _, c := range []struct {
				name      string
				got, want json.RawMessage
			}{
				{"subtotal", got.Cart.Subtotal, created.Subtotal}, {"shipping", got.Cart.Shipping, created.Shipping},
				{"tax", got.Cart.Tax, created.Tax}, {"service_fee", got.Cart.ServiceFee, created.ServiceFee},
				{"total", got.Cart.Total, created.Total},
			} {
				assert.Equal(t, string(c.want), string(c.got), c.name)
			}
			// The whole cart reads back as it was created.
			var gotRaw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(r.body, &gotRaw))
			assert.JSONEq(t, string(createdRaw["cart"]), string(gotRaw["cart"]))
		})
		t.Run("enterprise key of the same account reads it", func(t *testing.T) {
			r := e.get(t, path, enterprise)
			require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
		})
		t.Run("free key gets plan_required", func(t *testing.T) {
			requireError(t, e.get(t, path, free), http.StatusForbidden, models.CodePlanRequired, "")
		})
		t.Run("free key gets plan_required even for an unknown id", func(t *testing.T) {
			requireError(t, e.get(t, "/v1/carts/crt_unknown", free), http.StatusForbidden, models.CodePlanRequired, "")
		})
		t.Run("another account's pro key gets cart_not_found", func(t *testing.T) {
			d := requireError(t, e.get(t, path, otherPro), http.StatusNotFound, models.CodeCartNotFound, "")
			assert.Equal(t, "Cart does not exist or expired", d.Message)
		})
		t.Run("same account's live key gets cart_not_found", func(t *testing.T) {
			requireError(t, e.get(t, path, live), http.StatusNotFound, models.CodeCartNotFound, "")
		})
		t.Run("unknown id gets cart_not_found", func(t *testing.T) {
			requireError(t, e.get(t, "/v1/carts/crt_000000000000000000000000", pro), http.StatusNotFound, models.CodeCartNotFound, "")
			requireError(t, e.get(t, "/v1/carts/"+created.ID+"x", pro), http.StatusNotFound, models.CodeCartNotFound, "")
		})
		t.Run("an expired cart reads as expired", func(t *testing.T) {
			e.clock.Advance(testCartTTL)
			r := e.get(t, path, pro)
			require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
			var got cartResponse
			decodeStrict(t, r.body, &got)
			assert.Equal(t, "expired", got.Cart.Status)
			assert.Equal(t, created.ExpiresAt, got.Cart.ExpiresAt)
		})
	})
}

// liveLikeCatalog answers like a live catalog (the sandbox's products with
// a listing snapshot) and records the refs it was asked for.
type liveLikeCatalog struct {
	mu   sync.Mutex
	refs []models.ProductRef
}

func (c *liveLikeCatalog) Product(ctx context.Context, ref models.ProductRef) (models.Product, error) {
	c.mu.Lock()
	c.refs = append(c.refs, ref)
	c.mu.Unlock()
	p, err := sandbox.NewCatalog().Product(ctx, ref)
	p.UpstreamID, p.Listing = "up-"+p.ID, "Seller of "+p.ID
	return p, err
}

func TestCreateLiveCart(t *testing.T) {
	cat := &liveLikeCatalog{}
	e := newEnv(t, sqlstore.DialectSQLite, withCatalogs(map[models.Mode]api.Catalog{models.ModeLive: cat}))
	key := e.key(t, "acme", models.ModeLive, models.TierPro)

	c, _ := createCart(t, e, key, cartJSON("US", cartItemReq{amazonURL, 1}))
	require.Len(t, c.Items, 1)
	assert.Equal(t, "up-B07XJ8C8F5", c.Items[0].UpstreamID, "the listing snapshot is kept")
	assert.Equal(t, "Seller of B07XJ8C8F5", c.Items[0].Listing)
	require.NotEmpty(t, cat.refs)
	assert.Equal(t, "US", cat.refs[0].ShipTo, "the catalog is asked for the cart's destination")

	tests := []errorCase{
		{"a storefront the buying provider cannot buy from", cartJSON("US", cartItemReq{"https://www.amazon.de/dp/B07XJ8C8F5", 1}),
			422, models.CodeProductUnavailable, "items[0].product_url"},
		{"a destination it does not deliver to", cartJSON("DE", cartItemReq{amazonURL, 1}),
			422, models.CodeShippingUnavailable, "ship_to_country"},
		{"two marketplaces in one cart", cartJSON("US", cartItemReq{amazonURL, 1}, cartItemReq{"https://www.ebay.com/itm/123456789012", 1}),
			422, models.CodeProductUnavailable, "items[1].product_url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.post(t, "/v1/carts", key, tc.body)
			requireError(t, r, tc.status, tc.code, tc.field)
		})
	}
}
