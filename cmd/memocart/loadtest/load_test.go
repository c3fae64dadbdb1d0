package loadtest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			_, _ = w.Write([]byte(`{"order":{}}`))
		default:
			http.Error(w, `{"error":{"code":"not_found"}}`, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "mc_test_k", 2)
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
	err = c.GetOrder(t.Context(), "ord_2")
	require.ErrorContains(t, err, "404")
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
