package main

// Benchmarks of live payment handling over the real `memocart dev` stack
// (embedded Temporal, worker, API, the Stellar watcher reading a Horizon
// test server). docs/benchmarks.md has the figures and how to run them.

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/memocart/memocart/models/sqlstore"
)

// benchStack starts a live stack for a benchmark, quiet and with a payment
// window no benchmark outlasts.
func benchStack(b *testing.B, dialect string) *liveStack {
	return startLive(b, dialect, map[string]string{
		"MEMOCART_PAYMENT_WINDOW":     "2h",
		"MEMOCART_SANDBOX_STEP_DELAY": "0s",
		"MEMOCART_LOG_LEVEL":          "error",
	})
}

// BenchmarkPaymentToPaid measures, per order, the time from a payment
// appearing in the Horizon stream to GET /v1/orders/{number} reading paid,
// polling every 2 ms. Orders are created before the clock starts. Run with
// -benchtime=500x for 500 orders.
func BenchmarkPaymentToPaid(b *testing.B) {
	for _, d := range dialects() {
		b.Run(d, func(b *testing.B) {
			s := benchStack(b, d)
			orders := make([]map[string]any, b.N)
			for i := range orders {
				orders[i] = s.liveOrder("USDC")
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				number := str(orders[i], "number")
				start := time.Now()
				s.pay(usdc("117.73", number))
				for {
					code, body := s.do(s.liveKey, "GET", "/v1/orders/"+number, nil)
					if code != http.StatusOK {
						b.Fatalf("GET order: %d %v", code, body)
					}
					if st := str(obj(body, "order"), "status"); st != "created" {
						break
					}
					time.Sleep(2 * time.Millisecond)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkWatcherIngest measures how many incoming payments per second
// the watcher reads from Horizon, stores (with its cursor) and matches,
// each one signalled to its order's workflow. b.N payments are published
// at once, spread over 50 open orders (small partial payments, so the
// orders stay open); the clock stops when the last one is matched.
func BenchmarkWatcherIngest(b *testing.B) {
	for _, d := range dialects() {
		b.Run(d, func(b *testing.B) {
			s := benchStack(b, d)
			const nOrders = 50
			numbers := make([]string, nOrders)
			for i := range numbers {
				numbers[i] = str(s.liveOrder("USDC"), "number")
			}
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				s.pay(usdc("0.0000001", numbers[i%nOrders]))
			}
			for {
				done, err := s.store.Payments(ctx, sqlstore.PaymentMatched)
				if err != nil {
					b.Fatal(err)
				}
				if len(done) >= b.N {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "payments/s")
		})
	}
}
