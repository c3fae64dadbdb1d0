package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memocart/memocart/cmd/internal/app"
)

// TestE2EObservability follows one order from its request to delivery in
// what the service exposes: the admin listener's /metrics (HTTP series by
// route, the statuses it entered, its payment, the Temporal SDK's own
// metrics), its traces (the create request's trace runs through
// StartWorkflow into the workflow and its activities; the payment
// request's into the signal), its log lines (request and order ids in
// workflow and activity lines), and /readyz on both listeners.
func TestE2EObservability(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	app.TestHooks.SpanExporter = spans
	t.Cleanup(func() { app.TestHooks.SpanExporter = nil })
	// The admin address must differ from the API's, which is also :0.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	adminAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	s := startDev(t, "sqlite", map[string]string{
		"MEMOCART_ADMIN_ADDR":         adminAddr,
		"MEMOCART_LOG_FORMAT":         "json",
		"MEMOCART_SANDBOX_STEP_DELAY": "50ms",
	})
	admin := "http://" + adminAddr

	const createID, payID = "req-e2e-obs-create", "req-e2e-obs-pay"
	cartID := s.newCart(s.key, product)
	code, body := s.do(s.key, "POST", "/v1/orders", orderBody(cartID), "X-Request-Id", createID)
	require.Equal(t, http.StatusCreated, code, body)
	o := obj(body, "order")
	orderID, number := str(o, "id"), str(o, "number")
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+number+"/payments", nil, "X-Request-Id", payID)
	require.Equal(t, http.StatusCreated, code, body)
	s.waitStatus(s.key, number, "delivered")
	code, _ = s.do(s.key, "GET", "/v1/no-such-route/"+number, nil)
	require.Equal(t, http.StatusNotFound, code)

	// createTrace is the trace of the order's creation request.
	createTrace := func() string {
		for _, sp := range spans.GetSpans() {
			if sp.Name == "POST /v1/orders" {
				return sp.SpanContext.TraceID().String()
			}
		}
		return ""
	}

	t.Run("metrics", func(t *testing.T) {
		// The workflow's last write (delivered) is counted as it commits;
		// the SDK's completion counter once the run has ended.
		var mf map[string]*dto.MetricFamily
		require.Eventually(t, func() bool {
			mf = scrape(t, admin+"/metrics")
			return value(mf, "memocart_orders_entered_total", "status", "delivered") == 1 &&
				sum(mf, "temporal_workflow_completed_total", "workflow_type", "Order") >= 1
		}, 20*time.Second, 100*time.Millisecond, "the order's delivery and its workflow's completion show")

		assert.Equal(t, 1.0, value(mf, "memocart_http_requests_total", "route", "/v1/orders", "method", "POST", "status", "201"))
		assert.Equal(t, 1.0, value(mf, "memocart_http_requests_total", "route", "/v1/test_helpers/orders/:ref/payments", "method", "POST", "status", "201"))
		assert.GreaterOrEqual(t, value(mf, "memocart_http_requests_total", "route", "/v1/orders/:ref", "method", "GET", "status", "200"), 1.0)
		assert.Equal(t, 1.0, value(mf, "memocart_http_requests_total", "route", "unmatched", "method", "GET", "status", "404"))
		assert.Equal(t, uint64(1), histogramCount(mf, "memocart_http_request_duration_seconds", "route", "/v1/orders", "method", "POST"))
		for _, fam := range []string{"memocart_http_requests_total", "memocart_http_request_duration_seconds"} {
			for _, metric := range mf[fam].GetMetric() {
				for _, l := range metric.GetLabel() {
					assert.NotContains(t, l.GetValue(), number, "a route label is a pattern, never a path")
				}
			}
		}
		for _, st := range []string{"created", "paid", "ordered", "shipped", "delivered"} {
			assert.Equal(t, 1.0, value(mf, "memocart_orders_entered_total", "status", st), st)
		}
		assert.Zero(t, value(mf, "memocart_orders_entered_total", "status", "failed"))
		assert.Equal(t, 1.0, value(mf, "memocart_payments_total", "outcome", "matched"))

		// The Temporal SDK's own metrics, through its metrics handler.
		assert.Positive(t, sum(mf, "temporal_request_total", "operation", "StartWorkflowExecution"), "the API's start")
		assert.Positive(t, sum(mf, "temporal_workflow_task_queue_poll_succeed_total"), "the worker's polls")
		assert.Positive(t, sumCount(mf, "temporal_activity_execution_latency_seconds", "activity_type", "PlaceOrder"), "the activities it ran")
	})

	t.Run("readiness", func(t *testing.T) {
		for _, u := range []string{admin + "/readyz", s.baseURL + "/readyz", admin + "/healthz"} {
			resp, err := http.Get(u)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", u, b)
		}
	})

	t.Run("traces", func(t *testing.T) {
		byName := func(trace string) map[string]tracetest.SpanStub {
			out := map[string]tracetest.SpanStub{}
			for _, sp := range spans.GetSpans() {
				if trace == "" || sp.SpanContext.TraceID().String() == trace {
					out[sp.Name] = sp
				}
			}
			return out
		}
		var created tracetest.SpanStub
		for _, sp := range spans.GetSpans() {
			if sp.Name == "POST /v1/orders" {
				created = sp
			}
		}
		require.True(t, created.SpanContext.IsValid(), "the order's request has a span")
		trace := created.SpanContext.TraceID().String()
		// The workflow's own span ends when the run does.
		require.Eventually(t, func() bool { _, ok := byName(trace)["RunWorkflow:Order"]; return ok }, 20*time.Second, 100*time.Millisecond,
			"the workflow's span joins the request's trace: %v", names(byName(trace)))
		in := byName(trace)
		start, run := in["StartWorkflow:Order"], in["RunWorkflow:Order"]
		require.True(t, start.SpanContext.IsValid(), "StartWorkflow in the request's trace: %v", names(in))
		assert.Equal(t, created.SpanContext.SpanID(), start.Parent.SpanID(), "started by the request")
		assert.Equal(t, start.SpanContext.SpanID(), run.Parent.SpanID(), "run by that start")
		for _, a := range []string{"RunActivity:PlaceOrder", "RunActivity:RecordTransition", "RunActivity:WatchOrder"} {
			assert.Contains(t, in, a, "the workflow's activities are in the request's trace")
		}

		var paid tracetest.SpanStub
		for _, sp := range spans.GetSpans() {
			if sp.Name == "POST /v1/test_helpers/orders/:ref/payments" {
				paid = sp
			}
		}
		require.True(t, paid.SpanContext.IsValid())
		pay := byName(paid.SpanContext.TraceID().String())
		assert.Contains(t, pay, "SignalWorkflow:payment-matched", "the payment request signals: %v", names(pay))
		assert.Contains(t, pay, "HandleSignal:payment-matched", "and the workflow's handling joins its trace")
	})

	t.Run("logs", func(t *testing.T) {
		lines := jsonLines(t, s.log.String())
		find := func(msg string) map[string]any {
			for _, l := range lines {
				if l["msg"] == msg && l["OrderID"] == orderID {
					return l
				}
			}
			return nil
		}
		wf := find("Payment wait over")
		require.NotNil(t, wf, "the workflow's line")
		assert.Equal(t, createID, wf["request_id"], "the workflow logs the request that started it")
		assert.Equal(t, createTrace(), wf["TraceID"], "and, traces on, the trace it belongs to")
		assert.Equal(t, number, wf["OrderNumber"])
		act := find("Placing the order with the buying provider")
		require.NotNil(t, act, "the activity's line")
		assert.Equal(t, createID, act["request_id"])
		assert.Equal(t, number, act["OrderNumber"])
		var signal map[string]any
		for _, l := range lines {
			if l["msg"] == "Signal received" && l["request_id"] == payID {
				signal = l
			}
		}
		require.NotNil(t, signal, "the payment request's id reaches the workflow with its signal")
		assert.Equal(t, "order-"+orderID, signal["WorkflowID"])
	})
}

