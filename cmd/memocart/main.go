// Command memocart is the Memocart checkout service: one binary whose
// subcommands run the API, the Temporal worker, the whole stack for
// development, database migrations and API-key administration.
//
// This is the only package that reads the environment and constructs
// concrete adapters (store, catalogs, limiter, Temporal client); everything
// below it receives them through small interfaces.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memocart:", err)
		os.Exit(1)
	}
}

// env is what a subcommand gets: the parsed config, the raw environment for
// the masked print, its output streams and a logger.
type env struct {
	cfg    Config
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	// live reaches the live providers; dev with test servers replaces it.
	live liveClients
	// tel is the process's metrics and traces (telemetry.go); nil in the
	// operator subcommands.
	tel *telemetry
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
	// logFormat is the default log format of the subcommand.
	logFormat string
}

func commands() []command {
	return []command{
		{name: "dev", summary: "run everything in one process for development: embedded stack, API, worker, a printed test key", run: runDev, logFormat: "text"},
		{name: "api", summary: "run the HTTP API against a Temporal cluster (production: Postgres, optional Redis)", run: runAPI, logFormat: "json"},
		{name: "worker", summary: "run the Temporal worker: order workflows and their activities", run: runWorker, logFormat: "json"},
		{name: "migrate", summary: "apply pending database migrations and list them", run: runMigrate, logFormat: "text"},
		{name: "keys", summary: "create, list and revoke API keys (keys --help)", run: runKeys, logFormat: "text"},
		{name: "loadtest", summary: "measure the service against pgbench and bare Temporal starts on the same servers (loadtest --help)", run: runLoadtest, logFormat: "text"},
		{name: "webhooks", summary: "create, list and delete webhook endpoints; list their delivery attempts (webhooks --help)", run: runWebhooks, logFormat: "text"},
		{name: "payments", summary: "unmatched payments, refunds due and alerts; attach a payment, record a refund (payments --help)", run: runPayments, logFormat: "text"},
		{name: "cluster", summary: "the production topology on this machine without Docker: up, down, status... (cluster --help)", run: runCluster, logFormat: "text"},
		{name: "chaos", summary: "orders through a cluster of its own while its processes are killed; checks that none is lost (chaos --help)", run: runChaos, logFormat: "text"},
		{name: "healthcheck", summary: "exit 0 if a URL answers 200 (container healthchecks without curl)", run: runHealthcheck, logFormat: "text"},
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return errors.New("no subcommand given")
		}
		return flag.ErrHelp
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		cfg, err := loadConfig(getenv)
		if err != nil {
			return fmt.Errorf("configuration:\n%w", err)
		}
		format := cfg.LogFormat
		if format == "" {
			format = c.logFormat
		}
		e := env{cfg: cfg, getenv: getenv, stdout: stdout, stderr: stderr, log: newLogger(stderr, format, cfg.LogLevel), live: defaultLiveClients()}
		return c.run(ctx, e, args[1:])
	}
	usage(stderr)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "memocart: crypto checkout for marketplace purchases.")
	fmt.Fprintln(w, "\nUsage: memocart <subcommand> [flags]\n\nSubcommands:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nEach subcommand takes --help. Configuration is read from the environment:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  VARIABLE\tDEFAULT\tMEANING\n")
	writeEnvHelp(tw)
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
