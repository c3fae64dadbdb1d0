package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

func TestQuantileAndRate(t *testing.T) {
	s := Sample{Elapsed: 2 * time.Second}
	for i := 1; i <= 100; i++ {
		s.Latencies = append(s.Latencies, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, 50*time.Millisecond, s.Quantile(0.5))
	assert.Equal(t, 99*time.Millisecond, s.Quantile(0.99))
	assert.Equal(t, 100*time.Millisecond, s.Quantile(1))
	assert.Equal(t, time.Millisecond, s.Quantile(0))
	assert.InDelta(t, 50.0, s.Rate(), 1e-9)
	assert.Zero(t, Sample{}.Quantile(0.99))
	assert.Zero(t, Sample{}.Rate())
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, Median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, Median([]float64{4, 1, 3, 2}))
	assert.Zero(t, Median(nil))
	xs := []float64{3, 1, 2}
	Median(xs)
	assert.Equal(t, []float64{3, 1, 2}, xs, "the caller's slice is left alone")
}

func TestCountCallsEachIndexOnceAndKeepsErrors(t *testing.T) {
	var seen [50]atomic.Int32
	boom := errors.New("boom")
	s := Count(t.Context(), 8, 50, func(_ context.Context, i int) error {
		seen[i].Add(1)
		if i%10 == 0 {
			return boom
		}
		return nil
	})
	for i := range seen {
		assert.EqualValues(t, 1, seen[i].Load(), "index %d", i)
	}
	assert.Equal(t, 50, s.Calls)
	assert.Equal(t, 5, s.Errors)
	assert.Len(t, s.Latencies, 45, "only successful calls have a latency")
	require.ErrorIs(t, s.Err(), boom)
}

func TestClosedRunsForTheDuration(t *testing.T) {
	var calls atomic.Int64
	s := Closed(t.Context(), 4, 200*time.Millisecond, func(context.Context, int, int) error {
		calls.Add(1)
		time.Sleep(10 * time.Millisecond)
		return nil
	})
	assert.GreaterOrEqual(t, s.Elapsed, 200*time.Millisecond)
	assert.EqualValues(t, calls.Load(), s.Calls)
	// Four workers making 10 ms calls for 200 ms: about 80 calls; a loose
	// bound, the machine may be busy.
	assert.Greater(t, s.Calls, 10)
	assert.LessOrEqual(t, s.Calls, 4*21)
	require.NoError(t, s.Err())
}

