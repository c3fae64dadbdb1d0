package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
)

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// TestAdminObservability: the admin listener serves /metrics with the
// service's series (labels bounded), /healthz, and a /readyz that is not
// ready until the process has its dependencies, then names the one that
// fails, in the API's error envelope.
func TestAdminObservability(t *testing.T) {
	e := Env{Cfg: Config{AdminAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:8080"}, Log: slog.New(slog.DiscardHandler)}
	e, stopTel, err := StartTelemetry(t.Context(), e, "test")
	require.NoError(t, err)
	defer stopTel()
	addr, stop, err := StartAdmin(t.Context(), e)
	require.NoError(t, err)
	defer stop()
	base := "http://" + addr

	code, _, body := get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok"}`, body)

	notReady := func(want string) {
		t.Helper()
		code, h, body := get(t, base+"/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		assert.Equal(t, "2", h.Get("Retry-After"))
		var env struct {
			Error struct {
				Code    models.Code `json:"code"`
				Message string      `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &env), body)
		assert.Equal(t, models.CodeUnavailable, env.Error.Code)
		assert.Equal(t, want, env.Error.Message)
		assert.NotContains(t, body, "hunter2", "why is logged, not answered")
	}
	notReady("Not ready: starting")
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("dial: password=hunter2") }
	e.Tel.readiness.set(api.ReadinessCheck{Name: "database", Check: up}, api.ReadinessCheck{Name: "temporal", Check: down})
	notReady("Not ready: temporal unavailable")
	e.Tel.readiness.set(api.ReadinessCheck{Name: "database", Check: up}, api.ReadinessCheck{Name: "temporal", Check: up})
	code, _, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)

	e.Tel.ObserveRequest("/v1/orders/:ref", "GET", 200, 30*time.Millisecond)
	e.Tel.ObserveRequest("", "BREW", 404, time.Millisecond)
	e.Tel.orderEntered(models.OrderPaid)
	e.Tel.paymentOutcome(models.PaymentOutcomeLate)
	obs := e.Tel.stellarObserver("testnet")
	obs.PaymentSaved(90 * time.Second)
	obs.CaughtUp()
	code, _, body = get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, line := range []string{
		`memocart_http_requests_total{method="GET",route="/v1/orders/:ref",status="200"} 1`,
		`memocart_http_requests_total{method="other",route="unmatched",status="404"} 1`,
		`memocart_http_request_duration_seconds_bucket{method="GET",route="/v1/orders/:ref",le="0.05"} 1`,
		`memocart_orders_entered_total{status="paid"} 1`,
		`memocart_orders_entered_total{status="created"} 0`,
		`memocart_payments_total{outcome="late"} 1`,
		`memocart_stellar_payment_lag_seconds_bucket{network="testnet",le="300"} 1`,
		`memocart_stellar_payment_lag_seconds_bucket{network="testnet",le="60"} 0`,
		`go_goroutines `,
	} {
		assert.Contains(t, body, line)
	}
	assert.Regexp(t, `memocart_stellar_watcher_caught_up_timestamp_seconds\{network="testnet"\} \d\.\d+e\+09`, body)
}

// TestTemporalOptions: the log fields always travel; the SDK reports its
// metrics; the tracing interceptor is there only with traces on.
func TestTemporalOptions(t *testing.T) {
	var none *Telemetry
	var opts client.Options
	require.NoError(t, none.TemporalOptions(&opts))
	assert.Len(t, opts.ContextPropagators, 1, "request and order ids travel without telemetry too")
	assert.Nil(t, opts.MetricsHandler)

	e := Env{Log: slog.New(slog.DiscardHandler)}
	off, stop, err := StartTelemetry(t.Context(), e, "test")
	require.NoError(t, err)
	defer stop()
	opts = client.Options{}
	require.NoError(t, off.Tel.TemporalOptions(&opts))
	assert.NotNil(t, opts.MetricsHandler)
	assert.Empty(t, opts.Interceptors, "traces are off by default: no interceptor, no spans")
	var d api.Deps
	off.Tel.observeAPI(&d)
	assert.Nil(t, d.Tracer)
	assert.NotNil(t, d.Metrics)

	e.Cfg.OTLPEndpoint, e.Cfg.TraceSampleRatio = "http://127.0.0.1:1", 1
	on, stopOn, err := StartTelemetry(t.Context(), e, "test")
	require.NoError(t, err)
	opts = client.Options{}
	require.NoError(t, on.Tel.TemporalOptions(&opts))
	assert.Len(t, opts.Interceptors, 1, "Temporal's tracing interceptor")
	d = api.Deps{}
	on.Tel.observeAPI(&d)
	assert.NotNil(t, d.Tracer)
	// No collector listens there: stopping still returns (the flush is
	// bounded), which the test's own timeout would otherwise catch.
	stopOn()
}

// TestObservabilityConfig: traces are off unless an endpoint is given, by
// our variable or OpenTelemetry's standard ones (ours first), and bad
// values are refused naming their variable.
func TestObservabilityConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	assert.Empty(t, cfg.OTLPEndpoint)
	assert.Equal(t, 1.0, cfg.TraceSampleRatio)

	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317"}, "http://otel:4317"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://traces:4317"}, "https://traces:4317"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4317", "MEMOCART_OTLP_ENDPOINT": "http://ours:4317"}, "http://ours:4317"},
	} {
		cfg, err := loadConfig(envOf(tc.vars))
		require.NoError(t, err, tc.vars)
		assert.Equal(t, tc.want, cfg.OTLPEndpoint, tc.vars)
	}
	cfg, err = loadConfig(envOf(map[string]string{"MEMOCART_TRACE_SAMPLE_RATIO": "0.25"}))
	require.NoError(t, err)
	assert.Equal(t, 0.25, cfg.TraceSampleRatio)

	for k, v := range map[string]string{
		"MEMOCART_OTLP_ENDPOINT": "otel:4317", "OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://otel:4317",
		"MEMOCART_TRACE_SAMPLE_RATIO": "1.5",
	} {
		_, err := loadConfig(envOf(map[string]string{k: v}))
		assert.ErrorContainsf(t, err, k, "%s=%s must be refused", k, v)
	}
	assert.True(t, strings.Contains(cfg.Masked(envOf(nil)), "MEMOCART_OTLP_ENDPOINT="), "printed at start")
}
