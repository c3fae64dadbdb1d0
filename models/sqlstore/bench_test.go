package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// BenchmarkOrderForAccount is the read behind GET /v1/orders/{ref}: the
// order by number with its steps and items (and, while it waits for
// payment, the payments being credited). Run it with -benchmem: the
// allocations are what the API pays per GET besides the round trips.
func BenchmarkOrderForAccount(b *testing.B) {
	for _, dialect := range sqlstoretest.Dialects() {
		b.Run(dialect, func(b *testing.B) {
			st := sqlstoretest.Open(b, dialect)
			ctx := context.Background()
			acct, err := st.EnsureAccount(ctx, "bench", t0)
			if err != nil {
				b.Fatal(err)
			}
			d := decimal.RequireFromString
			if err := st.CreateCart(ctx, models.Cart{
				ID: "crt_bench", AccountID: acct.ID, Mode: models.ModeTest, Status: models.CartReady, ShipToCountry: "US",
				Quote: models.Quote{Currency: "USD", Subtotal: d("10.00"), Shipping: d("1.00"), Tax: d("0.50"), ServiceFee: d("1.00"), Total: d("12.50")},
				Items: []models.CartItem{{ProductURL: "https://www.amazon.com/dp/B000000001", Marketplace: models.MarketplaceAmazon,
					ProductID: "B000000001", Title: "x", ImageURL: "y", Quantity: 1, UnitPrice: d("10.00"), LineTotal: d("10.00")}},
				CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
			}); err != nil {
				b.Fatal(err)
			}
			o, _, err := st.CreateOrder(ctx, orderRequest(acct.ID, "crt_bench", "", "h"))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := st.OrderForAccount(ctx, acct.ID, models.ModeTest, o.Number); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	_ = sqlstore.DialectSQLite
}