func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p expfmt.TextParser
	mf, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mf
}

// matches reports whether m has every label name/value pair in kv.
func matches(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// value is the counter's value of the one series with exactly these
// labels among its own (-1 when there is none).
func value(mf map[string]*dto.MetricFamily, name string, kv ...string) float64 {
	return exactly(mf, name, counter, -1, kv...)
}

// sum adds up the counter over every series with these labels.
func sum(mf map[string]*dto.MetricFamily, name string, kv ...string) float64 {
	return total(mf, name, counter, kv...)
}

// histogramCount is the histogram's count of samples of the one series
// with exactly these labels among its own (0 when there is none).
func histogramCount(mf map[string]*dto.MetricFamily, name string, kv ...string) uint64 {
	return exactly(mf, name, sampleCount, 0, kv...)
}

// sumCount adds up the histogram's count of samples over every series
// with these labels.
func sumCount(mf map[string]*dto.MetricFamily, name string, kv ...string) uint64 {
	return total(mf, name, sampleCount, kv...)
}

func counter(m *dto.Metric) float64    { return m.GetCounter().GetValue() }
func sampleCount(m *dto.Metric) uint64 { return m.GetHistogram().GetSampleCount() }

// exactly reads the one series of name with exactly these labels among
// its own; none when there is no such series.
func exactly[N float64 | uint64](mf map[string]*dto.MetricFamily, name string, read func(*dto.Metric) N, none N, kv ...string) N {
	for _, m := range mf[name].GetMetric() {
		if matches(m, kv) && len(m.GetLabel()) == len(kv)/2 {
			return read(m)
		}
	}
	return none
}

// total adds up what read finds in every series of name with these labels.
func total[N float64 | uint64](mf map[string]*dto.MetricFamily, name string, read func(*dto.Metric) N, kv ...string) N {
	var n N
	for _, m := range mf[name].GetMetric() {
		if matches(m, kv) {
			n += read(m)
		}
	}
	return n
}

func names(m map[string]tracetest.SpanStub) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

// jsonLines decodes the JSON log lines of s (the embedded Temporal
// server's lines included).
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not a log line (a panic trace would show in the failure's log)
		}
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out
}
