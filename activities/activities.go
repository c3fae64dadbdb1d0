package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/memocart/memocart/models"
)

// Store is the order database as the workflow's activities see it.
type Store interface {
	// Order returns the order, or an error wrapping models.ErrOrderNotFound.
	Order(ctx context.Context, orderID string) (models.Order, error)
	// RecordTransition applies one step of the workflow's decisions. It is
	// idempotent: the first timestamp of a step wins and the status never
	// moves backwards.
	RecordTransition(ctx context.Context, orderID string, t models.Transition, now time.Time) error
	// RecordPayment stores a payment and attaches it to the order,
	// idempotently by p.ID.
	RecordPayment(ctx context.Context, orderID string, p models.Payment, now time.Time) error
	// RecordFulfilment stores the latest snapshot of the order at its
	// buying provider, replacing the previous one.
	RecordFulfilment(ctx context.Context, orderID string, f models.Fulfilment, now time.Time) error
}

// Refunds is the order database's record of money sent back. The order
// workflow writes through it while it waits for an order's refund, so
// that it, not the operator's command, is the one writer of the order
// until it closes: a payment arriving at the same moment is then either
// counted before the refund or marked late after it, never lost between.
type Refunds interface {
	// MarkOrderRefunded records that the money an order received was sent
	// back in the transaction txHash. Recording the same txHash again is
	// not an error, so a retried activity succeeds.
	MarkOrderRefunded(ctx context.Context, orderNumber, txHash string, at time.Time) error
	// MarkRecordedPaymentLate records that a payment the workflow stored
	// without crediting it reached its order too late to count: it is due
	// back on its own.
	MarkRecordedPaymentLate(ctx context.Context, paymentID string, at time.Time) error
}

// Fulfiller buys an order's items through a buying provider and reports
// how the purchase and its parcels progress. The order workflow places the
// order once, then checks it on the fulfiller's schedule (and whenever the
// provider's webhook says something changed) until it is delivered or
// failed.
type Fulfiller interface {
	// Place buys the order's items and returns the provider's reference.
	// It must be idempotent by order id and attempt: placing the same
	// attempt again (a retried activity, a restarted worker, a replayed
	// workflow) returns the same reference and never buys twice. Attempt
	// starts at 1; the workflow places a new attempt only after the
	// previous one failed retryably (Fulfilment.Retryable), when nothing
	// was bought. A permanent refusal is an error wrapping
	// models.ErrSourcingFailed whose message a client may read; an outage
	// is any other error, and is retried.
	Place(ctx context.Context, o models.Order, attempt int) (models.Placement, error)
	// Check returns the order's state at the provider.
	Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error)
	// Schedule is how often to check an order, by how far it has come.
	Schedule() models.PollSchedule
}

// Activities carries the dependencies of every activity. Register a
// pointer to it with the worker; the workflow calls its methods through
// method values of a nil *Activities, so the registered names are the
// method names.
type Activities struct {
	Store Store
	// Refunds records refunds and late payments for the order workflow
	// (RecordRefund, RecordLatePayment); nil on workers whose orders never
	// owe money back (tests).
	Refunds Refunds
	// Payouts creates refunds and pays them out (refunds.go); nil on a
	// worker that pays none: its refund activities fail retryably, so the
	// refunds wait, visibly, for a worker that does.
	Payouts *RefundPayouts
	// Fulfillers holds one fulfiller per mode: the sandbox for test, the
	// marketplaces for live. A paid order of a mode without one keeps
	// retrying its sourcing (live_mode_unavailable, retryable) until one
	// is deployed.
	Fulfillers map[models.Mode]Fulfiller
	// Watchers holds the chain payment watchers this worker can run, keyed
	// "network/account".
	Watchers map[string]PaymentWatcher
	// Webhooks: the endpoints, events and attempts; Sender posts
	// deliveries; Events hands the events an order write recorded to their
	// delivery workflows (nil: the outbox sweep alone).
	Webhooks WebhookStore
	Sender   WebhookSender
	Events   EventDispatcher
	// Now is the clock of webhook attempts (signatures, attempt times)
	// and of WatchOrder's first check; nil: time.Now. Workflow tests set
	// the test suite's clock.
	Now func() time.Time

	// Tests override how often and how heartbeats are recorded: the SDK
	// forwards at most one heartbeat per throttle interval (30s by default).
	heartbeatEvery  time.Duration
	recordHeartbeat func(ctx context.Context, details ...any)
}

