package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"github.com/memocart/memocart/cmd/devstack/devtemporal"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/workflows"
)

const devUsage = `Usage: devstack dev [-no-worker]

Runs the whole service in one process: an embedded Temporal server on MEMOCART_TEMPORAL_ADDRESS
with its Web UI on MEMOCART_TEMPORAL_UI_PORT, the worker, and the API on MEMOCART_HTTP_ADDR.
Data lives under MEMOCART_DATA_DIR (SQLite) unless MEMOCART_DATABASE_URL is set. Prints a
test-mode Pro API key (MEMOCART_DEV_API_KEY to fix it).

Flags:`

// runDev is `devstack dev`: the whole service in one process on embedded
// defaults: an in-process Temporal server with its Web UI (SQLite under
// MEMOCART_DATA_DIR), the app database (SQLite unless MEMOCART_DATABASE_URL
// is set), the worker, and the API with a printed test key. Nothing here is
// for production: the service binary (cmd/memocart) does not have it.
func runDev(ctx context.Context, e app.Env, args []string) error {
	fs := newFlagSet("dev", devUsage, e.Stderr)
	noWorker := fs.Bool("no-worker", false, "run everything but the worker; start 'memocart worker' with the same environment\nbeside it (to profile it, debug it or measure its memory on its own)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if e.Cfg.TemporalSecurity.Configured() {
		// dev dials its own embedded server, which speaks plain gRPC.
		return errors.New("MEMOCART_TEMPORAL_TLS*/MEMOCART_TEMPORAL_API_KEY are for an external Temporal cluster (memocart api, worker): dev runs its own server without TLS; unset them")
	}
	var live *testservers.Servers
	if e.Cfg.DevLive == "testservers" {
		var stopLive func()
		var err error
		if live, stopLive, err = startDevLive(&e); err != nil {
			return err
		}
		defer stopLive()
	}
	// Only what the environment sets: the defaults are in `devstack --help`.
	e.Log.Info("starting dev stack", slog.String("config", cmp.Or(e.Cfg.Overrides(e.Getenv), "defaults")))
	e, stopTel, err := app.StartTelemetry(ctx, e, "dev")
	if err != nil {
		return err
	}
	defer stopTel()
	_, stopAdmin, err := app.StartAdmin(ctx, e)
	if err != nil {
		return err
	}
	defer stopAdmin()
	st, err := app.OpenStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		e.Log.Info("applied migrations", slog.Any("migrations", applied))
	}
	secret, err := ensureDevKey(ctx, e, st)
	if err != nil {
		return err
	}
	var liveKey string
	if live != nil {
		if liveKey, err = newDevLiveKey(ctx, e, st); err != nil {
			return err
		}
	}

	host, portStr, _ := net.SplitHostPort(e.Cfg.TemporalAddress)
	port, _ := strconv.Atoi(portStr)
	ts, err := devtemporal.Start(ctx, devtemporal.Options{
		DataDir:          filepath.Join(e.Cfg.DataDir, "temporal"),
		Host:             host,
		GRPCPort:         port,
		UIPort:           e.Cfg.TemporalUIPort,
		Namespace:        e.Cfg.TemporalNamespace,
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           e.Log.With(slog.String("component", "temporal-server")),
	})
	if err != nil {
		return fmt.Errorf("starting embedded Temporal: %w", err)
	}
	defer ts.Stop()

	limiter, closeLimiter, err := app.NewLimiter(ctx, e)
	if err != nil {
		return err
	}
	defer closeLimiter()
	tc, err := app.DialTemporal(ctx, e, ts.FrontendHostPort())
	if err != nil {
		return err
	}
	defer tc.Close()
	e.Tel.SetReady(st, tc)

	stack, err := app.NewAPIStack(e, st, limiter, tc)
	if err != nil {
		return err
	}
	workerErr := make(chan error, 1)
	if *noWorker {
		e.Log.Info("no worker in this process: start `memocart worker` with the same environment",
			slog.String("task_queue", e.Cfg.TemporalTaskQueue))
		workerErr <- nil
	} else {
		go func() { workerErr <- app.RunWorkerLoop(ctx, e, tc, st) }()
	}

	ready := make(chan string, 1)
	go func() {
		addr, ok := <-ready
		if !ok {
			return
		}
		ui := ts.UIURL()
		if ui == "" {
			ui = "(disabled)"
		}
		liveBanner := ""
		if live != nil {
			live.Listening(addr)
			liveBanner = devLiveBanner(live, liveKey)
		}
		fmt.Fprintf(e.Stdout, `
Memocart dev is running.
  API:          http://%[1]s
  Temporal UI:  %[2]s/namespaces/%[3]s/workflows
  Temporal:     %[4]s (namespace %[3]s, task queue %[5]s)
  Test API key: %[6]s

Try it (README, "Walkthrough"), in another shell:
  export API=http://%[1]s
  export KEY=%[6]s
  curl -s -X POST "$API/v1/products/preview" -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' -d '{"url":"https://www.amazon.com/dp/B08N5WRWNW"}'
%[7]s
`, addr, ui, ts.Namespace(), ts.FrontendHostPort(), e.Cfg.TemporalTaskQueue, secret, liveBanner)
	}()
	err = stack.Run(ctx, e, ready)
	if werr := <-workerErr; err == nil {
		err = werr
	}
	return err
}
