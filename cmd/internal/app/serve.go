package app

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/ratelimit"
	"github.com/memocart/memocart/models/sqlstore"
)

// OpenStore opens the app database, set up to record webhook events:
// their bodies written by the API's own rendering, endpoint secrets sealed
// with MEMOCART_WEBHOOK_SECRETS_KEY when it is set. Every process gets the
// same setup, since any of them may record a fact an endpoint wants (the
// API an order, the worker a payment, memocart payments a late one).
func OpenStore(ctx context.Context, e Env) (*sqlstore.Store, error) {
	st, err := sqlstore.Open(ctx, e.Cfg.databaseDSN(), e.Log)
	if err != nil {
		return nil, err
	}
	st.SetEventRenderer(api.NewEventRenderer(api.Config{PublicURL: e.Cfg.PublicURL, Payments: paymentSetups(e.Cfg)}))
	e.Tel.observeStore(st)
	if e.Cfg.WebhookSecretsKey != nil {
		if err := st.SetSecretKey(e.Cfg.WebhookSecretsKey); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
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

// NewLimiter returns the Redis limiter when MEMOCART_REDIS_URL is set, so
// replicas share one budget per key, and the in-process one otherwise.
//
// The Redis limiter is wrapped in a ratelimit.Fallback: when Redis fails or
// hangs, each request waits at most the fallback's timeout, and for a
// cooldown afterwards every process limits keys on its own (headers kept)
// without contacting Redis. Start-up still fails if Redis does not answer.
func NewLimiter(ctx context.Context, e Env) (api.RateLimiter, func(), error) {
	if e.Cfg.RedisURL == "" {
		return ratelimit.NewMemory(nil), func() {}, nil
	}
	opts, err := redisOptions(e.Cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("MEMOCART_REDIS_URL: %w", err)
	}
	client := redis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("connecting to Redis: %w", err)
	}
	limiter := ratelimit.NewFallback(
		ratelimit.NewRedis(client, "memocart:ratelimit:"),
		ratelimit.NewMemory(nil),
		ratelimit.FallbackOptions{Logger: e.Log.With(slog.String("component", "ratelimit"))},
	)
	return limiter, func() { _ = client.Close() }, nil
}

// Redis client settings for the rate limiter, in place of go-redis's
// defaults (5 s timeouts, 3 retries) under which a hung Redis held every
// request for seconds. ratelimit.Fallback bounds each call more tightly
// still (250 ms); these cover the start-up Ping and calls it has given up on.
const (
	redisTimeout    = 500 * time.Millisecond
	redisMaxRetries = 1
)

// redisTimeoutParams are the redis.ParseURL query parameters that, when
// present, win over the defaults above.
var redisTimeoutParams = []struct {
	name string
	set  func(*redis.Options)
}{
	{"dial_timeout", func(o *redis.Options) { o.DialTimeout = redisTimeout }},
	{"read_timeout", func(o *redis.Options) { o.ReadTimeout = redisTimeout }},
	{"write_timeout", func(o *redis.Options) { o.WriteTimeout = redisTimeout }},
	{"pool_timeout", func(o *redis.Options) { o.PoolTimeout = redisTimeout }},
	{"max_retries", func(o *redis.Options) { o.MaxRetries = redisMaxRetries }},
}

// redisOptions parses a redis:// (or rediss://, unix://) URL and applies
// the limiter's timeouts to every setting its query leaves unset. Commands
// always follow their context's deadline (ContextTimeoutEnabled), which no
// URL parameter controls.
func redisOptions(rawURL string) (*redis.Options, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	for _, p := range redisTimeoutParams {
		if !q.Has(p.name) {
			p.set(opts)
		}
	}
	opts.ContextTimeoutEnabled = true
	return opts, nil
}

// production is what the api and worker processes share: their flags
// (none), the start-up log, a migrated store and a Temporal client.
type production struct {
	store    *sqlstore.Store
	temporal client.Client
}

func startProduction(ctx context.Context, e Env, name, usage string, args []string) (*production, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() { fmt.Fprintf(e.Stderr, "Usage: memocart %s\n\n%s\n", name, usage) }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	e.Log.Info("starting "+name, slog.String("config", e.Cfg.Masked(e.Getenv)))
	if e.Cfg.WebhookSecretsKey == nil {
		e.Log.Warn("MEMOCART_WEBHOOK_SECRETS_KEY is not set: webhook endpoint secrets are stored in plain in the database")
	}
	st, err := openStoreFor(ctx, e, requireMigrated)
	if err != nil {
		return nil, err
	}
	tc, err := DialTemporal(ctx, e, e.Cfg.TemporalAddress)
	if err != nil {
		st.Close()
		return nil, err
	}
	if err := checkTemporalNamespace(ctx, e, tc); err != nil {
		tc.Close()
		st.Close()
		return nil, err
	}
	e.Tel.SetReady(st, tc)
	return &production{store: st, temporal: tc}, nil
}

func (p *production) close() {
	p.temporal.Close()
	_ = p.store.Close()
}

// runProduction runs the production process name (api or worker): it
// starts its telemetry, then its store and Temporal client, then the admin
// endpoint, runs serve on them and stops them in the reverse order.
func runProduction(ctx context.Context, e Env, name, usage string, args []string, serve func(Env, *production) error) error {
	e, stopTel, err := StartTelemetry(ctx, e, name)
	if err != nil {
		return err
	}
	defer stopTel()
	p, err := startProduction(ctx, e, name, usage, args)
	if err != nil {
		return err
	}
	defer p.close()
	_, stopAdmin, err := StartAdmin(ctx, e)
	if err != nil {
		return err
	}
	defer stopAdmin()
	return serve(e, p)
}

// runAPI is `memocart api`: the production HTTP API. Run as many as needed.
func runAPI(ctx context.Context, e Env, args []string) error {
	return runProduction(ctx, e, "api", "Serves the HTTP API on MEMOCART_HTTP_ADDR. The schema must be migrated (memocart migrate).", args, func(e Env, p *production) error {
		return serveAPI(ctx, e, p)
	})
}

// serveAPI serves the API on p until ctx ends.
func serveAPI(ctx context.Context, e Env, p *production) error {
	limiter, closeLimiter, err := NewLimiter(ctx, e)
	if err != nil {
		return err
	}
	defer closeLimiter()
	ready := make(chan string, 1)
	go func() {
		if addr, ok := <-ready; ok {
			e.Log.Info("api listening", slog.String("addr", "http://"+addr))
		}
	}()
	stack, err := NewAPIStack(e, p.store, limiter, p.temporal)
	if err != nil {
		return err
	}
	return stack.Run(ctx, e, ready)
}

// runWorker is `memocart worker`: the Temporal worker running order
// workflows, their activities and the payment watcher. Scale it out by
// running more.
func runWorker(ctx context.Context, e Env, args []string) error {
	return runProduction(ctx, e, "worker", "Runs order workflows, their activities and the Stellar payment watcher from\nMEMOCART_TEMPORAL_TASK_QUEUE on MEMOCART_TEMPORAL_ADDRESS.", args, func(e Env, p *production) error {
		return RunWorkerLoop(ctx, e, p.temporal, p.store)
	})
}
