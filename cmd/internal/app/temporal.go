package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc/codes"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/rates"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/activities/stellar"
	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/activities/webhooks"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	memoworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

// TemporalOptions are the client options of every connection to the
// configured cluster: namespace, logger, MEMOCART_TEMPORAL_COMPRESSION and
// MEMOCART_TEMPORAL_TLS*/_API_KEY.
func TemporalOptions(e Env, hostPort string) (client.Options, error) {
	opts := client.Options{
		HostPort:  hostPort,
		Namespace: e.Cfg.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(e.Log.With(slog.String("component", "temporal-sdk"))),
	}
	if !e.Cfg.TemporalGzip {
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if err := e.Cfg.TemporalSecurity.apply(&opts); err != nil {
		return client.Options{}, err
	}
	// Metrics, tracing and the log propagator (telemetry.go).
	if err := e.Tel.TemporalOptions(&opts); err != nil {
		return client.Options{}, err
	}
	return opts, nil
}

// DialTemporal connects to the Temporal frontend, retrying for a while so
// containers started together do not crash-loop while Temporal boots. A
// refusal of the credentials is not retried: waiting does not fix a wrong
// API key or an unknown client certificate.
func DialTemporal(ctx context.Context, e Env, hostPort string) (client.Client, error) {
	opts, err := TemporalOptions(e, hostPort)
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
		e.Log.Warn("Temporal not reachable yet; retrying", slog.String("address", hostPort), slog.Any("error", err))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// dialRetryFor is how long DialTemporal keeps trying an unreachable
// frontend; tests shorten it.
var dialRetryFor = 60 * time.Second

// newFulfillers is one fulfiller per mode: the sandbox for test mode, and
// Zinc for live mode when it is configured (without it the API refuses
// live orders).
func newFulfillers(e Env) (map[models.Mode]activities.Fulfiller, error) {
	fulfillers := map[models.Mode]activities.Fulfiller{models.ModeTest: sandbox.NewFulfiller(e.Cfg.SandboxStepDelay)}
	f, err := liveFulfiller(e.Cfg, e.Live, e.Log)
	if err != nil {
		return nil, err
	}
	if f != nil {
		fulfillers[models.ModeLive] = f
	}
	return fulfillers, nil
}

// webhookSender posts deliveries under each mode's address policy.
func webhookSender(cfg Config) *webhooks.Sender {
	return webhooks.NewSender(webhooks.Config{TestLoopback: cfg.WebhookTestLoopback})
}

// newPayouts wires refunds: the store, the sandbox payout in test mode,
// the payout account's on the chain in live mode once its secret file is
// configured (until then live refunds wait, retried, for a worker that
// has it), the operator's limits, the service's own accounts (never a
// destination), and alerts where operators look. It answers the payout
// account too: the seed's, which MEMOCART_STELLAR_PAYOUT_ACCOUNT must
// match if set (the API refuses that one), or else that setting.
func newPayouts(e Env, st *sqlstore.Store, wf *workflows.Client) (activities.RefundPayouts, string, error) {
	payers := map[models.Mode]activities.Payer{models.ModeTest: sandbox.NewPayer()}
	payoutAccount := e.Cfg.StellarPayoutAccount
	if f := e.Cfg.StellarPayoutSecretFile; f != "" {
		signer, err := payout.NewFileSigner(f)
		if err != nil {
			return activities.RefundPayouts{}, "", fmt.Errorf("MEMOCART_STELLAR_PAYOUT_SECRET_FILE: %w", err)
		}
		p, err := payout.NewPayer(payout.Config{
			HorizonURL: e.Cfg.StellarHorizonURL, HTTPClient: &http.Client{},
			NetworkPassphrase: e.Cfg.StellarNetwork.Passphrase(), USDCIssuer: e.Cfg.USDCIssuer,
			Signer: signer, Logger: e.Log.With(slog.String("component", "stellar-payout")),
			MaxFee: e.Cfg.StellarPayoutMaxFee,
			// Every worker on the database pays from this account.
			Lock: payoutLock{st},
		})
		if err != nil {
			return activities.RefundPayouts{}, "", fmt.Errorf("configuring the Stellar payout: %w", err)
		}
		if payoutAccount != "" && payoutAccount != p.Address() {
			return activities.RefundPayouts{}, "", fmt.Errorf("MEMOCART_STELLAR_PAYOUT_ACCOUNT is %s, but the seed of MEMOCART_STELLAR_PAYOUT_SECRET_FILE is of %s", payoutAccount, p.Address())
		}
		payoutAccount = p.Address()
		e.Log.Info("refund payouts from Stellar account", slog.String("account", p.Address()))
		payers[models.ModeLive] = p
	}
	var own []string
	for _, a := range []string{e.Cfg.StellarAccount, payoutAccount} {
		if a != "" {
			own = append(own, a)
		}
	}
	return activities.RefundPayouts{
		Store:           st,
		Payers:          payers,
		Limits:          activities.RefundLimits{AutoApproveMax: e.Cfg.RefundAutoApproveMax, DailyMax: e.Cfg.RefundDailyMax},
		ServiceAccounts: own,
		Start:           wf.StartRefund,
		Alerts:          storeAlerter{st: st, log: e.Log},
	}, payoutAccount, nil
}

// payoutLock is the database's lock of a payout account, shared by the
// workers (payout.AccountLock).
type payoutLock struct{ st *sqlstore.Store }

func (l payoutLock) LockAccount(ctx context.Context, key string) (func(), error) {
	return l.st.LockPayoutAccount(ctx, key)
}

// newOutbox is the dispatcher of webhook events: it makes each delivery's
// first attempt itself and hands what failed to the event's workflow.
// After a write, it runs in the background (InBackground): neither the
// API's answer nor the workflow's local write waits for an endpoint.
func newOutbox(e Env, c client.Client, st *sqlstore.Store) *workflows.Outbox {
	return workflows.NewOutbox(c, e.Cfg.TemporalTaskQueue, st, TestHooks.WebhookRetry).
		AttemptFirst(st, webhookSender(e.Cfg), 0)
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

// RunWorkerLoop runs the Temporal worker until ctx ends: order workflows,
// and the Stellar payment watcher when live payments are configured.
func RunWorkerLoop(ctx context.Context, e Env, c client.Client, st *sqlstore.Store) error {
	events := newOutbox(e, c, st).InBackground(e.Log)
	orders := workflows.NewClient(c, e.Cfg.TemporalTaskQueue)
	fulfillers, err := newFulfillers(e)
	if err != nil {
		return err
	}
	payouts, payoutAccount, err := newPayouts(e, st, orders)
	if err != nil {
		return err
	}
	var acts memoworker.Activities
	if acts.Orders, err = activities.NewOrders(st, fulfillers, events, nil); err != nil {
		return err
	}
	if acts.Refunds, err = activities.NewRefunds(payouts, events, nil); err != nil {
		return err
	}
	if acts.Payments, err = activities.NewPayments(st, st, acts.Refunds, events, nil); err != nil {
		return err
	}
	if acts.Webhooks, err = activities.NewWebhooks(st, webhookSender(e.Cfg), nil); err != nil {
		return err
	}
	watchers := map[string]activities.PaymentWatcher{}
	var watch *workflows.WatcherInput
	if e.Cfg.StellarAccount != "" {
		in := workflows.WatcherInput{Network: string(e.Cfg.StellarNetwork), Account: e.Cfg.StellarAccount}
		matcher, err := checkout.NewMatcher(st, orders, e.Log)
		if err != nil {
			return err
		}
		e.Tel.observeMatcher(matcher)
		w, err := stellar.NewWatcher(stellar.Config{
			HorizonURL: e.Cfg.StellarHorizonURL, Network: in.Network, Account: in.Account, USDCIssuer: e.Cfg.USDCIssuer,
			PayoutAccount:     payoutAccount,
			HandleConcurrency: 16,
			Observer:          e.Tel.stellarObserver(in.Network),
		}, &http.Client{}, st, matcher.Handle, storeAlerter{st: st, log: e.Log}, e.Log.With(slog.String("component", "stellar-watcher")))
		if err != nil {
			return fmt.Errorf("configuring the Stellar watcher: %w", err)
		}
		watchers[in.Network+"/"+in.Account] = w
		watch = &in
	}
	acts.Watches = activities.NewWatches(watchers)
	if live, ok := payouts.Payers[models.ModeLive].(balanceReader); ok {
		go e.Tel.watchPayout(ctx, live, st, e.Log)
	}
	tuning := memoworker.Tuning{
		StickyCacheSize:            e.Cfg.WorkerStickyCacheSize,
		MaxConcurrentWorkflowTasks: e.Cfg.WorkerMaxWorkflowTasks,
		MaxConcurrentActivities:    e.Cfg.WorkerMaxActivities,
	}
	w, err := startWorker(ctx, e.Log, dialRetryFor, func() starter {
		return memoworker.New(c, e.Cfg.TemporalTaskQueue, acts, tuning)
	})
	if err != nil {
		return err
	}
	e.Log.Info("worker polling", slog.String("task_queue", e.Cfg.TemporalTaskQueue), slog.String("namespace", e.Cfg.TemporalNamespace))
	if watch != nil {
		if err := orders.EnsureWatcher(ctx, *watch); err != nil {
			w.Stop()
			return fmt.Errorf("starting the Stellar watcher workflow: %w", err)
		}
		e.Log.Info("stellar watcher ensured", slog.String("workflow_id", workflows.WatcherWorkflowID(watch.Network, watch.Account)),
			slog.String("horizon", e.Cfg.StellarHorizonURL))
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

// TestHooks reach inside a running process for the end-to-end tests
// (cmd/devstack). They are set before Run starts and never in production.
var TestHooks struct {
	// AfterOrderCommit runs between an order's commit and its workflow
	// start: an error there is a crash between the two.
	AfterOrderCommit func(models.Order) error
	// SpanExporter turns traces on and receives every span, synchronously.
	SpanExporter sdktrace.SpanExporter
	// WebhookRetry replaces the webhook deliveries' retry policy.
	WebhookRetry *workflows.WebhookRetry
	// OpsEvery, when set, replaces opsEvery: how often the operator's
	// metrics are read.
	OpsEvery time.Duration
}

// APIStack is the API and what it drives: the sandbox payment source with
// its matcher, and the reconciler.
type APIStack struct {
	store   *sqlstore.Store
	server  *api.Server
	orders  *checkout.Orders
	refunds *checkout.Refunds
	matcher *checkout.Matcher
	sandbox *sandbox.PaymentSource
	outbox  *workflows.Outbox
}

func NewAPIStack(e Env, st *sqlstore.Store, limiter api.RateLimiter, c client.Client) (*APIStack, error) {
	live, err := liveCatalog(e.Cfg, e.Live, e.Log)
	if err != nil {
		return nil, err
	}
	orders := workflows.NewClient(c, e.Cfg.TemporalTaskQueue)
	matcher, err := checkout.NewMatcher(st, orders, e.Log)
	if err != nil {
		return nil, err
	}
	e.Tel.observeMatcher(matcher)
	src := sandbox.NewPaymentSource()
	outbox := newOutbox(e, c, st)
	uses := useCaseConfig(e.Cfg)
	events := outbox.InBackground(e.Log)
	orderUses, err := checkout.NewOrders(uses, st, orders, events, rateProviders(e.Cfg), nil, e.Log)
	if err != nil {
		return nil, err
	}
	refundUses, err := checkout.NewRefunds(uses, st, st, orders, orders, nil, e.Log)
	if err != nil {
		return nil, err
	}
	helpers, err := checkout.NewTestHelpers(st, src, orders, nil)
	if err != nil {
		return nil, err
	}
	cartUses, err := checkout.NewCarts(checkout.CartsConfig{Pricing: e.Cfg.Pricing, TTL: e.Cfg.CartTTL},
		map[models.Mode]checkout.Catalog{models.ModeTest: sandbox.NewCatalog(), models.ModeLive: live}, st, nil)
	if err != nil {
		return nil, err
	}
	if TestHooks.AfterOrderCommit != nil {
		orderUses.SetAfterOrderCommit(TestHooks.AfterOrderCommit)
	}
	deps := api.Deps{
		Store:       st,
		Webhooks:    liveWebhooks(e.Cfg),
		Limiter:     limiter,
		Workflows:   orders,
		Carts:       cartUses,
		Orders:      orderUses,
		Refunds:     refundUses,
		TestHelpers: helpers,
		Logger:      e.Log,

		Events:   events,
		Resolver: net.DefaultResolver,

		Readiness: []api.ReadinessCheck{temporalCheck(c)},
	}
	e.Tel.observeAPI(&deps)
	srv, err := api.NewServer(
		api.Config{
			KeyPrefix: e.Cfg.KeyPrefix, PublicURL: e.Cfg.PublicURL,
			Payments:       uses.Payments,
			RequestTimeout: e.Cfg.RequestTimeout,
			KeyCacheTTL:    e.Cfg.KeyCacheTTL,

			PublicRateLimit: e.Cfg.PublicRateLimit,
			TrustedProxies:  e.Cfg.TrustedProxies,

			WebhookTestLoopback: e.Cfg.WebhookTestLoopback,
		},
		deps,
	)
	if err != nil {
		return nil, err
	}
	return &APIStack{store: st, server: srv, orders: orderUses, refunds: refundUses, matcher: matcher, sandbox: src, outbox: outbox}, nil
}

// Pruning bounds: a batch is one short transaction (docs/benchmarks.md,
// "Pruning events"); a reconciler tick deletes at most eventPruneBatches
// of them per replica, 10,000 events every 10 s by default, far above
// the few events an order records.
const (
	eventPruneBatch   = 1000
	eventPruneBatches = 10
)

// pruneEvents deletes events recorded before cutoff, a batch at a time,
// until none is left or a tick's share is done, and returns how many.
func pruneEvents(ctx context.Context, st *sqlstore.Store, cutoff time.Time) (int, error) {
	total := 0
	for range eventPruneBatches {
		n, err := st.PruneEvents(ctx, cutoff, eventPruneBatch)
		total += n
		if err != nil || n < eventPruneBatch {
			return total, err
		}
	}
	return total, nil
}

// useCaseConfig is how the use cases (checkout) take orders, and which
// accounts are the service's own, as c configures them: the one place the
// API and the operator's commands get it from.
func useCaseConfig(c Config) checkout.Config {
	return checkout.Config{
		Payments: paymentSetups(c), NoPurchasing: noPurchasing(c), PaymentWindow: c.PaymentWindow,
		RateMaxAge: c.RateMaxAge, StartMarkDelay: api.DefaultStartMarkDelay, PayoutAccount: c.StellarPayoutAccount,
	}
}

// run serves HTTP and runs the payment source and the reconciler until ctx
// ends.
func (s *APIStack) Run(ctx context.Context, e Env, ready chan<- string) error {
	go func() { _ = s.sandbox.Watch(ctx, s.matcher.Handle) }()
	go s.reconcile(ctx, e)
	// The operator's gauges: read by every API process, from the database
	// it serves; they end with Run, before the caller closes the store.
	metricsCtx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	go e.Tel.watchBooks(metricsCtx, s.store, e.Log)
	go e.Tel.watchOps(metricsCtx, s.store, e.Log)
	err := api.Serve(ctx, e.Cfg.HTTPAddr, s.server.Handler(), e.Log, ready)
	s.orders.FlushStartMarks()
	return err
}

// reconcile periodically re-drives the hand-offs a crash can interrupt: an
// order (or a refund) committed but its workflow not started, a payment matched but not
// yet handed to its workflow, and a webhook event recorded but its delivery
// workflow not started; and a refund not settled whose run an operator
// terminated or cancelled gets a new one. All are idempotent, so every replica may run this.
// It also purges a bounded batch of expired Idempotency-Key records and
// of events past their retention.
func (s *APIStack) reconcile(ctx context.Context, e Env) {
	// A hand-off younger than grace may still be in flight: three
	// intervals, and a second more, for orders and their events carry
	// whole-second times (one begun at 12:00:00.9 is recorded 12:00:00).
	grace := 3*e.Cfg.ReconcileEvery + time.Second
	purge := func(ctx context.Context, _ time.Duration) (int, error) { return s.server.PurgeIdempotencyKeys(ctx) }
	prune := func(ctx context.Context, _ time.Duration) (int, error) {
		return pruneEvents(ctx, s.store, time.Now().Add(-e.Cfg.EventRetention))
	}
	passes := []reconcilePass{
		{s.orders.ReconcileOrders, "reconciling orders", "reconciled orders", "started", slog.LevelInfo},
		{s.refunds.ReconcileRefunds, "reconciling refunds", "reconciled refunds", "started", slog.LevelInfo},
		{s.matcher.Redeliver, "redelivering payments", "redelivered payments", "payments", slog.LevelInfo},
		{purge, "purging expired idempotency keys", "purged expired idempotency keys", "keys", slog.LevelDebug},
		{prune, "pruning events", "pruned events past their retention", "events", slog.LevelDebug},
		{s.outbox.Sweep, "dispatching webhook events", "dispatched stranded webhook events", "events", slog.LevelInfo},
	}
	t := time.NewTicker(e.Cfg.ReconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range passes {
			if n, err := p.run(ctx, grace); err != nil {
				e.Log.Warn(p.doing, slog.Any("error", err))
			} else if n > 0 {
				e.Log.Log(ctx, p.level, p.did, slog.Int(p.counted, n))
			}
		}
	}
}

// reconcilePass is one pass of reconcile: a failed pass is logged as a
// warning with what it was doing; one that did something logs what it
// did, and how many, at its level.
type reconcilePass struct {
	run     func(ctx context.Context, grace time.Duration) (int, error)
	doing   string
	did     string
	counted string
	level   slog.Level
}
