package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/payments"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/api"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	memoworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

// dialTemporal connects to the Temporal frontend, retrying for a while so
// containers started together do not crash-loop while Temporal boots.
func dialTemporal(ctx context.Context, e env, hostPort string) (client.Client, error) {
	opts := client.Options{
		HostPort:  hostPort,
		Namespace: e.cfg.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(e.log.With(slog.String("component", "temporal-sdk"))),
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			return c, nil
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

// newActivities wires the workflow's side effects: the store and one
// fulfiller per mode. Live fulfilment does not exist yet, so a live order
// that gets paid fails its sourcing step visibly instead of pretending.
func newActivities(e env, st *sqlstore.Store) *activities.Activities {
	return &activities.Activities{
		Store:      st,
		Fulfillers: map[models.Mode]activities.Fulfiller{models.ModeTest: sandbox.NewFulfiller(e.cfg.SandboxStepDelay)},
	}
}

// runWorkerLoop runs the Temporal worker until ctx ends.
func runWorkerLoop(ctx context.Context, e env, c client.Client, st *sqlstore.Store) error {
	w := memoworker.New(c, e.cfg.TemporalTaskQueue, newActivities(e, st))
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting worker: %w", err)
	}
	e.log.Info("worker polling", slog.String("task_queue", e.cfg.TemporalTaskQueue), slog.String("namespace", e.cfg.TemporalNamespace))
	<-ctx.Done()
	w.Stop()
	return nil
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
	orders  *workflows.Client
}

func newAPIStack(e env, st *sqlstore.Store, limiter api.RateLimiter, c client.Client) *apiStack {
	orders := workflows.NewClient(c, e.cfg.TemporalTaskQueue)
	matcher := payments.NewMatcher(st, orders, e.log)
	src := sandbox.NewPaymentSource()
	srv := api.NewServer(
		api.Config{
			KeyPrefix: e.cfg.KeyPrefix, CartTTL: e.cfg.CartTTL, PaymentWindow: e.cfg.PaymentWindow,
			Pricing: e.cfg.Pricing, PublicURL: e.cfg.PublicURL,
			PaymentAddresses: map[models.Mode]string{models.ModeTest: e.cfg.SandboxPayTo},
		},
		api.Deps{
			Store:        st,
			Catalogs:     map[models.Mode]api.Catalog{models.ModeTest: sandbox.NewCatalog()},
			Limiter:      limiter,
			Workflows:    orders,
			TestPayments: src,
			Logger:       e.log,
		},
	)
	if testHookAfterOrderCommit != nil {
		srv.SetAfterOrderCommit(testHookAfterOrderCommit)
	}
	return &apiStack{server: srv, matcher: matcher, sandbox: src, orders: orders}
}

// run serves HTTP and runs the payment source and the reconciler until ctx
// ends.
func (s *apiStack) run(ctx context.Context, e env, ready chan<- string) error {
	go func() { _ = s.sandbox.Watch(ctx, s.matcher.Handle) }()
	go s.reconcile(ctx, e)
	return api.Serve(ctx, e.cfg.HTTPAddr, s.server.Handler(), e.log, ready)
}

// reconcile periodically re-drives the two hand-offs a crash can interrupt:
// an order committed but its workflow not started, and a payment matched
// but not yet handed to its workflow. Both are idempotent, so every replica
// may run this.
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
	}
}
