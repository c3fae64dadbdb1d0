package api_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// observed is one RequestMetrics call.
type observed struct {
	route, method string
	status        int
}

type recordingMetrics struct {
	mu    sync.Mutex
	calls []observed
}

func (m *recordingMetrics) ObserveRequest(route, method string, status int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d < 0 {
		status = -1 // never expected: makes the assertion below fail
	}
	m.calls = append(m.calls, observed{route, method, status})
}

func (m *recordingMetrics) all() []observed {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]observed(nil), m.calls...)
}

// TestRequestMetricsUseRoutePatterns: requests are reported under their
// route's pattern, never the path asked for, and unknown paths under "".
func TestRequestMetricsUseRoutePatterns(t *testing.T) {
	m := &recordingMetrics{}
	e := newOrdersEnv(t, sqlstore.DialectSQLite, func(s *ordersSetup) { d := &s.deps; d.Metrics = m })
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	e.get(t, "/v1/orders/ord_doesnotexist", key)
	e.get(t, "/v1/orders/12345678903", key)
	e.get(t, "/no/such/path/ord_123", "")
	e.get(t, "/healthz", "")
	assert.Equal(t, []observed{
		{"/v1/orders/:ref", "GET", http.StatusNotFound},
		{"/v1/orders/:ref", "GET", http.StatusNotFound},
		{"", "GET", http.StatusNotFound},
		{"/healthz", "GET", http.StatusOK},
	}, m.all())
}

// TestRequestIDTravelsToTemporal: the context StartOrder gets carries the
// request's X-Request-Id, which the Temporal client sends to the workflow.
func TestRequestIDTravelsToTemporal(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	cartID, _ := e.newCart(t, key)
	r := e.send(t, request{method: http.MethodPost, path: "/v1/orders", auth: "Bearer " + key, body: orderBody(cartID),
		header: map[string]string{"X-Request-Id": "req-from-client-1"}})
	require.Equalf(t, http.StatusCreated, r.status, "%s", r.body)
	e.wf.mu.Lock()
	defer e.wf.mu.Unlock()
	assert.Equal(t, []string{"req-from-client-1"}, e.wf.requestIDs)
}

// TestRequestSpans: with a tracer, every request has a server span named
// after its route, carrying the request id; a client's traceparent is not
// taken as the parent.
func TestRequestSpans(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	e := newOrdersEnv(t, sqlstore.DialectSQLite, func(s *ordersSetup) { d := &s.deps; d.Tracer = tp })
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := e.send(t, request{method: http.MethodGet, path: "/v1/orders/12345678903", auth: "Bearer " + key,
		header: map[string]string{"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01"}})
	require.Equal(t, http.StatusNotFound, r.status)

	got := spans.GetSpans()
	require.Len(t, got, 1)
	s := got[0]
	assert.Equal(t, "GET /v1/orders/:ref", s.Name)
	assert.Contains(t, s.Attributes, attribute.String("memocart.request_id", r.header.Get("X-Request-Id")))
	assert.False(t, s.Parent.IsValid(), "no parent from the client")
	assert.NotEqual(t, clientTrace, s.SpanContext.TraceID().String())
}

// TestReadinessNamesTheFailedDependency: /readyz checks the database and
// every ReadinessCheck, answers 503 in the envelope naming what failed
// (never why), and is bounded: a hung check fails at readyTimeout.
func TestReadinessNamesTheFailedDependency(t *testing.T) {
	hung := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	fine := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name     string
		store    error
		temporal func(context.Context) error
		want     string // "" = ready
	}{
		{"all up", nil, fine, ""},
		{"temporal down", nil, func(context.Context) error { return errors.New(secretDetail) }, "Not ready: temporal unavailable"},
		{"temporal hung", nil, hung, "Not ready: temporal unavailable"},
		{"both down", errors.New(secretDetail), hung, "Not ready: database, temporal unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sqlstore.DialectSQLite,
				withStore(func(s api.Store) api.Store { return failingStore{Store: s, pingErr: tc.store} }),
				func(s *testStack) { s.deps.Readiness = []api.ReadinessCheck{{Name: "temporal", Check: tc.temporal}} })
			r := e.get(t, "/readyz", "")
			if tc.want == "" {
				require.Equalf(t, http.StatusOK, r.status, "%s", r.body)
				return
			}
			d := requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
			assert.Equal(t, tc.want, d.Message)
			assert.NotContains(t, string(r.body), "hunter2")
		})
	}
}
