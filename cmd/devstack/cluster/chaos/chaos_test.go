package chaos

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func TestKillPlanKillsEachKindOncePerRoundInsideTheLoad(t *testing.T) {
	for _, rounds := range []int{1, 3} {
		t.Run("", func(t *testing.T) {
			newRun := func(seed uint64) *run {
				return &run{opts: Options{Orders: 1000, Kills: rounds, DownMin: 3 * time.Second, DownMax: 6 * time.Second},
					rng: rand.New(rand.NewPCG(seed, seed))}
			}
			p := newRun(7).killPlan()
			require.Len(t, p, 4*rounds)
			kinds := map[string]int{}
			last := 0
			for _, k := range p {
				kind, _, _ := strings.Cut(k.name, "-")
				kinds[kind]++
				assert.GreaterOrEqual(t, k.at, 50, "not before 5%% of the load")
				assert.LessOrEqual(t, k.at, 850, "not after 85%% of the load")
				assert.GreaterOrEqual(t, k.at, last, "in load order")
				last = k.at
				assert.GreaterOrEqual(t, k.down, 3*time.Second)
				assert.LessOrEqual(t, k.down, 6*time.Second)
			}
			assert.Equal(t, map[string]int{"api": rounds, "worker": rounds, "temporal": rounds, "postgres": rounds}, kinds)
			assert.Equal(t, p, newRun(7).killPlan(), "a seed gives the same plan")
			assert.NotEqual(t, p, newRun(8).killPlan(), "another seed, another plan")
		})
	}
}

// TestProbeClassifiesOutageAnswers runs the Postgres-outage probe against
// a server answering as the API might, and checks which answers count as
// the promised 503 and which are findings.
func TestProbeClassifiesOutageAnswers(t *testing.T) {
	envelope503 := func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":"service_unavailable","message":"retry"}}`))
	}
	cases := []struct {
		name    string
		handler http.HandlerFunc
		ok      bool
	}{
		{"503 in the envelope", func(w http.ResponseWriter, r *http.Request) { envelope503(w) }, true},
		{"503 past the bound", func(w http.ResponseWriter, r *http.Request) { time.Sleep(300 * time.Millisecond); envelope503(w) }, false},
		{"503 without Retry-After", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"service_unavailable","message":"retry"}}`))
		}, false},
		{"503 outside the envelope", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("upstream down"))
		}, false},
		{"500", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":{"code":"internal_error","message":"x"}}`))
		}, false},
		{"200 while Postgres is down", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"order":{}}`)) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			r := &run{opts: Options{RequestTimeout: 100 * time.Millisecond, Slack: 100 * time.Millisecond},
				api: &apiClient{hc: &http.Client{Timeout: 5 * time.Second}, stats: &clientStats{}}}
			pr := &prober{r: r, url: srv.URL, stop: make(chan struct{}), recovered: make(chan struct{})}
			pr.phase.Store(phaseOutage)
			pr.once1(context.Background())
			assert.Equal(t, 1, pr.rep.OutageAnswers)
			if tc.ok {
				assert.Equal(t, 1, pr.rep.Outage503)
				assert.Empty(t, pr.rep.Bad)
			} else {
				assert.Equal(t, 0, pr.rep.Outage503)
				assert.Len(t, pr.rep.Bad, 1)
			}
		})
	}
}

func TestProbeRecoveryIsTheFirst200AfterPostgresIsBack(t *testing.T) {
	var up bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"service_unavailable","message":"retry"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"order":{}}`))
	}))
	defer srv.Close()
	r := &run{opts: Options{RequestTimeout: time.Second, Slack: time.Second},
		api: &apiClient{hc: &http.Client{Timeout: 5 * time.Second}, stats: &clientStats{}}}
	pr := &prober{r: r, url: srv.URL, stop: make(chan struct{}), recovered: make(chan struct{})}
	pr.back()
	pr.once1(context.Background())
	assert.False(t, pr.rep.Recovered)
	assert.Equal(t, 1, pr.rep.After503)
	up = true
	pr.once1(context.Background())
	assert.True(t, pr.rep.Recovered)
	select {
	case <-pr.recovered:
	default:
		t.Fatal("recovered not signalled")
	}
	assert.Equal(t, 0, pr.rep.OutageAnswers, "answers after Postgres is back are not outage answers")
}

func TestClientRetriesWithTheSameKeyAcrossReplicas(t *testing.T) {
	var keys []string
	var hosts []string
	handler := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			keys = append(keys, r.Header.Get("Idempotency-Key"))
			hosts = append(hosts, name)
			switch len(keys) {
			case 1:
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":{"code":"service_unavailable","message":"retry"}}`))
			case 2:
				w.WriteHeader(http.StatusConflict)
				_, _ = w.Write([]byte(`{"error":{"code":"idempotency_key_in_use","message":"wait"}}`))
			default:
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"cart":{"id":"crt_1"}}`))
			}
		}
	}
	a, b := httptest.NewServer(handler("a")), httptest.NewServer(handler("b"))
	defer a.Close()
	defer b.Close()
	c := &apiClient{bases: [2]string{a.URL, b.URL}, hc: &http.Client{Timeout: 5 * time.Second}, giveUp: time.Minute, stats: &clientStats{}}
	ans, err := c.post(context.Background(), 1, "/v1/carts", map[string]any{"x": 1})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, ans.status)
	require.Len(t, keys, 3)
	assert.Equal(t, keys[0], keys[1])
	assert.Equal(t, keys[0], keys[2])
	assert.Equal(t, []string{"b", "a", "b"}, hosts)
	assert.EqualValues(t, 2, c.stats.retries.Load())
	assert.EqualValues(t, 1, c.stats.status503.Load())
	assert.EqualValues(t, 1, c.stats.inUse.Load())
}

func TestReportFailsOnAnyNonZeroInvariant(t *testing.T) {
	rep := &Report{Invariants: []Invariant{{Name: "a"}, {Name: "b"}}}
	assert.False(t, rep.Failed())
	rep.Invariants[1].add("ord_x: cancelled")
	assert.True(t, rep.Failed())
	var out bytes.Buffer
	rep.Print(&out)
	assert.Contains(t, out.String(), "| a | 0 | 0 | pass |")
	assert.Contains(t, out.String(), "| b | 1 | 0 | FAIL |")
	assert.Contains(t, out.String(), "ord_x: cancelled")
}

// TestPlacementAttemptReadsBothShapes: a PlaceOrder's attempt is read from
// the input struct runs from baseline-2026-12 send, and from the
// positional arguments of older runs.
func TestPlacementAttemptReadsBothShapes(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	structInput, err := dc.ToPayloads(struct {
		OrderID string
		Attempt int
	}{"ord_1", 2})
	require.NoError(t, err)
	positional, err := dc.ToPayloads("ord_1", 3)
	require.NoError(t, err)
	for in, want := range map[*commonpb.Payloads]int{structInput: 2, positional: 3} {
		got, err := placementAttempt(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