// An open-loop run counts latency from when a call was due: when the
// service stalls, the calls queued behind it show the stall, as a client
// population would see it.
func TestOpenCountsLatencyFromTheDueTime(t *testing.T) {
	var n atomic.Int64
	s, err := Open(t.Context(), 100, 300*time.Millisecond, 1, func(context.Context, int) error {
		if n.Add(1) == 1 {
			time.Sleep(150 * time.Millisecond) // one stall holds the only slot
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 30, s.Calls, "100/s for 300 ms")
	assert.Greater(t, s.Late, 5, "calls due during the stall could not start")
	// The second call was due 10 ms in and could only start after the
	// 150 ms stall: its latency is about 140 ms although it took no time.
	assert.Greater(t, s.Quantile(0.9), 50*time.Millisecond)

	_, err = Open(t.Context(), 0, time.Second, 1, nil)
	require.Error(t, err)
}

func TestParsePgbenchTPS(t *testing.T) {
	out := `pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 10
query mode: prepared
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 166001
number of failed transactions: 0 (0.000%)
latency average = 0.963 ms
initial connection time = 85.873 ms
tps = 16600.123456 (without initial connection time)
`
	tps, err := ParsePgbenchTPS(out)
	require.NoError(t, err)
	assert.InDelta(t, 16600.123456, tps, 1e-6)
	_, err = ParsePgbenchTPS("pgbench: error: connection refused")
	require.Error(t, err)
}

func TestParsePgbenchLog(t *testing.T) {
	// pgbench 15 -R -l: client, transaction, latency µs, script, epoch s,
	// µs, schedule lag µs.
	log := `0 1 812 0 1763919600 123456 15
1 1 95021 0 1763919600 223456 94100
0 2 skipped 0 1763919600 323456 1000
`
	lat, err := ParsePgbenchLog(log)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{812 * time.Microsecond, 95021 * time.Microsecond}, lat)

	_, err = ParsePgbenchLog("0 1 abc 0 1 2\n")
	require.Error(t, err)
	_, err = ParsePgbenchLog("0 1 812\n")
	require.Error(t, err)
}

func TestWithDatabase(t *testing.T) {
	u, err := WithDatabase("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "memocart_pgbench")
	require.NoError(t, err)
	assert.Equal(t, "postgres://postgres@127.0.0.1:5432/memocart_pgbench?sslmode=disable", u)
	_, err = WithDatabase("sqlite:///tmp/x.db", "x")
	require.Error(t, err)
}

func TestClientSpeaksTheAPI(t *testing.T) {
	var gotAuth, gotIdem, gotType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/v1/carts":
			gotType = r.Header.Get("Content-Type")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"cart":{"id":"crt_1"}}`))
		case "/v1/orders":
			gotIdem = r.Header.Get("Idempotency-Key")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"order":{"id":"ord_1","number":"12345678901"}}`))
		case "/v1/orders/ord_1":
			_, _ = w.Write([]byte(`{"order":{"status":"shipped"}}`))
		case "/v1/test_helpers/orders/ord_1/payments":
			gotIdem = r.Header.Get("Idempotency-Key")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"payment":{"outcome":"matched"}}`))
		case "/v1/orders/busy":
			http.Error(w, `{"error":{"code":"service_unavailable"}}`, http.StatusServiceUnavailable)
		default:
			http.Error(w, `{"error":{"code":"not_found"}}`, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := NewClient([]string{srv.URL + "/"}, "mc_test_k", 2)
	defer c.Close()
	cart, err := c.CreateCart(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "crt_1", cart)
	assert.Equal(t, "Bearer mc_test_k", gotAuth)
	assert.Equal(t, "application/json", gotType)
	o, err := c.CreateOrder(t.Context(), cart)
	require.NoError(t, err)
	assert.Equal(t, Order{ID: "ord_1", Number: "12345678901"}, o)
	assert.Len(t, gotIdem, 32, "a fresh idempotency key per order")
	require.NoError(t, c.GetOrder(t.Context(), "ord_1"))
	status, err := c.OrderStatus(t.Context(), "ord_1")
	require.NoError(t, err)
	assert.Equal(t, "shipped", status)
	outcome, err := c.Pay(t.Context(), "ord_1", "pay-key")
	require.NoError(t, err)
	assert.Equal(t, "matched", outcome)
	assert.Equal(t, "pay-key", gotIdem, "the payment is sent under its key")
	err = c.GetOrder(t.Context(), "ord_2")
	require.ErrorContains(t, err, "404")
	require.ErrorContains(t, err, srv.URL+"/v1/orders/ord_2", "the error names the replica")
	assert.False(t, Unavailable(err))
	err = c.GetOrder(t.Context(), "busy")
	assert.True(t, Unavailable(err), "a 503 is the API's retry-the-same-request")
	assert.False(t, Unavailable(errors.New("503")))
}

// TestClientSpreadsRequestsOverReplicas: with several base URLs each
// request goes to the next replica in turn, whichever goroutine sends it;
// with one, every request goes there.
func TestClientSpreadsRequestsOverReplicas(t *testing.T) {
	var hits [3]atomic.Int64
	var srvs []string
	var mu sync.Mutex
	var seq []int
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			mu.Lock()
			seq = append(seq, i)
			mu.Unlock()
			_, _ = w.Write([]byte(`{}`))
		}))
		defer srv.Close()
		srvs = append(srvs, srv.URL)
	}

	two := NewClient(srvs[:2], "k", 4)
	defer two.Close()
	require.NoError(t, two.WaitReady(t.Context()))
	assert.EqualValues(t, 1, hits[0].Load(), "WaitReady asks every replica")
	assert.EqualValues(t, 1, hits[1].Load())
	for range 6 {
		require.NoError(t, two.Health(t.Context()))
	}
	mu.Lock()
	assert.Equal(t, []int{0, 1, 0, 1, 0, 1, 0, 1}, seq, "one request each, in turn")
	mu.Unlock()
	s := Count(t.Context(), 8, 100, func(ctx context.Context, _ int) error { return two.Health(ctx) })
	require.NoError(t, s.Err())
	assert.EqualValues(t, 54, hits[0].Load(), "an even split from concurrent callers")
	assert.EqualValues(t, 54, hits[1].Load())

	one := NewClient(srvs[2:], "k", 4)
	defer one.Close()
	for range 5 {
		require.NoError(t, one.Health(t.Context()))
	}
	assert.EqualValues(t, 5, hits[2].Load())
	assert.EqualValues(t, 108, hits[0].Load()+hits[1].Load(), "the other replicas saw none of them")
}

func TestSummariseDelivery(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	js := []Journey{
		// Sent, paid, delivered: 6.5 s, 7 s and 9 s from POST to delivered.
		{ID: "a", Sent: at(0), Paid: at(300), Ended: at(6500), Status: models.OrderDelivered},
		{ID: "b", Sent: at(500), Paid: at(1000), Ended: at(7500), Status: models.OrderDelivered},
		{ID: "c", Sent: at(1000), Paid: at(1500), Ended: at(10000), Status: models.OrderDelivered},
	}
	d, err := SummariseDelivery(js)
	require.NoError(t, err)
	assert.Equal(t, 3, d.Orders)
	assert.Equal(t, 10*time.Second, d.Span, "first POST to last delivery")
	assert.InDelta(t, 0.3, d.Rate(), 1e-9)
	assert.Equal(t, []time.Duration{6500 * time.Millisecond, 7 * time.Second, 9 * time.Second}, d.ToDelivered, "sorted")
	assert.Equal(t, 7*time.Second, Quantile(d.ToDelivered, 0.5))
	assert.Equal(t, 9*time.Second, Quantile(d.ToDelivered, 0.99))
	assert.Equal(t, []time.Duration{300 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}, d.ToPaid)
	assert.Equal(t, []time.Duration{6200 * time.Millisecond, 6500 * time.Millisecond, 8500 * time.Millisecond}, d.PaidToDelivered)
	// 22.5 s of order time over a 10 s span: 2.25 orders in flight.
	assert.InDelta(t, 2.25, d.MeanInFlight(), 1e-9)
	assert.InDelta(t, d.Rate()*(22.5/3), d.MeanInFlight(), 1e-9, "Little's law")

	js[1].Status = models.OrderFailed
	_, err = SummariseDelivery(js)
	require.ErrorContains(t, err, "1 of 3 orders did not end delivered, e.g. b failed")
	js[1] = Journey{ID: "b", Sent: at(500)}
	_, err = SummariseDelivery(js)
	require.ErrorContains(t, err, "b not ended")
	_, err = SummariseDelivery(nil)
	require.Error(t, err)
	assert.Zero(t, Delivery{}.Rate())
	assert.Zero(t, Delivery{}.MeanInFlight())
}

// TestReadTreesCountsChildren: a process tree's time includes its
// children's, the live ones' and, once reaped, the finished ones'.
func TestReadTreesCountsChildren(t *testing.T) {
	self := os.Getpid()
	before := ReadTrees(self, -1)
	// A child that burns a fraction of a second of CPU and exits; Run
	// reaps it.
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`)
	require.NoError(t, cmd.Run())
	child := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	require.Greater(t, child, 0.05, "the child burned some CPU")
	after := ReadTrees(self, -1)
	own, err := ReadCPU(self)
	require.NoError(t, err)
	// The tree grew by at least the child's time (tick rounding: 20 ms).
	assert.GreaterOrEqual(t, after[self].Total-before[self].Total+0.02, child)
	assert.Greater(t, after[self].Total, own.Procs[self], "the tree holds more than the process's own time")
	assert.Zero(t, after[-1].Total, "a process that cannot be read counts as zero")

	// A live child is listed with its own time and command line.
	sleeper := exec.Command("sleep", "30")
	require.NoError(t, sleeper.Start())
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	require.Eventually(t, func() bool {
		return ReadTrees(self)[self].Title[sleeper.Process.Pid] == "sleep 30"
	}, 5*time.Second, 20*time.Millisecond)
}

