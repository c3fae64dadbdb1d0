package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// productResponse is the contract's Product with price kept raw, so the
// test sees whether it is a JSON number.
type productResponse struct {
	Product struct {
		Marketplace  string          `json:"marketplace"`
		Title        string          `json:"title"`
		ImageURL     string          `json:"image_url"`
		ProductURL   string          `json:"product_url"`
		Currency     string          `json:"currency"`
		Price        json.RawMessage `json:"price"`
		Availability string          `json:"availability"`
	} `json:"product"`
}

// sandboxProduct is what the sandbox catalog knows about a link: the
// oracle for invented titles, images and prices.
func sandboxProduct(t *testing.T, link string) models.Product {
	t.Helper()
	ref, err := models.ParseProductURL(link)
	require.NoError(t, err)
	p, err := sandbox.NewCatalog().Product(context.Background(), ref)
	require.NoError(t, err)
	return p
}

func TestPreviewProduct(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		key := e.key(t, "acme", models.ModeTest, models.TierFree)

		tests := []struct {
			name        string
			url         string
			marketplace string
			productURL  string // canonical
		}{
			{"amazon product page", "https://www.amazon.com/dp/B07XJ8C8F5", "amazon", "https://www.amazon.com/dp/B07XJ8C8F5"},
			{"amazon page with slug, ref and query", "https://www.amazon.de/Some-Slug/dp/B01N5IB20Q/ref=sr_1_1?keywords=x&th=1", "amazon", "https://www.amazon.de/dp/B01N5IB20Q"},
			{"amazon page without www", "https://amazon.co.uk/dp/0141036141", "amazon", "https://www.amazon.co.uk/dp/0141036141"},
			{"amzn.to short link", "https://amzn.to/3xYzAbC", "amazon", "https://www.amazon.com/dp/" + sandbox.ShortLinkASIN("3xYzAbC")},
			{"a.co short link", "https://a.co/d/aB3dE9f", "amazon", "https://www.amazon.com/dp/" + sandbox.ShortLinkASIN("aB3dE9f")},
			{"ebay item page", "https://www.ebay.com/itm/123456789012", "ebay", "https://www.ebay.com/itm/123456789012"},
			{"ebay item page with slug and query", "https://www.ebay.co.uk/itm/Vintage-Lamp/256789012345?hash=item3b", "ebay", "https://www.ebay.co.uk/itm/256789012345"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.post(t, "/v1/products/preview", key, previewBody(tt.url))
				require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
				assert.Contains(t, r.header.Get("Content-Type"), "application/json")
				assert.NotEmpty(t, r.header.Get("X-Request-Id"))

				var got productResponse
				decodeStrict(t, r.body, &got)
				p := got.Product
				want := sandboxProduct(t, tt.url)

				assert.Equal(t, tt.marketplace, p.Marketplace)
				assert.Equal(t, tt.productURL, p.ProductURL)
				assert.Equal(t, want.Title, p.Title)
				assert.NotEmpty(t, p.Title)
				assert.Equal(t, want.ImageURL, p.ImageURL)
				img, err := url.Parse(p.ImageURL)
				if assert.NoError(t, err) {
					assert.Equal(t, "https", img.Scheme, "image_url is an absolute https URL")
					assert.NotEmpty(t, img.Host)
				}
				assert.Equal(t, "USD", p.Currency)
				assert.Equal(t, "in_stock", p.Availability)
				price := amount(t, "price", p.Price)
				assert.Truef(t, price.Equal(want.Price), "price %s, want %s", price, want.Price)
				assert.True(t, price.IsPositive())

				// Same link, same answer.
				again := e.post(t, "/v1/products/preview", key, previewBody(tt.url))
				require.Equal(t, http.StatusOK, again.status)
				assert.Equal(t, string(r.body), string(again.body))
			})
		}

		t.Run("one product whatever the link form", func(t *testing.T) {
			a := e.post(t, "/v1/products/preview", key, previewBody("https://www.amazon.com/dp/B07XJ8C8F5"))
			b := e.post(t, "/v1/products/preview", key, previewBody("https://www.amazon.com/Echo-Dot/dp/b07xj8c8f5/ref=x?tag=y"))
			require.Equal(t, http.StatusOK, a.status)
			require.Equal(t, http.StatusOK, b.status)
			assert.JSONEq(t, string(a.body), string(b.body))
		})

		invalid := []struct{ name, url string }{
			{"other host", "https://example.com/dp/B07XJ8C8F5"},
			{"lookalike suffix host", "https://amazon.com.evil.com/dp/B07XJ8C8F5"},
			{"lookalike prefix host", "https://notamazon.com/dp/B07XJ8C8F5"},
			{"lookalike ebay host", "https://ebay.com.phish.io/itm/123456789012"},
			{"userinfo hiding the host", "https://www.amazon.com@evil.com/dp/B07XJ8C8F5"},
			{"amazon without product id", "https://www.amazon.com/dp/"},
			{"amazon home page", "https://www.amazon.com/"},
			{"amazon malformed id", "https://www.amazon.com/dp/B07"},
			{"ebay without item id", "https://www.ebay.com/itm/"},
			{"ebay non-numeric item id", "https://www.ebay.com/itm/abcdefghijk"},
			{"short link without code", "https://amzn.to/"},
			{"not https", "ftp://www.amazon.com/dp/B07XJ8C8F5"},
			{"not a URL", "definitely not a link"},
			{"non-default port", "https://www.amazon.com:8443/dp/B07XJ8C8F5"},
			{"too long", "https://www.amazon.com/dp/B07XJ8C8F5?q=" + strings.Repeat("x", 3000)},
		}
		for _, tt := range invalid {
			t.Run("invalid_url: "+tt.name, func(t *testing.T) {
				r := e.post(t, "/v1/products/preview", key, previewBody(tt.url))
				d := requireError(t, r, http.StatusBadRequest, models.CodeInvalidURL, anyField)
				assert.Contains(t, d.Message, "not a valid link")
			})
		}

		unavailable := []struct{ name, url string }{
			{"reserved amazon ASIN", "https://www.amazon.com/dp/" + sandbox.UnavailableASIN},
			{"reserved ASIN on another storefront", "https://www.amazon.de/dp/" + sandbox.UnavailableASIN},
			{"reserved ebay item", "https://www.ebay.com/itm/" + sandbox.UnavailableEbayItem},
		}
		for _, tt := range unavailable {
			t.Run("product_unavailable: "+tt.name, func(t *testing.T) {
				r := e.post(t, "/v1/products/preview", key, previewBody(tt.url))
				d := requireError(t, r, http.StatusUnprocessableEntity, models.CodeProductUnavailable, "")
				assert.Equal(t, "Product is unavailable or removed", d.Message)
			})
		}
	})
}