// RecordTransition writes one step of the workflow's progress.
// The store records the events of the facts it writes in the same
// transaction; they are dispatched once it has committed.
func (a *Activities) RecordTransition(ctx context.Context, orderID string, t models.Transition) error {
	defer a.heartbeat(ctx)()
	if err := a.Store.RecordTransition(ctx, orderID, t, a.clock()); err != nil {
		return temporalError(err)
	}
	a.dispatchEvents(ctx, orderID)
	return nil
}

// RecordPayment stores a payment the workflow has seen for the order, and
// dispatches the events that recorded.
func (a *Activities) RecordPayment(ctx context.Context, orderID string, p models.Payment) error {
	defer a.heartbeat(ctx)()
	if err := a.Store.RecordPayment(ctx, orderID, p, a.clock()); err != nil {
		return temporalError(err)
	}
	a.dispatchEvents(ctx, orderID)
	return nil
}

// RecordRefund records that the order's received money was sent back in
// txHash, at the workflow's time at.
func (a *Activities) RecordRefund(ctx context.Context, orderNumber, txHash string, at time.Time) error {
	if a.Refunds == nil {
		return temporal.NewNonRetryableApplicationError("this worker records no refunds", string(models.CodeInternal), nil)
	}
	defer a.heartbeat(ctx)()
	if err := a.Refunds.MarkOrderRefunded(ctx, orderNumber, txHash, at); err != nil {
		return temporalError(err)
	}
	return nil
}

// RecordLatePayment stores a payment the workflow took in after the
// order's refunds were recorded or created and marks it late: it is not
// credited (the refunds covered what the order had), and it is due back
// on its own: its refund is created here (on a worker that pays refunds).
func (a *Activities) RecordLatePayment(ctx context.Context, orderID string, p models.Payment, at time.Time) error {
	if a.Refunds == nil {
		return temporal.NewNonRetryableApplicationError("this worker records no refunds", string(models.CodeInternal), nil)
	}
	defer a.heartbeat(ctx)()
	if err := a.Store.RecordPayment(ctx, orderID, p, a.clock()); err != nil {
		return temporalError(err)
	}
	if err := a.Refunds.MarkRecordedPaymentLate(ctx, p.ID, at); err != nil {
		return temporalError(err)
	}
	a.dispatchEvents(ctx, orderID)
	if a.Payouts == nil {
		return nil
	}
	o, err := a.Store.Order(ctx, orderID)
	if err != nil {
		return temporalError(err)
	}
	_, err = a.CreateRefunds(ctx, CreateRefundsInput{OrderID: orderID, OrderNumber: o.Number})
	return err
}

// PlaceOrder places the order with its buying provider and returns the
// provider's reference. Attempt numbers the placements of one order (see
// Fulfiller.Place); each is idempotent. A refusal is a non-retryable
// sourcing_failed error carrying the client-readable reason.
func (a *Activities) PlaceOrder(ctx context.Context, orderID string, attempt int) (models.Placement, error) {
	defer a.heartbeat(ctx)()
	return a.placeOrder(ctx, orderID, attempt)
}

func (a *Activities) placeOrder(ctx context.Context, orderID string, attempt int) (models.Placement, error) {
	o, f, err := a.orderAndFulfiller(ctx, orderID)
	if err != nil {
		return models.Placement{}, err
	}
	// Every try to spend the order's money is logged, retries included;
	// the workflow logs only the placement that succeeded.
	logger(ctx).Info("Placing the order with the buying provider", "Attempt", attempt, "Mode", string(o.Mode))
	p, err := f.Place(ctx, o, attempt)
	if err != nil {
		return models.Placement{}, temporalError(err)
	}
	// Recorded before the workflow learns the reference, so an operator
	// can find the provider's order even if the worker dies right now.
	if err := a.Store.RecordFulfilment(ctx, orderID, models.Fulfilment{Ref: p.Ref, Stage: models.FulfilmentPending}, a.clock()); err != nil {
		return models.Placement{}, temporalError(err)
	}
	return p, nil
}

