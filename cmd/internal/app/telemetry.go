package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"

	"github.com/memocart/memocart/activities/stellar"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// telemetry is one process's metrics and traces. Metrics always run (they
// cost a few counter increments) and are served at /metrics on the admin
// listener, in one Prometheus registry: the service's own metrics through
// client_golang, the Temporal SDK's through OpenTelemetry's Prometheus
// exporter. Traces run only when an OTLP endpoint is configured; off, no
// span is ever started.
//
// A nil *Telemetry (the operator subcommands) records nothing.
type Telemetry struct {
	log      *slog.Logger
	registry *prometheus.Registry
	meters   *sdkmetric.MeterProvider
	tracer   *sdktrace.TracerProvider // nil: traces off

	httpRequests    *prometheus.CounterVec
	httpDuration    *prometheus.HistogramVec
	ordersEntered   *prometheus.CounterVec
	payments        *prometheus.CounterVec
	stellarLag      *prometheus.HistogramVec
	stellarCaughtUp *prometheus.GaugeVec

	readiness readiness
}

// StartTelemetry sets up e's process's telemetry and returns e with it,
// and the function that flushes and stops it.
func StartTelemetry(ctx context.Context, e Env, process string) (Env, func(), error) {
	t := &Telemetry{log: e.Log.With(slog.String("component", "telemetry")), registry: prometheus.NewRegistry()}
	t.register()

	// The Temporal SDK reports through OpenTelemetry; its exporter turns
	// the meters into Prometheus collectors in the same registry.
	exp, err := otelprom.New(otelprom.WithRegisterer(t.registry), otelprom.WithoutTargetInfo(), otelprom.WithoutScopeInfo())
	if err != nil {
		return e, nil, fmt.Errorf("metrics exporter: %w", err)
	}
	t.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp),
		// The SDK's timers are in seconds; OpenTelemetry's default
		// buckets (0 to 10,000) are made for milliseconds.
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Name: "*", Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: secondsBuckets}},
		)))

	res := resource.NewSchemaless(attribute.String("service.name", "memocart"), attribute.String("memocart.process", process))
	switch {
	case TestHooks.SpanExporter != nil:
		t.tracer = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSyncer(TestHooks.SpanExporter))
	case e.Cfg.OTLPEndpoint != "":
		// The exporter connects lazily and retries: a collector that is
		// down loses spans, never requests.
		sx, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(e.Cfg.OTLPEndpoint))
		if err != nil {
			return e, nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		t.tracer = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(sx),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(e.Cfg.TraceSampleRatio))))
		t.log.Info("exporting traces over OTLP", slog.String("endpoint", e.Cfg.OTLPEndpoint), slog.Float64("sample_ratio", e.Cfg.TraceSampleRatio))
	}
	stop := func() {
		// Flush what the batcher holds; bounded, so a dead collector
		// does not hold up shutdown.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if t.tracer != nil {
			if err := t.tracer.Shutdown(sctx); err != nil {
				t.log.Warn("flushing traces", slog.Any("error", err))
			}
		}
		_ = t.meters.Shutdown(sctx)
	}
	e.Tel = t
	return e, stop, nil
}

// secondsBuckets are the latency buckets of every histogram in seconds:
// from a cached read to the request timeout and beyond.
var secondsBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// lagBuckets are the Stellar watcher's lag buckets: seconds when it
// streams, up to a day when it catches up after an outage.
var lagBuckets = []float64{1, 2, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400}