func TestPostgresByDatabase(t *testing.T) {
	titles := map[int]string{
		10: "postgres: checkpointer",
		11: "postgres: postgres temporal 127.0.0.1(40000) idle",
		12: "postgres: postgres temporal 127.0.0.1(40002) idle in transaction",
		13: "postgres: postgres memocart 127.0.0.1(40004) SELECT",
		14: "postgres: autovacuum worker memocart",
		15: "postgres: postgres memocart [local] idle",
	}
	before := Tree{Total: 10, Own: map[int]float64{10: 1, 11: 2, 12: 3, 13: 1}, Title: titles}
	// In between: 11 and 12 spent 1 s each, 13 spent 0.5 s, 14 and 15
	// were born and spent 0.25 s each, a backend that exited spent some in
	// the parent's reaped time, the checkpointer 0.5 s: 4.5 s in all.
	after := Tree{Total: 14.5, Own: map[int]float64{10: 1.5, 11: 3, 12: 4, 13: 1.5, 14: 0.25, 15: 0.25}, Title: titles}
	got := PostgresByDatabase(before, after)
	assert.InDelta(t, 2.0, got["temporal"], 1e-9)
	assert.InDelta(t, 0.75, got["memocart"], 1e-9, "a backend, born in between, counts whole")
	assert.InDelta(t, 1.75, got["other"], 1e-9, "the checkpointer, the autovacuum worker and the ended backend")
	assert.Len(t, got, 3)
}

