package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/payments"
	"github.com/memocart/memocart/activities/rates"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/activities/stellar"
	"github.com/memocart/memocart/activities/webhooks"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	memoworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

// temporalOptions are the client options of every connection to the
// configured cluster: namespace, logger and MEMOCART_TEMPORAL_TLS*/_API_KEY.
func temporalOptions(e env, hostPort string) (client.Options, error) {
	opts := client.Options{
		HostPort:  hostPort,
		Namespace: e.cfg.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(e.log.With(slog.String("component", "temporal-sdk"))),
	}
	if err := e.cfg.TemporalSecurity.apply(&opts); err != nil {
		return client.Options{}, err
	}
	// Metrics, tracing and the log propagator (telemetry.go).
	if err := e.tel.temporalOptions(&opts); err != nil {
		return client.Options{}, err
	}
	return opts, nil
}

// dialTemporal connects to the Temporal frontend, retrying for a while so
// containers started together do not crash-loop while Temporal boots. A
// refusal of the credentials is not retried: waiting does not fix a wrong
// API key or an unknown client certificate.
func dialTemporal(ctx context.Context, e env, hostPort string) (client.Client, error) {
	opts, err := temporalOptions(e, hostPort)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(dialRetryFor)
	for {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			return c, nil
		}
		switch serviceerror.ToStatus(err).Code() {
		case codes.Unauthenticated, codes.PermissionDenied:
			return nil, fmt.Errorf("the Temporal frontend at %s refused the credentials (MEMOCART_TEMPORAL_API_KEY, MEMOCART_TEMPORAL_TLS_CERT_FILE): %w", hostPort, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("connecting to Temporal at %s: %w", hostPort, err)
		}
		e.log.Warn("Temporal not reachable yet; retrying", slog.String("address", hostPort), slog.Any("error", err))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// dialRetryFor is how long dialTemporal keeps trying an unreachable
// frontend; tests shorten it.
var dialRetryFor = 60 * time.Second

// newActivities wires the workflow's side effects: the store and one
// fulfiller per mode, the sandbox for test mode and Zinc for live mode when
// it is configured (without it the API refuses live orders).
func newActivities(e env, st *sqlstore.Store) (*activities.Activities, error) {
	fulfillers := map[models.Mode]activities.Fulfiller{models.ModeTest: sandbox.NewFulfiller(e.cfg.SandboxStepDelay)}
	f, err := liveFulfiller(e.cfg, e.live, e.log)
	if err != nil {
		return nil, err
	}
	if f != nil {
		fulfillers[models.ModeLive] = f
	}
	return &activities.Activities{
		Store: st, Refunds: st, Fulfillers: fulfillers,
		Webhooks: st,
		Sender:   webhooks.NewSender(webhooks.Config{TestLoopback: e.cfg.WebhookTestLoopback}),
	}, nil
}

// testWebhookRetry, set only by this package's end-to-end tests before run
// starts, shortens the webhook delivery schedule.
var testWebhookRetry *workflows.WebhookRetry

// newOutbox is the dispatcher of webhook events to their workflows.
func newOutbox(e env, c client.Client, st *sqlstore.Store) *workflows.Outbox {
	return workflows.NewOutbox(c, e.cfg.TemporalTaskQueue, st, testWebhookRetry)
}

// paymentSetups is where payers pay, per mode: the sandbox placeholder in
// test mode; the configured Stellar account in live mode, if any.
func paymentSetups(cfg Config) map[models.Mode]api.PaymentSetup {
	out := map[models.Mode]api.PaymentSetup{
		// The sandbox shows testnet's USDC issuer so wallets' links look real.
		models.ModeTest: {Address: cfg.SandboxPayTo, Network: "sandbox", USDCIssuer: models.DefaultUSDCIssuer(models.StellarTestnet)},
	}
	if cfg.StellarAccount != "" {
		live := api.PaymentSetup{Address: cfg.StellarAccount, Network: string(cfg.StellarNetwork), USDCIssuer: cfg.USDCIssuer, Watched: true}
		if cfg.StellarNetwork != models.StellarPubnet {
			live.NetworkPassphrase = cfg.StellarNetwork.Passphrase()
		}
		out[models.ModeLive] = live
	}
	return out
}

// rateProviders quotes XLM: a fixed rate in test mode (offline), the
// configured spot price endpoint in live mode, cached briefly so a burst
// of orders makes one request, never served stale.
func rateProviders(cfg Config) map[models.Mode]api.RateProvider {
	return map[models.Mode]api.RateProvider{
		models.ModeTest: rates.NewFixed(cfg.SandboxXLMRate, nil),
		models.ModeLive: rates.NewCached(rates.NewCoinbase(cfg.XLMRateURL, nil, nil), cfg.RateMaxAge/2, nil),
	}
}

// storeAlerter raises watcher alerts where operators look: the alerts
// table (memocart payments) and the error log.
type storeAlerter struct {
	st  *sqlstore.Store
	log *slog.Logger
}

func (a storeAlerter) Alert(ctx context.Context, kind, detail string) {
	a.log.ErrorContext(ctx, "ALERT: operator action needed", slog.String("alert", kind), slog.String("detail", detail))
	if err := a.st.RaiseAlert(ctx, kind, detail, time.Now()); err != nil {
		a.log.ErrorContext(ctx, "recording alert", slog.Any("error", err))
	}
}

// runWorkerLoop runs the Temporal worker until ctx ends: order workflows,
// and the Stellar payment watcher when live payments are configured.
func runWorkerLoop(ctx context.Context, e env, c client.Client, st *sqlstore.Store) error {
	acts, err := newActivities(e, st)
	if err != nil {
		return err
	}
	acts.Events = newOutbox(e, c, st)
	orders := workflows.NewClient(c, e.cfg.TemporalTaskQueue)
	var watch *workflows.WatcherInput
	if e.cfg.StellarAccount != "" {
		in := workflows.WatcherInput{Network: string(e.cfg.StellarNetwork), Account: e.cfg.StellarAccount}
		matcher := payments.NewMatcher(st, orders, e.log)
		e.tel.observeMatcher(matcher)
		w, err := stellar.NewWatcher(stellar.Config{
			HorizonURL: e.cfg.StellarHorizonURL, Network: in.Network, Account: in.Account, USDCIssuer: e.cfg.USDCIssuer,
			HandleConcurrency: 16,
			Observer:          e.tel.stellarObserver(in.Network),
		}, &http.Client{}, st, matcher.Handle, storeAlerter{st: st, log: e.log}, e.log.With(slog.String("component", "stellar-watcher")))
		if err != nil {
			return fmt.Errorf("configuring the Stellar watcher: %w", err)
		}
		acts.Watchers = map[string]activities.PaymentWatcher{in.Network + "/" + in.Account: w}
		watch = &in
	}
	w, err := startWorker(ctx, e.log, dialRetryFor, func() starter {
		return memoworker.New(c, e.cfg.TemporalTaskQueue, acts, memoworker.Tuning{
			StickyCacheSize:            e.cfg.WorkerStickyCacheSize,
			MaxConcurrentWorkflowTasks: e.cfg.WorkerMaxWorkflowTasks,
			MaxConcurrentActivities:    e.cfg.WorkerMaxActivities,
		})
	})
	if err != nil {
		return err
	}
	e.log.Info("worker polling", slog.String("task_queue", e.cfg.TemporalTaskQueue), slog.String("namespace", e.cfg.TemporalNamespace))
	if watch != nil {
		if err := orders.EnsureWatcher(ctx, *watch); err != nil {
			w.Stop()
			return fmt.Errorf("starting the Stellar watcher workflow: %w", err)
		}
		e.log.Info("stellar watcher ensured", slog.String("workflow_id", workflows.WatcherWorkflowID(watch.Network, watch.Account)),
			slog.String("horizon", e.cfg.StellarHorizonURL))
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

// starter is the part of a Temporal worker startWorker drives.
type starter interface {
	Start() error
	Stop()
}

// startWorker starts a worker built by build, retrying for up to retryFor
// while Temporal is unreachable: the client's dial succeeded, but the
// server can die before the worker's own start-up calls (make chaos saw a
// worker exit when Temporal was killed in that instant, leaving a replica
// down until something restarted it). Each attempt builds a new worker,
// since one whose Start failed is not started again. Other errors (an
// unknown namespace, a bad option) are returned at once.
func startWorker(ctx context.Context, log *slog.Logger, retryFor time.Duration, build func() starter) (starter, error) {
	deadline := time.Now().Add(retryFor)
	for {
		w := build()
		err := w.Start()
		if err == nil {
			return w, nil
		}
		// serviceerror.ToStatus reads the code of the SDK's service errors
		// as well as of plain gRPC ones.
		switch serviceerror.ToStatus(err).Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		default:
			return nil, fmt.Errorf("starting worker: %w", err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("starting worker: Temporal unreachable for %s: %w", retryFor, err)
		}
		log.Warn("worker could not start, Temporal unreachable; retrying", slog.Any("error", err))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// testHookAfterOrderCommit is set only by this package's end-to-end tests,
// before run starts, to simulate a crash between an order's commit and its
// workflow start.
var testHookAfterOrderCommit func(models.Order) error

// apiStack is the API and what it drives: the sandbox payment source with
// its matcher, and the reconciler.
type apiStack struct {
	server  *api.Server
	matcher *payments.Matcher
	sandbox *sandbox.PaymentSource
	outbox  *workflows.Outbox
}

func newAPIStack(e env, st *sqlstore.Store, limiter api.RateLimiter, c client.Client) (*apiStack, error) {
	live, err := liveCatalog(e.cfg, e.live, e.log)
	if err != nil {
		return nil, err
	}
	orders := workflows.NewClient(c, e.cfg.TemporalTaskQueue)
	matcher := payments.NewMatcher(st, orders, e.log)
	e.tel.observeMatcher(matcher)
	src := sandbox.NewPaymentSource()
	outbox := newOutbox(e, c, st)
	deps := api.Deps{
		Store:        st,
		Catalogs:     map[models.Mode]api.Catalog{models.ModeTest: sandbox.NewCatalog(), models.ModeLive: live},
		Webhooks:     liveWebhooks(e.cfg),
		Limiter:      limiter,
		Workflows:    orders,
		Rates:        rateProviders(e.cfg),
		TestPayments: src,
		Logger:       e.log,

		Events:   outbox,
		Resolver: net.DefaultResolver,

		Readiness: []api.ReadinessCheck{temporalCheck(c)},
	}
	e.tel.observeAPI(&deps)
	srv := api.NewServer(
		api.Config{
			KeyPrefix: e.cfg.KeyPrefix, CartTTL: e.cfg.CartTTL, PaymentWindow: e.cfg.PaymentWindow,
			Pricing: e.cfg.Pricing, PublicURL: e.cfg.PublicURL,
			Payments:       paymentSetups(e.cfg),
			RateMaxAge:     e.cfg.RateMaxAge,
			NoPurchasing:   noPurchasing(e.cfg),
			RequestTimeout: e.cfg.RequestTimeout,
			KeyCacheTTL:    e.cfg.KeyCacheTTL,
			StartMarkDelay: api.DefaultStartMarkDelay,

			PublicRateLimit: e.cfg.PublicRateLimit,
			TrustedProxies:  e.cfg.TrustedProxies,

			WebhookTestLoopback: e.cfg.WebhookTestLoopback,
		},
		deps,
	)
	if testHookAfterOrderCommit != nil {
		srv.SetAfterOrderCommit(testHookAfterOrderCommit)
	}
	return &apiStack{server: srv, matcher: matcher, sandbox: src, outbox: outbox}, nil
}

// run serves HTTP and runs the payment source and the reconciler until ctx
// ends.
func (s *apiStack) run(ctx context.Context, e env, ready chan<- string) error {
	go func() { _ = s.sandbox.Watch(ctx, s.matcher.Handle) }()
	go s.reconcile(ctx, e)
	err := api.Serve(ctx, e.cfg.HTTPAddr, s.server.Handler(), e.log, ready)
	s.server.FlushStartMarks()
	return err
}

// reconcile periodically re-drives the hand-offs a crash can interrupt: an
// order committed but its workflow not started, a payment matched but not
// yet handed to its workflow, and a webhook event recorded but its delivery
// workflow not started. All are idempotent, so every replica may run this.
// It also purges a bounded batch of expired Idempotency-Key records.
func (s *apiStack) reconcile(ctx context.Context, e env) {
	// A hand-off younger than grace may still be in flight.
	grace := 3 * e.cfg.ReconcileEvery
	t := time.NewTicker(e.cfg.ReconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := s.server.ReconcileOrders(ctx, grace); err != nil {
			e.log.Warn("reconciling orders", slog.Any("error", err))
		} else if n > 0 {
			e.log.Info("reconciled orders", slog.Int("started", n))
		}
		if n, err := s.matcher.Redeliver(ctx, grace); err != nil {
			e.log.Warn("redelivering payments", slog.Any("error", err))
		} else if n > 0 {
			e.log.Info("redelivered payments", slog.Int("payments", n))
		}
		if n, err := s.server.PurgeIdempotencyKeys(ctx); err != nil {
			e.log.Warn("purging expired idempotency keys", slog.Any("error", err))
		} else if n > 0 {
			e.log.Debug("purged expired idempotency keys", slog.Int("keys", n))
		}
		if n, err := s.outbox.Sweep(ctx, grace); err != nil {
			e.log.Warn("dispatching webhook events", slog.Any("error", err))
		} else if n > 0 {
			e.log.Info("dispatched stranded webhook events", slog.Int("events", n))
		}
	}
}
