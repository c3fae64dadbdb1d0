package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel/attribute"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/memocart/memocart/models"
)

// RequestMetrics is told about every request the API answers. Route is
// the route's pattern (gin's FullPath, "/v1/orders/:ref"), never the
// requested path, so a metric labelled with it stays bounded; it is ""
// for a request no route matched.
type RequestMetrics interface {
	ObserveRequest(route, method string, status int, d time.Duration)
}

// ReadinessCheck is one dependency /readyz checks. Name is what the
// answer says when it fails ("temporal").
type ReadinessCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// readyTimeout bounds /readyz: a probe must not hang on a hung dependency.
const readyTimeout = 2 * time.Second

// ready answers 200 when the database and every ReadinessCheck answer
// within readyTimeout, and 503 service_unavailable naming the ones that did
// not otherwise.
func (s *Server) ready(c *gin.Context) {
	checks := append([]ReadinessCheck{{Name: "database", Check: s.deps.Store.Ping}}, s.deps.Readiness...)
	if failed := Unready(c.Request.Context(), loggerFrom(c), checks); len(failed) > 0 {
		// Which dependency is down is safe to say; why is not.
		abort(c, models.Errorf(models.CodeUnavailable, "Not ready: %s unavailable", strings.Join(failed, ", ")))
		return
	}
	render(c, http.StatusOK, gin.H{"status": "ready"})
}

// Unready runs every check at once, bounded by readyTimeout, and names the
// ones that failed, each logged on log with why. The checks run at once,
// so the answer takes as long as the slowest, not their sum.
func Unready(ctx context.Context, log *slog.Logger, checks []ReadinessCheck) []string {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, ch := range checks {
		wg.Go(func() { errs[i] = ch.Check(ctx) })
	}
	wg.Wait()
	var failed []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, checks[i].Name)
			log.WarnContext(ctx, "readiness check failed", slog.String("dependency", checks[i].Name), slog.Any("error", err))
		}
	}
	return failed
}

// tracing starts a server span for every request, named after its route.
// A trace context sent by the client is ignored: this is a public API, so
// each request starts its own trace, and a caller can neither force
// sampling nor attach its spans to ours. Temporal's interceptor carries
// the trace on from here into the workflow and its activities.
func (s *Server) tracing() gin.HandlerFunc {
	return otelgin.Middleware("memocart-api",
		otelgin.WithTracerProvider(s.deps.Tracer),
		otelgin.WithPropagators(propagation.NewCompositeTextMapPropagator()),
		// HTTP metrics are RequestMetrics' job, under our own names.
		otelgin.WithMeterProvider(noopmetric.NewMeterProvider()),
	)
}

// requestIDOnSpan records the request id on the request's span, so a trace
// found by a client's X-Request-Id leads to the rest.
func requestIDOnSpan(ctx context.Context, id string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("memocart.request_id", id))
	}
}
