package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models/sqlstore"
)

// openStore opens the app database.
func openStore(ctx context.Context, e env) (*sqlstore.Store, error) {
	return sqlstore.Open(ctx, e.cfg.databaseDSN(), e.log)
}

// requireMigrated refuses to serve on a schema older than this binary:
// production applies migrations as a release step (memocart migrate), so a
// pending one means the release is half done.
func requireMigrated(ctx context.Context, st *sqlstore.Store) error {
	ms, err := st.Migrations(ctx)
	if err != nil {
		return fmt.Errorf("reading schema version (run memocart migrate?): %w", err)
	}
	var pending []string
	for _, m := range ms {
		if m.AppliedAt == nil {
			pending = append(pending, m.Name)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("database has pending migrations %s: run memocart migrate first", strings.Join(pending, ", "))
	}
	return nil
}

// newLimiter returns the Redis limiter when MEMOCART_REDIS_URL is set, so
// replicas share one budget per key, and the in-process one otherwise.
func newLimiter(ctx context.Context, e env) (api.RateLimiter, func(), error) {
	if e.cfg.RedisURL == "" {
		return ratelimit.NewMemory(nil), func() {}, nil
	}
	opts, err := redis.ParseURL(e.cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("MEMOCART_REDIS_URL: %w", err)
	}
	client := redis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("connecting to Redis: %w", err)
	}
	return ratelimit.NewRedis(client, "memocart:ratelimit:"), func() { _ = client.Close() }, nil
}

// runAPI is `memocart api`: the production HTTP API.
func runAPI(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "Usage: memocart api\n\nServes the HTTP API on MEMOCART_HTTP_ADDR. The schema must be migrated (memocart migrate).")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	e.log.Info("starting api", slog.String("config", e.cfg.masked(e.getenv)))
	st, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := requireMigrated(ctx, st); err != nil {
		return err
	}
	limiter, closeLimiter, err := newLimiter(ctx, e)
	if err != nil {
		return err
	}
	defer closeLimiter()
	tc, err := dialTemporal(ctx, e, e.cfg.TemporalAddress)
	if err != nil {
		return err
	}
	defer tc.Close()
	ready := make(chan string, 1)
	go func() {
		if addr, ok := <-ready; ok {
			e.log.Info("api listening", slog.String("addr", "http://"+addr))
		}
	}()
	return newAPIStack(e, st, limiter, tc).run(ctx, e, ready)
}

// runWorker is `memocart worker`: the Temporal worker running order
// workflows and their activities. Scale it out by running more.
func runWorker(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "Usage: memocart worker\n\nRuns order workflows and activities from MEMOCART_TEMPORAL_TASK_QUEUE on MEMOCART_TEMPORAL_ADDRESS.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	e.log.Info("starting worker", slog.String("config", e.cfg.masked(e.getenv)))
	st, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := requireMigrated(ctx, st); err != nil {
		return err
	}
	tc, err := dialTemporal(ctx, e, e.cfg.TemporalAddress)
	if err != nil {
		return err
	}
	defer tc.Close()
	return runWorkerLoop(ctx, e, tc, st)
}