func TestPreviewProductBadRequests(t *testing.T) {
	e := newEnv(t, sqlstore.DialectSQLite)
	key := e.key(t, "acme", models.ModeTest, models.TierFree)
	valid := previewBody(validPreviewURL)

	tests := []struct {
		name  string
		body  string
		field string
	}{
		{"empty body", "", ""},
		{"blank body", "   \n", ""},
		{"empty object", `{}`, "url"},
		{"null url", `{"url":null}`, "url"},
		{"empty url", `{"url":""}`, "url"},
		{"malformed JSON", `{"url":`, ""},
		{"not JSON", `url=https://www.amazon.com/dp/B07XJ8C8F5`, ""},
		{"single quotes", `{'url':'x'}`, ""},
		{"array body", `[]`, ""},
		{"array of objects", `[` + valid + `]`, ""},
		{"string body", `"` + validPreviewURL + `"`, ""},
		{"number body", `5`, ""},
		{"null body", `null`, anyField},
		{"unknown field", `{"ur":"` + validPreviewURL + `"}`, "ur"},
		{"unknown field next to url", `{"url":"` + validPreviewURL + `","extra":1}`, "extra"},
		{"url is a number", `{"url": 5}`, "url"},
		{"url is an object", `{"url": {"href":"x"}}`, "url"},
		{"url is an array", `{"url": ["` + validPreviewURL + `"]}`, "url"},
		{"trailing garbage", valid + ` garbage`, ""},
		{"two objects", valid + valid, ""},
		{"trailing brace", valid + `}`, ""},
		{"oversized url", `{"url":"https://www.amazon.com/dp/B07XJ8C8F5?q=` + strings.Repeat("a", 70<<10) + `"}`, ""},
		{"valid object padded past 64 KiB", valid + strings.Repeat(" ", 70<<10), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.send(t, request{method: http.MethodPost, path: "/v1/products/preview", auth: "Bearer " + key, body: tt.body})
			requireError(t, r, http.StatusBadRequest, models.CodeInvalidRequest, tt.field)
		})
	}

	t.Run("exactly 64 KiB is accepted", func(t *testing.T) {
		body := valid + strings.Repeat(" ", 64<<10-len(valid))
		r := e.send(t, request{method: http.MethodPost, path: "/v1/products/preview", auth: "Bearer " + key, body: body})
		assert.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	})
}

func TestLiveModeWithoutLiveCatalog(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		live := e.key(t, "acme", models.ModeLive, models.TierPro)
		tests := []struct {
			name string
			path string
			body string
		}{
			{"preview", "/v1/products/preview", previewBody(validPreviewURL)},
			{"cart", "/v1/carts", `{"items":[{"product_url":"` + validPreviewURL + `","quantity":1}],"ship_to_country":"US"}`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.post(t, tt.path, live, tt.body)
				requireError(t, r, http.StatusServiceUnavailable, models.CodeLiveUnavailable, "")
				assert.NotContains(t, string(r.body), "Sandbox", "never sandbox data for a live key")
				assert.NotContains(t, string(r.body), "sandbox.memocart.dev")
			})
		}
	})
}
