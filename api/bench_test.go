package api_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// BenchmarkGetOrder is GET /v1/orders/{number} through the whole handler
// chain (request id, access log, deadline, authentication, rate limit, the
// read, JSON), in process, with the key cache on (the default) and off.
// The ratio of the two is what reading the key from the database on every
// request cost. Run with -benchmem; see docs/benchmarks.md.
func BenchmarkGetOrder(b *testing.B) {
	for _, dialect := range sqlstoretest.Dialects() {
		for _, c := range []struct {
			name string
			ttl  time.Duration
		}{{"key-cache", 0}, {"no-key-cache", -1}} {
			b.Run(dialect+"/"+c.name, func(b *testing.B) {
				st := sqlstoretest.Open(b, dialect)
				srv := newTestServer(b, api.Config{
					KeyPrefix: "mc", PublicURL: ordersPublicURL, KeyCacheTTL: c.ttl,
					Payments: map[models.Mode]api.PaymentSetup{models.ModeTest: {Address: sandboxPayTo, Network: "sandbox"}},
				}, api.Deps{
					Store:     st,
					Limiter:   ratelimit.NewMemory(nil),
					Workflows: &recordingWorkflows{},
				})
				key := benchKey(b, st)
				number := benchOrder(b, srv.Handler(), key)
				req := httptest.NewRequest(http.MethodGet, "/v1/orders/"+number, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					w := httptest.NewRecorder()
					srv.Handler().ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("GET: %d %s", w.Code, w.Body)
					}
				}
			})
		}
	}
}

// benchKey is an Enterprise test key whose budget no benchmark exhausts.
func benchKey(b *testing.B, st *sqlstore.Store) string {
	ctx := context.Background()
	acct, err := st.EnsureAccount(ctx, "bench", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	secret, err := models.NewAPIKeySecret("mc", models.ModeTest, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.ModeTest,
		Tier: models.TierEnterprise, PerMinute: models.MaxPerMinute, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	return secret
}

// benchOrder creates a cart and an order through the API; it returns the
// order's number.
func benchOrder(b *testing.B, h http.Handler, key string) string {
	post := func(path, body string, out any) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			b.Fatalf("POST %s: %d %s", path, w.Code, w.Body)
		}
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			b.Fatal(err)
		}
	}
	var cart struct{ Cart struct{ ID string } }
	post("/v1/carts", cartJSON("US", cartItemReq{ProductURL: amazonURL, Quantity: 1}), &cart)
	var order struct{ Order struct{ Number string } }
	post("/v1/orders", orderBody(cart.Cart.ID), &order)
	return order.Order.Number
}
