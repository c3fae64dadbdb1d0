// Package app is the memocart binary's commands and wiring: it runs the API,
// the Temporal worker, database migrations and the operator commands (keys,
// payments, webhooks). cmd/memocart runs it as the production binary;
// cmd/devstack adds the developer tools.
//
// This is the only package that reads the environment and constructs
// concrete adapters (store, catalogs, limiter, Temporal client); everything
// below it receives them through small interfaces.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"text/tabwriter"
)

// Main runs the binary: the service's commands plus extra (the developer
// tools add theirs), stopped by SIGINT or SIGTERM. It exits 1 on an error.
func Main(name string, extra ...Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, extra...)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Env is what a subcommand gets: the parsed config, the raw environment for
// the masked print, its output streams and a logger.
type Env struct {
	Cfg    Config
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
	Log    *slog.Logger
	// Live reaches the live providers; the dev stack with test servers
	// replaces it.
	Live LiveClients
	// Tel is the process's metrics and traces (telemetry.go); nil in the
	// operator subcommands.
	Tel *Telemetry
}

// Command is one subcommand of the binary.
type Command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, e Env, args []string) error
	// LogFormat is the default log format of the subcommand.
	LogFormat string
}

// Commands are the service's subcommands: what the production binary runs.
func Commands() []Command {
	return []Command{
		{Name: "api", Summary: "run the HTTP API against a Temporal cluster (production: Postgres, optional Redis)", Run: runAPI, LogFormat: "json"},
		{Name: "worker", Summary: "run the Temporal worker: order workflows and their activities", Run: runWorker, LogFormat: "json"},
		{Name: "migrate", Summary: "apply pending database migrations and list them", Run: runMigrate, LogFormat: "text"},
		{Name: "keys", Summary: "create, list and revoke API keys (keys --help)", Run: runKeys, LogFormat: "text"},
		{Name: "webhooks", Summary: "create, list and delete webhook endpoints; list their delivery attempts (webhooks --help)", Run: runWebhooks, LogFormat: "text"},
		{Name: "payments", Summary: "unmatched payments, refunds due and alerts; attach a payment, record a refund (payments --help)", Run: runPayments, LogFormat: "text"},
		{Name: "refunds", Summary: "list refunds; approve, cancel or mark one sent; refund an unmatched payment (refunds --help)", Run: runRefunds, LogFormat: "text"},
		{Name: "reconcile", Summary: "check that every unit received is accounted for, per mode and asset; non-zero exit if not (reconcile --help)", Run: runReconcile, LogFormat: "text"},
		{Name: "healthcheck", Summary: "exit 0 if a URL answers 200 (container healthchecks without curl)", Run: runHealthcheck, LogFormat: "text"},
	}
}

// Run runs the subcommand args[0] of the service's commands and extra.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, extra ...Command) error {
	cmds := slices.Concat(extra, Commands())
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout, cmds)
		if len(args) == 0 {
			return errors.New("no subcommand given")
		}
		return flag.ErrHelp
	}
	for _, c := range cmds {
		if c.Name != args[0] {
			continue
		}
		cfg, err := loadConfig(getenv)
		if err != nil {
			return fmt.Errorf("configuration:\n%w", err)
		}
		format := cfg.LogFormat
		if format == "" {
			format = c.LogFormat
		}
		e := Env{Cfg: cfg, Getenv: getenv, Stdout: stdout, Stderr: stderr, Log: newLogger(stderr, format, cfg.LogLevel), Live: defaultLiveClients()}
		return c.Run(ctx, e, args[1:])
	}
	usage(stderr, cmds)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

func usage(w io.Writer, cmds []Command) {
	fmt.Fprintln(w, "memocart: crypto checkout for marketplace purchases.")
	fmt.Fprintln(w, "\nUsage: memocart <subcommand> [flags]\n\nSubcommands:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.Name, c.Summary)
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