func TestReadCPUCountsThisProcess(t *testing.T) {
	pid := os.Getpid()
	before, err := ReadCPU(pid, -1)
	require.NoError(t, err)
	// Spin until the kernel has charged this process 100 ms more (on a busy
	// machine that takes longer than 100 ms of wall time), for at most 20
	// s: the machine's busy time grows at least as much.
	var after CPU
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		after, err = ReadCPU(pid, -1)
		require.NoError(t, err)
		if after.Since(before).Procs[pid] >= 0.1 {
			break
		}
	}
	d := after.Since(before)
	assert.GreaterOrEqual(t, d.Procs[pid], 0.1)
	assert.GreaterOrEqual(t, d.Busy+0.02, d.Procs[pid], "the machine was at least as busy as one of its processes")
	assert.Zero(t, d.Procs[-1], "a process that cannot be read counts as zero")
}

func TestStatFieldsTakesTheNameInParentheses(t *testing.T) {
	name, f, ok := statFields([]byte("42 (a (b) c) S 1 2 3\n"))
	require.True(t, ok)
	assert.Equal(t, "a (b) c", name)
	assert.Equal(t, []string{"S", "1", "2", "3"}, f)
	_, _, ok = statFields([]byte("42 no name"))
	assert.False(t, ok)
}

func TestReadCPUCountsPostgres(t *testing.T) {
	// The test's own server: its processes are children of this test, so
	// they are visible in /proc wherever the test runs (a sandbox may hide
	// the shared server's).
	pgi := sqlstoretest.StartPostgres(t)
	pg, err := Pgbench{}.Find()
	require.NoError(t, err)
	before, err := ReadCPU()
	require.NoError(t, err)
	// A query that keeps a backend busy for a while; the backend exits
	// when psql does, so its time is counted through its parent once the
	// postmaster has reaped it, which may be a moment after psql exits.
	out, err := exec.CommandContext(t.Context(), pg.Psql(), "-XAtqc",
		"select count(*) from generate_series(1, 5000000)", pgi.URL()).CombinedOutput()
	require.NoError(t, err, string(out))
	var after CPU
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		after, err = ReadCPU()
		require.NoError(t, err)
		if after.Since(before).Postgres > 0.05 {
			break
		}
	}
	assert.Greater(t, after.Since(before).Postgres, 0.05)
}

