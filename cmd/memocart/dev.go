//go:build !prod

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"github.com/memocart/memocart/cmd/memocart/devtemporal"
	"github.com/memocart/memocart/workflows"
)

// runDev is `memocart dev`: the whole service in one process on embedded
// defaults: an in-process Temporal server with its Web UI (SQLite under
// MEMOCART_DATA_DIR), the app database (SQLite unless MEMOCART_DATABASE_URL
// is set), the worker, and the API with a printed test key. Nothing here is
// for production; the prod build leaves it out.
func runDev(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, `Usage: memocart dev [-no-worker]

Runs the whole service in one process: an embedded Temporal server on MEMOCART_TEMPORAL_ADDRESS
with its Web UI on MEMOCART_TEMPORAL_UI_PORT, the worker, and the API on MEMOCART_HTTP_ADDR.
Data lives under MEMOCART_DATA_DIR (SQLite) unless MEMOCART_DATABASE_URL is set. Prints a
test-mode Pro API key (MEMOCART_DEV_API_KEY to fix it).

Flags:`)
		fs.PrintDefaults()
	}
	noWorker := fs.Bool("no-worker", false, "run everything but the worker; start 'memocart worker' with the same environment\nbeside it (to profile it, debug it or measure its memory on its own)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if e.cfg.TemporalSecurity.Configured() {
		// dev dials its own embedded server, which speaks plain gRPC.
		return errors.New("MEMOCART_TEMPORAL_TLS*/MEMOCART_TEMPORAL_API_KEY are for an external Temporal cluster (memocart api, worker): dev runs its own server without TLS; unset them")
	}
	var live *devLiveServers
	if e.cfg.DevLive == "testservers" {
		var stopLive func()
		var err error
		if live, stopLive, err = startDevLive(&e); err != nil {
			return err
		}
		defer stopLive()
	}
	e.log.Info("starting dev stack", slog.String("config", e.cfg.masked(e.getenv)))
	e, stopTel, err := startTelemetry(ctx, e, "dev")
	if err != nil {
		return err
	}
	defer stopTel()
	_, stopAdmin, err := startAdmin(ctx, e)
	if err != nil {
		return err
	}
	defer stopAdmin()
	st, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		e.log.Info("applied migrations", slog.Any("migrations", applied))
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

	host, portStr, _ := net.SplitHostPort(e.cfg.TemporalAddress)
	port, _ := strconv.Atoi(portStr)
	ts, err := devtemporal.Start(ctx, devtemporal.Options{
		DataDir:          filepath.Join(e.cfg.DataDir, "temporal"),
		Host:             host,
		GRPCPort:         port,
		UIPort:           e.cfg.TemporalUIPort,
		Namespace:        e.cfg.TemporalNamespace,
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           e.log.With(slog.String("component", "temporal-server")),
	})
	if err != nil {
		return fmt.Errorf("starting embedded Temporal: %w", err)
	}
	defer ts.Stop()

	limiter, closeLimiter, err := newLimiter(ctx, e)
	if err != nil {
		return err
	}
	defer closeLimiter()
	tc, err := dialTemporal(ctx, e, ts.FrontendHostPort())
	if err != nil {
		return err
	}
	defer tc.Close()
	e.tel.setReady(st, tc)

	stack, err := newAPIStack(e, st, limiter, tc)
	if err != nil {
		return err
	}
	workerErr := make(chan error, 1)
	if *noWorker {
		e.log.Info("no worker in this process: start `memocart worker` with the same environment",
			slog.String("task_queue", e.cfg.TemporalTaskQueue))
		workerErr <- nil
	} else {
		go func() { workerErr <- runWorkerLoop(ctx, e, tc, st) }()
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
			live.listening(addr)
			liveBanner = live.banner("http://"+addr, liveKey)
		}
		fmt.Fprintf(e.stdout, `
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
`, addr, ui, ts.Namespace(), ts.FrontendHostPort(), e.cfg.TemporalTaskQueue, secret, liveBanner)
	}()
	err = stack.run(ctx, e, ready)
	if werr := <-workerErr; err == nil {
		err = werr
	}
	return err
}