// CheckOrder asks the provider where the order is, stores the snapshot
// (shipments and checkpoints, for clients and operators) and returns the
// small Progress the workflow decides on.
func (a *Activities) CheckOrder(ctx context.Context, orderID, ref string) (models.Progress, error) {
	defer a.heartbeat(ctx)()
	_, p, err := a.checkOrder(ctx, orderID, ref)
	return p, err
}

// checkOrder is one check: the order as stored before it, and the
// provider's progress; the provider's snapshot is stored.
func (a *Activities) checkOrder(ctx context.Context, orderID, ref string) (models.Order, models.Progress, error) {
	o, snap, p, err := a.askProvider(ctx, orderID, ref)
	if err == nil {
		err = a.recordSnapshot(ctx, orderID, snap)
	}
	return o, p, err
}

// askProvider is a check without storing its snapshot: the order as
// stored before it, the provider's snapshot and the progress it makes.
func (a *Activities) askProvider(ctx context.Context, orderID, ref string) (models.Order, models.Fulfilment, models.Progress, error) {
	o, f, err := a.orderAndFulfiller(ctx, orderID)
	if err != nil {
		return o, models.Fulfilment{}, models.Progress{}, err
	}
	snap, err := f.Check(ctx, o, ref)
	if err != nil {
		return o, models.Fulfilment{}, models.Progress{}, temporalError(err)
	}
	if snap.Ref == "" {
		snap.Ref = ref
	}
	p := snap.Progress()
	p.NextCheck = f.Schedule().Next(p.Status)
	return o, snap, p, nil
}

func (a *Activities) recordSnapshot(ctx context.Context, orderID string, snap models.Fulfilment) error {
	if err := a.Store.RecordFulfilment(ctx, orderID, snap, a.clock()); err != nil {
		return temporalError(err)
	}
	return nil
}

// WatchOrderInput asks WatchOrder to follow the order placed as Ref,
// checking first at NotBefore.
type WatchOrderInput struct {
	OrderID   string
	Ref       string
	NotBefore time.Time
	// Written is set only by runs from before watch-reports, whose watch
	// wrote the steps it found on their behalf (watch_legacy.go).
	Written *models.Transition `json:",omitempty"`
}

// OrderUnchanged is the error type of a WatchOrder attempt that found no
// news: Temporal retries it after the wait the error names.
const OrderUnchanged = "order_unchanged"

// WatchOrder checks the order at its provider, as CheckOrder does, until
// the provider reports news to the order as the database holds it
// (models.Progress.News: what its workflow has written), and returns that
// progress for the workflow to write: the workflow is the only writer of
// its order's steps; a watch stores only the provider's snapshot, as
// every check does. Comparing with the database, not with a copy in the
// input, keeps a watch current while the workflow moves the order on a
// webhook's check, so it never has to be cancelled and started again.
//
// An attempt that finds no news (or is early) fails as OrderUnchanged,
// with the provider's advised wait as the next retry's delay: Temporal
// keeps that retry on the server, so an idle check costs one action and
// no history event, where a timer and an activity cost two actions and
// eleven events. The error is benign: the SDK logs it at debug level and
// counts no activity failure in its metrics.
func (a *Activities) WatchOrder(ctx context.Context, in WatchOrderInput) (models.Progress, error) {
	wait := in.NotBefore.Sub(a.clock())
	if wait > maxWatchSleep {
		return models.Progress{}, unchanged("first check due", wait)
	}
	defer a.heartbeat(ctx)()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return models.Progress{}, ctx.Err()
		case <-t.C:
		}
	}
	o, snap, p, err := a.askProvider(ctx, in.OrderID, in.Ref)
	if err != nil {
		return p, err
	}
	if in.Written != nil {
		return a.watchWrites(ctx, in, o, snap, p)
	}
	if err := a.recordSnapshot(ctx, in.OrderID, snap); err != nil {
		return models.Progress{}, err
	}
	if !p.News(o.Status, o.Shipment) {
		return models.Progress{}, unchanged("no news from the buying provider (still "+string(p.Status)+")", p.NextCheck)
	}
	return p, nil
}

