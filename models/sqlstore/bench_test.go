package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
			number := benchOrder(b, st, acct.ID, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := st.OrderForAccount(ctx, acct.ID, models.ModeTest, number); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	_ = sqlstore.DialectSQLite
}

// BenchmarkListOrders is GET /v1/orders on Postgres with an account of
// MEMOCART_BENCH_LIST_ORDERS orders (default 200,000; 1000000 for the
// million of issue 10, which takes minutes to seed): a first page, a page
// deep in the list, and a page of a rare status. A page costs the same
// whatever the account's size: it is a range read of a list index.
func BenchmarkListOrders(b *testing.B) {
	n := benchOrderCount(b, "MEMOCART_BENCH_LIST_ORDERS", 200000)
	ctx := context.Background()
	st, raw, acct := benchPostgres(b, models.OrderCreated)
	start := time.Now()
	seedOrders(b, raw, "ord_tmpl", n, "t.account_id")
	seedStepsAndPayments(b, raw)
	if _, err := raw.Exec("ANALYZE"); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d orders in %s", n, time.Since(start).Round(time.Second))

	deep := fmt.Sprintf("ord_tmpl_%d", n*9/10)
	for name, q := range map[string]models.OrderListQuery{
		"first_page_10":    {Limit: 10},
		"deep_page_100":    {Limit: 100, StartingAfter: deep},
		"failed_page_100":  {Limit: 100, Status: models.OrderFailed},
		"created_range_10": {Limit: 10, CreatedGTE: ptrTime(t0.Add(-time.Duration(n/2) * time.Second))},
	} {
		q.AccountID, q.Mode = acct.ID, models.ModeTest
		b.Run(fmt.Sprintf("%s/orders=%d", name, n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, _, err := st.ListOrders(ctx, q)
				if err != nil || len(page) == 0 {
					b.Fatalf("page of %d, %v", len(page), err)
				}
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// benchOrderCount is the orders a benchmark seeds: the environment's
// variable, at least 1000, else def.
func benchOrderCount(b *testing.B, env string, def int) int {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1000 {
		b.Fatalf("%s=%q: want a number of orders, at least 1000", env, v)
	}
	return n
}

// benchPostgres is a fresh migrated Postgres store with one account and
// its template order "ord_tmpl" (a cart, an order at status) for
// seedOrders to copy, and a raw connection to seed with.
func benchPostgres(b *testing.B, status models.OrderStatus) (*sqlstore.Store, *sql.DB, models.Account) {
	b.Helper()
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.DialectPostgres) {
		b.Fatalf("%s is not set: this benchmark needs Postgres", sqlstoretest.EnvPostgresURL)
	}
	ctx := context.Background()
	dsn := sqlstoretest.DSN(b, sqlstore.DialectPostgres)
	st, err := sqlstore.Open(ctx, dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	st.SetEventRenderer(sqlstoretest.Renderer{})
	b.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	acct, err := st.EnsureAccount(ctx, "bench", t0)
	if err != nil {
		b.Fatal(err)
	}
	seedListOrder(b, st, acct.ID, models.ModeTest, "ord_tmpl", t0, status)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = raw.Close() })
	return st, raw, acct
}

// BenchmarkOrderForAccountParallel is the same read from 16 goroutines per
// processor, as the API serves it under load, on Postgres. It reports the
// server sessions opened per read (pg_stat_database.sessions): a pool that
// closes connections it will need again a moment later makes every such
// read pay a backend's start-up, which costs Postgres far more than the
// query.
func BenchmarkOrderForAccountParallel(b *testing.B) {
	dsn := sqlstoretest.DSN(b, sqlstore.DialectPostgres)
	st, err := sqlstore.Open(context.Background(), dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	st.SetEventRenderer(sqlstoretest.Renderer{})
	b.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	acct, err := st.EnsureAccount(ctx, "bench", t0)
	if err != nil {
		b.Fatal(err)
	}
	const orders = 200
	numbers := make([]string, orders)
	for i := range numbers {
		numbers[i] = benchOrder(b, st, acct.ID, i)
	}
	stats, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	sessions := func() int64 {
		var n int64
		if err := stats.QueryRow("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	b.SetParallelism(16)
	b.ReportAllocs()
	before := sessions()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, err := st.OrderForAccount(ctx, acct.ID, models.ModeTest, numbers[i%orders]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// The statistics collector publishes at most every second or so.
	time.Sleep(1500 * time.Millisecond)
	b.ReportMetric(float64(sessions()-before)/float64(b.N), "sessions/op")
}

// benchOrder stores the i-th cart of acct and its order, and returns the
// order's number.
func benchOrder(b *testing.B, st *sqlstore.Store, acct string, i int) string {
	b.Helper()
	ctx := context.Background()
	d := decimal.RequireFromString
	cartID := fmt.Sprintf("crt_bench%06d", i)
	if err := st.CreateCart(ctx, models.Cart{
		ID: cartID, AccountID: acct, Mode: models.ModeTest, Status: models.CartReady, ShipToCountry: "US",
		Quote: models.Quote{Currency: "USD", Subtotal: d("10.00"), Shipping: d("1.00"), Tax: d("0.50"), ServiceFee: d("1.00"), Total: d("12.50")},
		Items: []models.CartItem{{ProductURL: "https://www.amazon.com/dp/B000000001", Marketplace: models.MarketplaceAmazon,
			ProductID: "B000000001", Title: "x", ImageURL: "y", Quantity: 1, UnitPrice: d("10.00"), LineTotal: d("10.00")}},
		CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
	}); err != nil {
		b.Fatal(err)
	}
	o, _, err := st.CreateOrder(ctx, orderRequest(acct, cartID, "", "h"))
	if err != nil {
		b.Fatal(err)
	}
	return o.Number
}

// BenchmarkReadBooks is the check of the books (memocart reconcile, and
// the metrics' check every 15 minutes) on Postgres at
// MEMOCART_BENCH_BOOKS_ORDERS orders (default 100,000), each paid by one
// payment, one in fifty failed with its money owed by hand. Beside it,
// scan is the reference: the same payments and orders read in one query
// each into nothing, the least a check of every row can cost. peak-MB is
// the most heap the check held above what it started with (sampled every
// millisecond): a page of rows at a time, whatever the table sizes.
func BenchmarkReadBooks(b *testing.B) {
	n := benchOrderCount(b, "MEMOCART_BENCH_BOOKS_ORDERS", 100000)
	ctx := context.Background()
	st, raw, _ := benchPostgres(b, models.OrderDelivered)
	seedOrders(b, raw, "ord_tmpl", n, "t.account_id")
	for _, q := range []string{
		`UPDATE orders SET payment_status = 'refund_due' WHERE status = 'failed'`,
		`INSERT INTO payments (id, mode, asset, amount, memo, received_at, order_id, status, signaled_at, created_at)
			SELECT 'pay_' || o.id, o.mode, o.payment_asset, o.amount_received, o.number, o.created_at, o.id, 'matched', o.created_at, o.created_at
			FROM orders o`,
		`ANALYZE`,
	} {
		if _, err := raw.Exec(q); err != nil {
			b.Fatal(err)
		}
	}

	b.Run(fmt.Sprintf("check/orders=%d", n), func(b *testing.B) {
		var peak uint64
		for b.Loop() {
			k := models.NewBookkeeper()
			stop := heapPeak(&peak)
			err := st.ReadBooks(ctx, "", k)
			stop()
			if err != nil {
				b.Fatal(err)
			}
			if _, found := k.Finish(); len(found) > 0 {
				b.Fatalf("the seeded books do not balance: %d discrepancies, first %+v", len(found), found[0])
			}
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
	})
	b.Run(fmt.Sprintf("scan/orders=%d", n), func(b *testing.B) {
		for b.Loop() {
			for _, q := range []string{"SELECT id, amount, status FROM payments", "SELECT id, amount_received, status FROM orders"} {
				rows, err := raw.Query(q)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				rows.Close()
			}
		}
	})
}

// heapPeak samples the live heap every millisecond until stop is called,
// raising *peak to the most it held above its size at the start.
func heapPeak(peak *uint64) (stop func()) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > *peak {
				*peak = m.HeapAlloc - base
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// BenchmarkPruneEvents deletes MEMOCART_BENCH_PRUNE_EVENTS events
// (default 1,000,000; bodies of about 2 kB, one in ten with a delivery
// attempt), all past their retention, as the api's reconciler does: 1,000
// a transaction until none is left. batch-ms is the slowest batch (each
// holds its rows' locks that long); idle-us is a pass with nothing to
// prune, what every reconcile tick costs once the table is trimmed.
// reference deletes the same rows in two statements, the least deleting
// them can cost. Run it with -benchtime=1x: each run seeds its rows.
func BenchmarkPruneEvents(b *testing.B) {
	n := benchOrderCount(b, "MEMOCART_BENCH_PRUNE_EVENTS", 1000000)
	ctx := context.Background()
	seed := func(b *testing.B) (*sqlstore.Store, *sql.DB) {
		b.Helper()
		st, raw, acct := benchPostgres(b, models.OrderDelivered)
		for _, q := range []string{
			`INSERT INTO webhook_endpoints (id, account_id, mode, url, enabled_events, secret, created_at)
				VALUES ('we_bench', '` + acct.ID + `', 'test', 'https://hooks.example.com/', '*', 'plain:x', now())`,
			fmt.Sprintf(`INSERT INTO webhook_events (id, account_id, mode, type, order_id, created_at, recorded_at, payload, dispatched_at)
				SELECT 'evt_' || lpad(i::text, 24, '0'), '%s', 'test', 'order.paid', 'ord_tmpl',
					timestamp '2026-01-01' + i * interval '1 second', timestamp '2026-01-01' + i * interval '1 second',
					'{"id":"evt_' || i || '","data":' || (SELECT string_agg(md5((i * 64 + j)::text), ',') FROM generate_series(1, 60) j) || '}',
					timestamp '2026-01-01' + i * interval '1 second'
				FROM generate_series(1, %d) i`, acct.ID, n),
			`INSERT INTO webhook_attempts (delivery_id, attempt, event_id, endpoint_id, dispatch, attempted_at, succeeded)
				SELECT 'dlv_' || id, 1, id, 'we_bench', 'wf', recorded_at, true FROM webhook_events WHERE right(id, 1) = '7'`,
			`ANALYZE`,
		} {
			if _, err := raw.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
		return st, raw
	}
	cutoff := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	b.Run(fmt.Sprintf("prune/events=%d", n), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			st, raw := seed(b)
			var want int
			if err := raw.QueryRow(`SELECT count(*) FROM webhook_events`).Scan(&want); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			var slowest time.Duration
			deleted := 0
			for {
				start := time.Now()
				k, err := st.PruneEvents(ctx, cutoff, 1000)
				if err != nil {
					b.Fatal(err)
				}
				slowest = max(slowest, time.Since(start))
				deleted += k
				if k < 1000 {
					break
				}
			}
			if deleted != want {
				b.Fatalf("pruned %d events, want every one, %d", deleted, want)
			}
			b.ReportMetric(float64(slowest.Microseconds())/1000, "batch-ms")
			start := time.Now()
			if k, err := st.PruneEvents(ctx, cutoff, 1000); err != nil || k != 0 {
				b.Fatalf("an idle pass pruned %d (%v)", k, err)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds()), "idle-us")
		}
	})
	b.Run(fmt.Sprintf("reference/events=%d", n), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			_, raw := seed(b)
			b.StartTimer()
			for _, q := range []string{`DELETE FROM webhook_attempts`, `DELETE FROM webhook_events`} {
				if _, err := raw.Exec(q); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkOpsSnapshot is the operator's snapshot (sqlstore.OpsSnapshot,
// read by every API process each minute) on Postgres: first on the empty
// database, the reference, then with MEMOCART_BENCH_OPS_ORDERS orders
// (default 1,000,000), as they pile up: one in fifty failed with its
// refund (one in ten of those still awaiting a destination), one in ten
// with its payment, one in a thousand still paid and stuck, a thousand
// unmatched payments, and an event per order, dispatched but for a
// hundred (one in ten thousand). What it reads follows what waits, not
// what has ended.
func BenchmarkOpsSnapshot(b *testing.B) {
	n := benchOrderCount(b, "MEMOCART_BENCH_OPS_ORDERS", 1000000)
	ctx := context.Background()
	st, raw, _ := benchPostgres(b, models.OrderDelivered)
	now := t0.Add(24 * time.Hour)
	snapshot := func(b *testing.B) {
		for b.Loop() {
			if _, err := st.OpsSnapshot(ctx, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("empty", snapshot)

	start := time.Now()
	seedOrders(b, raw, "ord_tmpl", n, "t.account_id")
	seedStepsAndPayments(b, raw)
	for _, q := range []string{
		`UPDATE orders SET status = 'paid', payment_status = 'confirmed', updated_at = created_at WHERE right(number, 3) = '501'`,
		`INSERT INTO refunds (id, "key", order_id, account_id, mode, reason, amount, asset, status, created_at, updated_at)
			SELECT 'rfd_' || o.id, 'order:' || o.id || ':1', o.id, o.account_id, o.mode, 'order_failed', o.payment_amount, o.payment_asset,
				CASE WHEN right(o.number, 3) IN ('000', '500') THEN 'awaiting_destination' ELSE 'sent' END, o.created_at, o.created_at
			FROM orders o WHERE o.status = 'failed'`,
		`INSERT INTO payments (id, mode, asset, amount, memo, received_at, status, created_at)
			SELECT 'unmatched_' || g, 'live', 'USDC', 1.5, 'nobody', $1::timestamptz - g * interval '1 second', 'unmatched', $1::timestamptz - g * interval '1 second'
			FROM generate_series(1, 1000) g`,
		`INSERT INTO webhook_events (id, account_id, mode, type, order_id, created_at, recorded_at, payload, dispatched_at)
			SELECT 'evt_' || o.id, o.account_id, o.mode, 'order.created', o.id, o.created_at, o.created_at, '{}',
				CASE WHEN right(o.number, 4) = '0001' THEN NULL ELSE o.created_at END
			FROM orders o`,
		`ANALYZE`,
	} {
		var err error
		if strings.Contains(q, "$1") {
			_, err = raw.Exec(q, now)
		} else {
			_, err = raw.Exec(q)
		}
		if err != nil {
			b.Fatalf("%v\n%s", err, q)
		}
	}
	b.Logf("seeded %d orders in %s", n, time.Since(start).Round(time.Second))
	s, err := st.OpsSnapshot(ctx, now)
	if err != nil {
		b.Fatal(err)
	}
	test := s.Mode(models.ModeTest)
	if test.OrdersStuck[models.OrderPaid] != n/1000 || test.Refunds[models.RefundAwaitingDestination] == 0 || s.Mode(models.ModeLive).Unmatched != 1000 || test.EventsWaiting == 0 {
		b.Fatalf("the seeded snapshot is not what was seeded: %+v %+v", *test, *s.Mode(models.ModeLive))
	}
	b.Logf("stuck paid %d, refunds %v, events waiting %d", test.OrdersStuck[models.OrderPaid], test.Refunds, test.EventsWaiting)
	b.Run(fmt.Sprintf("orders=%d", n), snapshot)
}
