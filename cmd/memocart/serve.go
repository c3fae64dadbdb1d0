package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

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

// production is what the api and worker processes share: their flags
// (none), the start-up log, a migrated store and a Temporal client.
type production struct {
	store    *sqlstore.Store
	temporal client.Client
}

func startProduction(ctx context.Context, e env, name, usage string, args []string) (*production, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { fmt.Fprintf(e.stderr, "Usage: memocart %s\n\n%s\n", name, usage) }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	e.log.Info("starting "+name, slog.String("config", e.cfg.masked(e.getenv)))
	st, err := openStore(ctx, e)
	if err != nil {
		return nil, err
	}
	if err := requireMigrated(ctx, st); err != nil {
		st.Close()
		return nil, err
	}
	tc, err := dialTemporal(ctx, e, e.cfg.TemporalAddress)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &production{store: st, temporal: tc}, nil
}

func (p *production) close() {
	p.temporal.Close()
	_ = p.store.Close()
}

// runAPI is `memocart api`: the production HTTP API. Run as many as needed.
func runAPI(ctx context.Context, e env, args []string) error {
	p, err := startProduction(ctx, e, "api", "Serves the HTTP API on MEMOCART_HTTP_ADDR. The schema must be migrated (memocart migrate).", args)
	if err != nil {
		return err
	}
	defer p.close()
	limiter, closeLimiter, err := newLimiter(ctx, e)
	if err != nil {
		return err
	}
	defer closeLimiter()
	ready := make(chan string, 1)
	go func() {
		if addr, ok := <-ready; ok {
			e.log.Info("api listening", slog.String("addr", "http://"+addr))
		}
	}()
	stack, err := newAPIStack(e, p.store, limiter, p.temporal)
	if err != nil {
		return err
	}
	return stack.run(ctx, e, ready)
}

// runWorker is `memocart worker`: the Temporal worker running order
// workflows, their activities and the payment watcher. Scale it out by
// running more.
func runWorker(ctx context.Context, e env, args []string) error {
	p, err := startProduction(ctx, e, "worker", "Runs order workflows, their activities and the Stellar payment watcher from\nMEMOCART_TEMPORAL_TASK_QUEUE on MEMOCART_TEMPORAL_ADDRESS.", args)
	if err != nil {
		return err
	}
	defer p.close()
	return runWorkerLoop(ctx, e, p.temporal, p.store)
}