// maxWatchSleep is the longest wait for a first check that WatchOrder
// sleeps through, heartbeating, rather than failing the attempt early: an
// attempt costs the server a retry timer and a task dispatch, which a
// sandbox order's few seconds between steps do not pay for.
const maxWatchSleep = 5 * time.Second

// minRecheck keeps a provider advising no wait from making WatchOrder a
// busy loop.
const minRecheck = time.Second

// unchanged is WatchOrder's error for an attempt with nothing to report;
// the next attempt runs after wait.
func unchanged(msg string, wait time.Duration) error {
	wait = max(wait, minRecheck)
	return temporal.NewApplicationErrorWithOptions(fmt.Sprintf("%s; next check in %s", msg, wait.Round(time.Millisecond)), OrderUnchanged,
		temporal.ApplicationErrorOptions{NextRetryDelay: wait, Category: temporal.ApplicationErrorCategoryBenign})
}

// SourceOrder, ShipOrder and DeliverOrder are the activities of Order
// workflows started before fulfilment moved to PlaceOrder and CheckOrder
// (workflow version fulfil-by-polling). They stay registered so such runs
// finish; each blocks, polling the fulfiller, until its step is reached,
// and heartbeats all along, the waits between checks included.

// SourceOrder places the order and waits until the provider has bought it.
func (a *Activities) SourceOrder(ctx context.Context, orderID string) (string, error) {
	defer a.heartbeat(ctx)()
	p, err := a.placeOrder(ctx, orderID, 1)
	if err != nil {
		return "", err
	}
	return p.Ref, a.awaitProgress(ctx, orderID, p.Ref, models.OrderOrdered, nil)
}

// ShipOrder waits until the order has shipped and returns the shipment.
func (a *Activities) ShipOrder(ctx context.Context, orderID string) (models.Shipment, error) {
	defer a.heartbeat(ctx)()
	var s models.Shipment
	err := a.awaitProgress(ctx, orderID, "", models.OrderShipped, &s)
	return s, err
}

// DeliverOrder waits until the order has been delivered.
func (a *Activities) DeliverOrder(ctx context.Context, orderID string) error {
	defer a.heartbeat(ctx)()
	return a.awaitProgress(ctx, orderID, "", models.OrderDelivered, nil)
}

