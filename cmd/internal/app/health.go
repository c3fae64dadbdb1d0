package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
)

// readiness is what the admin listener's /readyz checks. It is empty, and
// the process not ready, until the process has its dependencies.
type readiness struct {
	checks atomic.Pointer[[]api.ReadinessCheck]
}

func (r *readiness) set(checks ...api.ReadinessCheck) { r.checks.Store(&checks) }

// unready runs every check at once, bounded as the API's own /readyz
// (api.Unready), and says what is not ready: "" when everything is. Why is
// logged, not answered.
func (r *readiness) unready(ctx context.Context, log *slog.Logger) string {
	p := r.checks.Load()
	if p == nil {
		return "Not ready: starting"
	}
	names := api.Unready(ctx, log, *p)
	if len(names) == 0 {
		return ""
	}
	return "Not ready: " + strings.Join(names, ", ") + " unavailable"
}

// temporalCheck asks the Temporal frontend whether it serves: a gRPC
// health check, no namespace or persistence read.
func temporalCheck(c client.Client) api.ReadinessCheck {
	return api.ReadinessCheck{Name: "temporal", Check: func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}}
}

// SetReady makes the admin /readyz check the database and Temporal.
func (t *Telemetry) SetReady(st interface{ Ping(context.Context) error }, c client.Client) {
	if t != nil {
		t.readiness.set(api.ReadinessCheck{Name: "database", Check: st.Ping}, temporalCheck(c))
	}
}

// observabilityRoutes serves on the admin listener what a scraper and an
// orchestrator ask a process (api, worker or dev): /metrics, /healthz (the
// process answers) and /readyz (its database and Temporal answer, the
// error envelope naming what does not). The worker has no other listener,
// so this is its health endpoint.
func observabilityRoutes(mux *http.ServeMux, e Env) {
	if e.Tel == nil {
		return
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(e.Tel.registry, promhttp.HandlerOpts{
		ErrorLog: promLogger{e.Tel}, Timeout: 10 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if msg := e.Tel.readiness.unready(r.Context(), e.Tel.log); msg != "" {
			type detail struct {
				Code    models.Code `json:"code"`
				Message string      `json:"message"`
			}
			w.Header().Set("Retry-After", "2")
			writeJSON(w, http.StatusServiceUnavailable, map[string]detail{"error": {
				Code: models.CodeUnavailable, Message: msg,
			}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// promLogger logs what promhttp could not gather.
type promLogger struct{ t *Telemetry }

func (l promLogger) Println(v ...any) {
	l.t.log.Warn("serving metrics", slog.String("error", strings.TrimSpace(fmt.Sprintln(v...))))
}
