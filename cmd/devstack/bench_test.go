package main

// Benchmarks of live payment handling over the real `devstack dev` stack
// (embedded Temporal, worker, API, the Stellar watcher reading a Horizon
// test server). docs/benchmarks.md has the figures and how to run them.

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/activities/stellar"
	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// benchStack starts a live stack for a benchmark, quiet and with a payment
// window no benchmark outlasts.
func benchStack(b *testing.B, dialect string) *liveStack {
	s := startLive(b, dialect, map[string]string{
		"MEMOCART_PAYMENT_WINDOW":     "2h",
		"MEMOCART_SANDBOX_STEP_DELAY": "0s",
		"MEMOCART_LOG_LEVEL":          "error",
	})
	// Polling every 2 ms is far past a Pro key's 600 requests a minute.
	s.liveKey = s.createKey("dev", "live", "enterprise", "--per-minute", "600000")
	return s
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
				counts, err := s.store.PaymentCounts(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if counts[sqlstore.PaymentMatched] >= int64(b.N) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "payments/s")
		})
	}
}

// countingSignaler stands in for Temporal in BenchmarkWatcherAlone.
type countingSignaler struct{ n atomic.Int64 }

func (c *countingSignaler) PaymentMatched(context.Context, string, models.Payment) error {
	c.n.Add(1)
	return nil
}

// BenchmarkWatcherAlone measures the watcher's own capacity: b.N payments
// published at once on the Horizon test server, read (stream and pages),
// stored with the cursor, looked up by memo and handed to a signaller that
// only counts, against a real database (SQLite file or Postgres). The
// difference from BenchmarkWatcherIngest is what the Temporal server and
// the order workflows cost when they share the machine.
func BenchmarkWatcherAlone(b *testing.B) {
	for _, d := range dialects() {
		b.Run(d, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st := sqlstoretest.Open(b, d)
			acct, err := st.EnsureAccount(ctx, "bench", time.Now())
			if err != nil {
				b.Fatal(err)
			}
			// 50 open orders the payments' memos name.
			numbers := make([]string, 50)
			for i := range numbers {
				cartID := fmt.Sprintf("crt_bench%02d", i)
				now := time.Now().UTC()
				d := decimal.RequireFromString
				if err := st.CreateCart(ctx, models.Cart{ID: cartID, AccountID: acct.ID, Mode: models.ModeLive, Status: models.CartReady, ShipToCountry: "US",
					Quote:     models.Quote{Currency: "USD", Subtotal: d("1"), Shipping: d("0"), Tax: d("0"), ServiceFee: d("0"), Total: d("1")},
					CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
					b.Fatal(err)
				}
				o, _, err := st.CreateOrder(ctx, models.OrderRequest{AccountID: acct.ID, Mode: models.ModeLive, CartID: cartID, RequestHash: "h", Now: now,
					Build: func(c models.Cart) (models.Order, error) {
						return models.Order{ID: "ord_" + cartID, AccountID: acct.ID, Mode: models.ModeLive, CartID: cartID, Status: models.OrderCreated,
							PaymentStatus: models.PaymentPending, CustomerEmail: "a@example.com", Address: models.ShippingAddress{Name: "A", Line1: "1", City: "C", Country: "US"},
							Currency: "USD", Total: c.Total, PaymentAsset: "USDC", PaymentAmount: c.Total, PaymentAddress: liveAccount,
							PaymentExpiresAt: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}, nil
					},
					NewNumber: func() (string, error) { return models.NewOrderNumber(rand.Reader) }})
				if err != nil {
					b.Fatal(err)
				}
				numbers[i] = o.Number
			}
			hz := horizontest.New(liveAccount)
			defer hz.Close()
			sig := &countingSignaler{}
			matcher, err := checkout.NewMatcher(st, sig, nil)
			if err != nil {
				b.Fatal(err)
			}
			w, err := stellar.NewWatcher(stellar.Config{HorizonURL: hz.URL, Network: "testnet", Account: liveAccount, USDCIssuer: usdcIssuer, HandleConcurrency: 16},
				&http.Client{}, st, matcher.Handle, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx, nil) }()
			for {
				if c, _ := st.StellarCursor(ctx, "testnet", liveAccount); c != "" {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				hz.AddPayment(horizontest.Payment{From: payer, To: liveAccount, AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: usdcIssuer,
					Amount: "0.0000001", MemoType: "text", Memo: numbers[i%len(numbers)]})
			}
			for sig.n.Load() < int64(b.N) {
				time.Sleep(2 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "payments/s")
			cancel()
			<-done
		})
	}
}

// BenchmarkWaitingOrderMemory creates b.N test orders that wait for their
// payment, 16 at a time, then reports the whole dev process's resident
// memory (RSS, after a GC) and Go heap: embedded Temporal server, worker,
// API and the test client together. The worker's sticky cache is a
// per-process setting, so compare sizes in separate runs:
//
//	MEMOCART_WORKER_STICKY_CACHE_SIZE=10000 go test -run '^$' -bench WaitingOrderMemory -benchtime=2000x . (in cmd/devstack)
//	MEMOCART_WORKER_STICKY_CACHE_SIZE=500   go test -run '^$' -bench WaitingOrderMemory -benchtime=2000x . (in cmd/devstack)
func BenchmarkWaitingOrderMemory(b *testing.B) {
	overrides := map[string]string{"MEMOCART_LOG_LEVEL": "error"}
	if v := os.Getenv("MEMOCART_WORKER_STICKY_CACHE_SIZE"); v != "" {
		overrides["MEMOCART_WORKER_STICKY_CACHE_SIZE"] = v
	}
	s := startDev(b, "sqlite", overrides)
	key := s.createKey("bench", "test", "enterprise", "--per-minute", "600000")
	before := rssMB(b)
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				s.newOrder(key, product)
			}
		}()
	}
	wg.Wait()
	elapsed := b.Elapsed()
	b.StopTimer()
	// Let the last workflow tasks run, then measure.
	time.Sleep(3 * time.Second)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(rssMB(b), "rss-MB")
	b.ReportMetric(before, "rss-before-MB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
}

// rssMB is this process's resident set size in MiB.
func rssMB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			if _, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb); err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