// awaitProgress checks the order on its fulfiller's schedule until it has
// reached want (or gone past it). A failure is a sourcing_failed error,
// which the old workflow code turns into a failed order.
func (a *Activities) awaitProgress(ctx context.Context, orderID, ref string, want models.OrderStatus, s *models.Shipment) error {
	if ref == "" {
		o, err := a.Store.Order(ctx, orderID)
		if err != nil {
			return temporalError(err)
		}
		if o.Fulfilment == nil || o.Fulfilment.Ref == "" {
			return temporalError(models.Errorf(models.CodeInternal, "order %s was never placed", orderID))
		}
		ref = o.Fulfilment.Ref
	}
	for {
		_, p, err := a.checkOrder(ctx, orderID, ref)
		if err != nil {
			return err
		}
		if p.Status == models.OrderFailed {
			return temporalError(fmt.Errorf("order %s: %w", orderID, models.Errorf(models.CodeSourcingFailed, "%s", p.Reason)))
		}
		if models.StepReached(p.Status, want) {
			if s != nil {
				*s = p.Shipment
			}
			return nil
		}
		t := time.NewTimer(p.NextCheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// orderAndFulfiller loads the order and picks the fulfiller for its mode.
// Errors are already translated.
func (a *Activities) orderAndFulfiller(ctx context.Context, orderID string) (models.Order, Fulfiller, error) {
	o, err := a.Store.Order(ctx, orderID)
	if err != nil {
		return models.Order{}, nil, temporalError(err)
	}
	f, ok := a.Fulfillers[o.Mode]
	if !ok || f == nil {
		err := models.Errorf(models.CodeLiveUnavailable, "no fulfiller for %s mode", o.Mode)
		return models.Order{}, nil, temporalError(err)
	}
	return o, f, nil
}

// defaultHeartbeatEvery is used when the activity has no heartbeat timeout:
// heartbeats are still how a cancellation reaches a running activity.
const defaultHeartbeatEvery = 10 * time.Second

// heartbeat records a heartbeat periodically until the returned stop
// function is called. Every activity of the order workflow runs under it
// from its first line, and the workflow gives them a short
// HeartbeatTimeout: the beats say that the worker process running the
// attempt is alive, not that the work advances. A worker killed mid-call
// stops beating, and Temporal retries the attempt once HeartbeatTimeout
// has passed instead of waiting out the whole StartToCloseTimeout; a call
// that is merely slow (a marketplace taking its full HTTP timeout, a
// database write waiting on a lock) keeps beating and is not cut short.
// A call hung in a live process beats on too: StartToCloseTimeout bounds
// that case. The beats are also how a cancellation reaches a running
// activity (it arrives by cancelling ctx), so fulfillers and stores need
// to know nothing about Temporal.
//
// The first beat is due a quarter of HeartbeatTimeout in: an attempt that
// ends sooner, as nearly every database write does, sends none. The SDK
// forwards at most one beat per 0.8 × HeartbeatTimeout and holds the
// latest until then; ticking at a quarter leaves one waiting whenever a
// window ends, so the server hears from a live attempt every
// 0.8 × HeartbeatTimeout.
func (a *Activities) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := a.heartbeatEvery
	if every <= 0 {
		// A quarter of the timeout leaves room for a slow or throttled beat.
		every = activity.GetInfo(ctx).HeartbeatTimeout / 4
	}
	if every <= 0 {
		every = defaultHeartbeatEvery
	}
	record := a.recordHeartbeat
	if record == nil {
		record = activity.RecordHeartbeat
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				record(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// temporalError is the one translation from models codes to Temporal
// errors. A *models.Error is a business failure: retrying cannot change the
// answer, so it becomes a non-retryable application error typed with its
// code (the workflow and the Temporal UI switch on that type). The
// exceptions are service_unavailable and internal_error, which say "try
// again": they keep their type but stay retryable. Anything else (a dropped
// connection, a timeout) is returned as is and retried.
func temporalError(err error) error {
	if err == nil {
		return nil
	}
	var e *models.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code {
	// live_mode_unavailable: a paid live order whose marketplace fulfiller
	// is not deployed yet waits at paid, retrying visibly in the Temporal
	// UI, instead of failing with the customer's money held.
	// marketplace_unavailable: the provider is down or throttling us; it
	// will come back.
	case models.CodeUnavailable, models.CodeInternal, models.CodeLiveUnavailable, models.CodeMarketplaceUnavailable:
		return temporal.NewApplicationErrorWithCause(e.Message, string(e.Code), err)
	case models.CodeSourcingFailed:
		// The refusal's message is the sentence the customer reads: the
		// workflow records it as the order's failure_reason, and takes a
		// cause's message instead when there is one. The chain around it
		// (which fulfiller, order, product) is for operators: it goes in
		// the details, which the Temporal UI shows with the failure.
		return temporal.NewNonRetryableApplicationError(e.Message, string(e.Code), nil, err.Error())
	}
	if e.Field != "" {
		// The field travels as the details, so an update's caller (an API
		// request) names it in its answer.
		return temporal.NewNonRetryableApplicationError(e.Message, string(e.Code), err, e.Field)
	}
	return temporal.NewNonRetryableApplicationError(e.Message, string(e.Code), err)
}

// logger is the activity's logger (with the workflow's request and order
// ids: worker.LogFields), or none when a method runs outside an activity
// (its callers' tests).
func logger(ctx context.Context) log.Logger {
	if !activity.IsActivity(ctx) {
		return log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	}
	return activity.GetLogger(ctx)
}
