package checkout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/memocart/memocart/models"
)

// OrderStore is the store's part in the order use cases: reads, and the
// writes the use cases have decided on.
type OrderStore interface {
	// OrderForAccount returns an order by id or number if it belongs to
	// the account and mode, else models.ErrOrderNotFound.
	OrderForAccount(ctx context.Context, accountID string, mode models.Mode, idOrNumber string) (models.Order, error)
	// MarkWorkflowsStarted records that the orders' workflows exist.
	MarkWorkflowsStarted(ctx context.Context, orderIDs []string, at time.Time) error
	// OrdersAwaitingWorkflow returns orders created before the cutoff
	// whose workflow is not known to exist.
	OrdersAwaitingWorkflow(ctx context.Context, createdBefore time.Time, limit int) ([]models.Order, error)
	// CreateOrder creates the order for a cart exactly once (see
	// models.OrderRequest); false when the order existed already.
	CreateOrder(ctx context.Context, req models.OrderRequest) (models.Order, bool, error)
	// StellarCursor returns a chain watcher's saved position, or "" before
	// its first start.
	StellarCursor(ctx context.Context, network, account string) (string, error)
}

// OrderWorkflows drives the Temporal workflow that carries each order.
type OrderWorkflows interface {
	// StartOrder starts the order's workflow. It must be idempotent:
	// starting an order's workflow again is a no-op, so retries and the
	// reconciler can call it freely.
	StartOrder(ctx context.Context, o models.Order) error
	// CancelOrder has the order's workflow cancel it for its customer and
	// returns once the cancellation is written (an order already
	// cancelled is no error). It returns an error of code
	// models.CodeOrderNotCancellable when the workflow refuses (the order
	// is paid or beyond), and models.ErrOrderClosed when the workflow has
	// finished.
	CancelOrder(ctx context.Context, orderID, note string) error
}

// Events hands the webhook events an order write recorded to their
// delivery (workflows.Outbox); the outbox sweep delivers what it misses.
type Events interface {
	DispatchOrderEvents(ctx context.Context, orderID string) error
}

// Orders carries out the order use cases.
type Orders struct {
	cfg       Config
	store     OrderStore
	workflows OrderWorkflows
	events    Events
	rates     map[models.Mode]RateProvider
	own       []string // the service's accounts (Config.ownAccounts)
	now       Clock
	log       *slog.Logger

	// marks batches new orders' started marks (Config.StartMarkDelay).
	marks *startMarks
	// afterCommit, set only by tests, runs between committing an order
	// and starting its workflow (SetAfterOrderCommit).
	afterCommit func(models.Order) error
}

// NewOrders returns the order use cases on cfg: store, workflows and
// events are required; rates quote the assets not priced 1:1, per mode (a
// mode without one refuses them: rate_unavailable).
func NewOrders(cfg Config, store OrderStore, workflows OrderWorkflows, events Events, rates map[models.Mode]RateProvider, now Clock, log *slog.Logger) (*Orders, error) {
	if err := missing("Orders", map[string]bool{"store": store == nil, "workflows": workflows == nil, "events": events == nil}); err != nil {
		return nil, err
	}
	if cfg.PaymentWindow <= 0 {
		cfg.PaymentWindow = models.DefaultPaymentWindow
	}
	if cfg.RateMaxAge <= 0 {
		cfg.RateMaxAge = time.Minute
	}
	o := &Orders{cfg: cfg, store: store, workflows: workflows, events: events, rates: rates, own: cfg.ownAccounts(), now: orNow(now), log: orDiscard(log)}
	if cfg.StartMarkDelay > 0 {
		o.marks = &startMarks{delay: cfg.StartMarkDelay, write: store.MarkWorkflowsStarted, now: o.now, log: o.log}
	}
	return o, nil
}

// FlushStartMarks writes the started marks still waiting for their batch;
// call it once no more orders are created.
func (s *Orders) FlushStartMarks() {
	if s.marks != nil {
		s.marks.wait()
	}
}

// SetAfterOrderCommit installs f to run between committing an order and
// starting its workflow. Tests use it to make the process "die" at exactly
// that point; production never sets it.
func (s *Orders) SetAfterOrderCommit(f func(models.Order) error) { s.afterCommit = f }

// CancelRequest is a customer's cancel of one of its orders.
type CancelRequest struct {
	AccountID string
	Mode      models.Mode
	// Ref is the order's id or (normalised) number.
	Ref string
	// Note is the customer's reason in its own words, kept for
	// operators; may be empty.
	Note string
}

// CancelOrder cancels a customer's order awaiting payment and returns it
// as cancelled, or as it is when it was cancelled already. Whether it can
// be cancelled is models.DecideCancel's: first on the order as recorded,
// without touching the workflow when that refuses; then the workflow,
// which knows of payments not recorded yet, decides by the same rule, so
// a cancel never races a payment: whichever the workflow takes first
// wins.
func (s *Orders) CancelOrder(ctx context.Context, r CancelRequest) (models.Order, error) {
	o, err := s.store.OrderForAccount(ctx, r.AccountID, r.Mode, r.Ref)
	if err != nil {
		return models.Order{}, err
	}
	verdict, err := models.DecideCancel(o.Status, o.AmountDueReceived())
	if err != nil {
		return models.Order{}, err
	}
	if verdict == models.CancelDone {
		return o, nil
	}
	if o.WorkflowStartedAt == nil {
		// Committed but not started yet (the reconciler's case): start it,
		// then cancel through it, so no payment can slip past.
		if err := s.startWorkflow(ctx, o); err != nil {
			return models.Order{}, err
		}
	}
	err = s.workflows.CancelOrder(ctx, o.ID, r.Note)
	if err != nil && !errors.Is(err, models.ErrOrderClosed) {
		return models.Order{}, err
	}
	// Read the order back: cancelled now, or (the workflow had finished,
	// ErrOrderClosed) whatever it ended as.
	if o, err = s.store.OrderForAccount(ctx, r.AccountID, r.Mode, o.ID); err != nil {
		return models.Order{}, err
	}
	if o.Status != models.OrderCancelled {
		return models.Order{}, models.NotCancellable(o.Status)
	}
	return o, nil
}

// startWorkflow starts the order's workflow and records that it exists.
func (s *Orders) startWorkflow(ctx context.Context, o models.Order) error {
	if err := s.workflows.StartOrder(ctx, o); err != nil {
		return err
	}
	return s.store.MarkWorkflowsStarted(ctx, []string{o.ID}, s.now())
}

// reconcileBatch bounds the orders one ReconcileOrders call starts.
const reconcileBatch = 100

// ReconcileOrders starts the workflows of orders committed more than
// grace ago whose workflow is not known to exist (the process died
// between the commit and the start, or Temporal was down), and reports
// how many it started. Safe to run in every replica: starting a workflow
// twice is refused by Temporal and treated as success.
func (s *Orders) ReconcileOrders(ctx context.Context, grace time.Duration) (int, error) {
	orders, err := s.store.OrdersAwaitingWorkflow(ctx, s.now().Add(-grace), reconcileBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, o := range orders {
		// One order that keeps failing must not hold back the others.
		if err := s.startWorkflow(ctx, o); err != nil {
			errs = append(errs, fmt.Errorf("order %s: %w", o.ID, err))
			continue
		}
		s.log.InfoContext(ctx, "reconciler started order workflow", slog.String("order_id", o.ID))
		n++
	}
	return n, errors.Join(errs...)
}