// TestReferenceReadsTheServicesOrder: the reference server answers GET
// /v1/orders/{id} with the order the service reads (its row, items and
// steps), for the key it knows, and refuses a wrong key, another
// account's key and an unknown order.
func TestReferenceReadsTheServicesOrder(t *testing.T) {
	ctx := t.Context()
	dbURL := sqlstoretest.DSN(t, sqlstore.DialectPostgres)
	st, err := sqlstore.Open(ctx, dbURL, nil)
	require.NoError(t, err)
	st.SetEventRenderer(sqlstoretest.Renderer{})
	defer st.Close()
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	secret, key := sqlstoretest.MustAccount(t, st, "ref", models.ModeTest, models.TierEnterprise)
	other, otherKey := sqlstoretest.MustAccount(t, st, "other", models.ModeTest, models.TierEnterprise)
	d := decimal.RequireFromString
	now := time.Now().UTC().Truncate(time.Second)
	require.NoError(t, st.CreateCart(ctx, models.Cart{
		ID: "crt_ref", AccountID: key.AccountID, Mode: models.ModeTest, Status: models.CartReady, ShipToCountry: "US",
		Quote: models.Quote{Currency: "USD", Subtotal: d("10.00"), Shipping: d("1.00"), Tax: d("0.50"), ServiceFee: d("1.00"), Total: d("12.50")},
		Items: []models.CartItem{{ProductURL: "https://www.amazon.com/dp/B000000001", Marketplace: models.MarketplaceAmazon,
			ProductID: "B000000001", Title: "A book", ImageURL: "y", Quantity: 2, UnitPrice: d("5.00"), LineTotal: d("10.00")}},
		CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
	}))
	o, _, err := st.CreateOrder(ctx, models.OrderRequest{
		AccountID: key.AccountID, Mode: models.ModeTest, CartID: "crt_ref", RequestHash: "h", Now: now,
		Build: func(c models.Cart) (models.Order, error) {
			return models.Order{
				ID: "ord_ref", AccountID: c.AccountID, Mode: c.Mode, CartID: c.ID,
				Status: models.OrderCreated, PaymentStatus: models.PaymentPending, CustomerEmail: "a@example.com",
				Address:  models.ShippingAddress{Name: "A", Line1: "1 Main St", City: "Springfield", Region: "IL", PostalCode: "62701", Country: "US"},
				Currency: c.Currency, Total: c.Total, PaymentAsset: "USDC", PaymentAmount: c.Total,
				PaymentAddress: "GADDR", PaymentExpiresAt: now.Add(time.Hour), AmountReceived: decimal.Zero,
				CreatedAt: now, UpdatedAt: now,
			}, nil
		},
		NewNumber: func() (string, error) { return "12345678901", nil },
	})
	require.NoError(t, err)
	svc, err := st.OrderForAccount(ctx, key.AccountID, models.ModeTest, o.ID)
	require.NoError(t, err)

	ref, err := StartReference(ctx, dbURL, map[string]ReferenceKey{
		secret: {AccountID: key.AccountID, Mode: string(models.ModeTest)},
		other:  {AccountID: otherKey.AccountID, Mode: string(models.ModeTest)},
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, ref.Close(context.WithoutCancel(ctx))) }()

	get := func(key, id string) (int, []byte) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.URL+"/v1/orders/"+id, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, b
	}
	status, body := get(secret, o.ID)
	require.Equal(t, http.StatusOK, status, string(body))
	var got struct {
		Order struct {
			ID         string          `json:"id"`
			Number     string          `json:"number"`
			AccountID  string          `json:"account_id"`
			Status     string          `json:"status"`
			Total      json.Number     `json:"total"`
			ShipCity   string          `json:"ship_city"`
			ItemsJSON  []itemOfOrder   `json:"items_json"`
			StepsJSON  json.RawMessage `json:"steps_json"`
			Payments   json.RawMessage `json:"payments_json"`
			CreatedAt  time.Time       `json:"created_at"`
			PaymentMem string          `json:"payment_memo"`
		} `json:"order"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&got), string(body))
	assert.Equal(t, svc.ID, got.Order.ID)
	assert.Equal(t, svc.Number, got.Order.Number)
	assert.Equal(t, key.AccountID, got.Order.AccountID)
	assert.Equal(t, string(svc.Status), got.Order.Status)
	assert.True(t, svc.Total.Equal(d(got.Order.Total.String())), "total %s, the service reads %s", got.Order.Total, svc.Total)
	assert.Equal(t, svc.Address.City, got.Order.ShipCity)
	assert.True(t, svc.CreatedAt.Equal(got.Order.CreatedAt))
	require.Len(t, got.Order.ItemsJSON, len(svc.Items))
	assert.Equal(t, svc.Items[0].ProductID, got.Order.ItemsJSON[0].ProductID)
	assert.Equal(t, svc.Items[0].Quantity, got.Order.ItemsJSON[0].Quantity)
	assert.JSONEq(t, "[]", string(got.Order.Payments))

	status, body = get("mc_test_wrong", o.ID)
	assert.Equal(t, http.StatusUnauthorized, status, "a key it does not know: %s", body)
	status, body = get(other, o.ID)
	assert.Equal(t, http.StatusNotFound, status, "another account's order: %s", body)
	status, body = get(secret, "ord_missing")
	assert.Equal(t, http.StatusNotFound, status, "an unknown order: %s", body)
}

type itemOfOrder struct {
	ProductID string `json:"product_id"`
	Quantity  int    `json:"quantity"`
}