func (t *Telemetry) register() {
	t.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memocart_http_requests_total",
		Help: "HTTP requests answered by the API, by route pattern (unmatched: no route), method and status.",
	}, []string{"route", "method", "status"})
	t.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "memocart_http_request_duration_seconds",
		Help:    "Time to answer an HTTP request, by route pattern and method.",
		Buckets: secondsBuckets,
	}, []string{"route", "method"})
	t.ordersEntered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memocart_orders_entered_total",
		Help: "Orders that entered each status, counted by the process whose database write moved them, once per transition.",
	}, []string{"status"})
	t.payments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "memocart_payments_total",
		Help: "Payments delivered by the memo matcher, by outcome; a payment delivered again counts again.",
	}, []string{"outcome"})
	t.stellarLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "memocart_stellar_payment_lag_seconds",
		Help:    "Time from the close of the ledger holding a payment to the Stellar watcher saving it.",
		Buckets: lagBuckets,
	}, []string{"network"})
	t.stellarCaughtUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "memocart_stellar_watcher_caught_up_timestamp_seconds",
		Help: "Unix time the Stellar watcher last read up to the newest payment Horizon held (every sweep, 30 s, when healthy).",
	}, []string{"network"})
	// Every status and outcome exists from the start, at zero, so a rate
	// over them is defined before the first order.
	for _, s := range append(append([]models.OrderStatus(nil), models.OrderSteps...), models.OrderCancelled, models.OrderFailed) {
		t.ordersEntered.WithLabelValues(string(s))
	}
	for _, o := range []models.PaymentOutcome{models.PaymentOutcomeMatched, models.PaymentOutcomeUnmatched, models.PaymentOutcomeLate} {
		t.payments.WithLabelValues(string(o))
	}
	t.registry.MustRegister(t.httpRequests, t.httpDuration, t.ordersEntered, t.payments, t.stellarLag, t.stellarCaughtUp,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// knownMethods bound the method label: anything else a client sends is
// "other".
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// ObserveRequest implements api.RequestMetrics. Every label is bounded:
// routes are the engine's patterns, methods the known ones, statuses three
// digits.
func (t *Telemetry) ObserveRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	if !knownMethods[method] {
		method = "other"
	}
	t.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	t.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

func (t *Telemetry) orderEntered(s models.OrderStatus) {
	t.ordersEntered.WithLabelValues(string(s)).Inc()
}

func (t *Telemetry) paymentOutcome(o models.PaymentOutcome) {
	t.payments.WithLabelValues(string(o)).Inc()
}

// stellarObserver is the watcher's view of the metrics for one network.
type stellarObserver struct {
	lag      prometheus.Observer
	caughtUp prometheus.Gauge
}

func (o stellarObserver) PaymentSaved(lag time.Duration) { o.lag.Observe(max(lag, 0).Seconds()) }
func (o stellarObserver) CaughtUp()                      { o.caughtUp.SetToCurrentTime() }

func (t *Telemetry) stellarObserver(network string) stellar.Observer {
	if t == nil {
		return nil
	}
	return stellarObserver{lag: t.stellarLag.WithLabelValues(network), caughtUp: t.stellarCaughtUp.WithLabelValues(network)}
}

// observeStore, observeMatcher and observeAPI hand the metrics and traces
// to what records them; each does nothing without telemetry.
func (t *Telemetry) observeStore(st interface {
	SetStatusObserver(func(models.OrderStatus))
}) {
	if t != nil {
		st.SetStatusObserver(t.orderEntered)
	}
}

func (t *Telemetry) observeMatcher(m interface {
	OnOutcome(func(models.PaymentOutcome))
}) {
	if t != nil {
		m.OnOutcome(t.paymentOutcome)
	}
}

func (t *Telemetry) observeAPI(d *api.Deps) {
	if t == nil {
		return
	}
	d.Metrics = t
	if t.tracer != nil {
		d.Tracer = t.tracer
	}
}

// TemporalOptions adds to a Temporal client's options the propagation of
// request and order ids (always: they are log fields, not telemetry), the
// SDK's metrics, and, with traces on, Temporal's OpenTelemetry interceptor,
// which the worker built on the client runs too: a request's trace goes
// on through StartWorkflow, signals and updates into the workflow and its
// activities.
func (t *Telemetry) TemporalOptions(opts *client.Options) error {
	opts.ContextPropagators = append(opts.ContextPropagators, workflows.LogPropagator())
	if t == nil {
		return nil
	}
	opts.MetricsHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: t.meters.Meter("temporal-sdk-go"),
		// Counters as Prometheus counters (_total), not gauges.
		UseMonotonicCounters: true,
		// The default panics.
		OnError: func(err error) { t.log.Warn("Temporal SDK metric", slog.Any("error", err)) },
	})
	if t.tracer == nil {
		return nil
	}
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: t.tracer.Tracer("temporal-sdk-go")})
	if err != nil {
		return fmt.Errorf("the Temporal tracing interceptor: %w", err)
	}
	opts.Interceptors = append(opts.Interceptors, tracing)
	return nil
}

// parseOTLPEndpoint reads a collector URL: http:// (plain) or https://
// (TLS), with a host.
func parseOTLPEndpoint(v string, dst *string) error {
	if v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("must be an http(s) URL of the collector's OTLP/gRPC port, e.g. http://127.0.0.1:4317")
		}
	}
	*dst = v
	return nil
}

// otlpEndpointFallback takes OpenTelemetry's standard variables when
// MEMOCART_OTLP_ENDPOINT is empty, so a deployment that sets them for every
// service need not repeat itself.
func otlpEndpointFallback(cfg *Config, getenv func(string) string) error {
	if cfg.OTLPEndpoint != "" {
		return nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v := getenv(name); v != "" {
			if err := parseOTLPEndpoint(v, &cfg.OTLPEndpoint); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
	}
	return nil
}
