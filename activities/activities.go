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

// TestMover is a Fulfiller of test-mode orders that makes a test helper's
// move (models.TestMove) now and returns the order's state after it, as
// Check would. Like Check, it must be safe to repeat until the workflow
// records the step it reports.
type TestMover interface {
	Move(ctx context.Context, o models.Order, ref string, m models.TestMove) (models.Fulfilment, error)
}

// The activities come in groups, one per concern, each built by its
// constructor with every part it needs (a missing part is refused there,
// not found at run time): Orders (steps and fulfilment), Payments (the
// order's payments and its refund records), Refunds (the Refund
// workflow's: creating and paying refunds out), Webhooks (delivery) and
// Watches (the chain's payment watchers). The worker registers a pointer
// to each; workflows call their methods through method values of nil
// pointers, so the registered names are the method names.

// Orders are the activities of an order's steps and its fulfilment.
type Orders struct {
	runtime
	store Store
	// fulfillers holds one fulfiller per mode: the sandbox for test, the
	// marketplaces for live. A paid order of a mode without one keeps
	// retrying its sourcing (live_mode_unavailable, retryable) until one
	// is deployed.
	fulfillers map[models.Mode]Fulfiller
	events     EventDispatcher
}

// NewOrders returns the order activities: store writes the order, the
// fulfillers (at least one mode's) buy it, and events hands the events
// its writes record to their delivery (NoDispatch: the outbox sweep
// alone). now is their clock (nil: time.Now).
func NewOrders(store Store, fulfillers map[models.Mode]Fulfiller, events EventDispatcher, now func() time.Time) (*Orders, error) {
	switch {
	case store == nil:
		return nil, errors.New("activities.NewOrders: no store")
	case len(fulfillers) == 0:
		return nil, errors.New("activities.NewOrders: no fulfiller")
	case events == nil:
		return nil, errors.New("activities.NewOrders: no event dispatcher (NoDispatch leaves events to the outbox sweep)")
	}
	for m, f := range fulfillers {
		if f == nil {
			return nil, fmt.Errorf("activities.NewOrders: the %s fulfiller is nil", m)
		}
	}
	return &Orders{runtime: runtime{now: now}, store: store, fulfillers: fulfillers, events: events}, nil
}

// Payments are the activities that record an order's payments, and the
// refunds of its money.
type Payments struct {
	runtime
	store  Store
	ledger OrderRefunds
	// refunds creates a late payment's refund and starts its workflow.
	refunds *Refunds
	events  EventDispatcher
}

// NewPayments returns the payment activities: store writes the payments,
// ledger records refunds and late payments, refunds creates what a late
// payment owes, and events hands the recorded events to their delivery.
func NewPayments(store Store, ledger OrderRefunds, refunds *Refunds, events EventDispatcher, now func() time.Time) (*Payments, error) {
	switch {
	case store == nil:
		return nil, errors.New("activities.NewPayments: no store")
	case ledger == nil:
		return nil, errors.New("activities.NewPayments: no refund ledger")
	case refunds == nil:
		return nil, errors.New("activities.NewPayments: no refund activities")
	case events == nil:
		return nil, errors.New("activities.NewPayments: no event dispatcher (NoDispatch leaves events to the outbox sweep)")
	}
	return &Payments{runtime: runtime{now: now}, store: store, ledger: ledger, refunds: refunds, events: events}, nil
}

// OrderRefunds is the order database's record of money sent back. The order
// workflow writes through it while it waits for an order's refund, so
// that it, not the operator's command, is the one writer of the order
// until it closes: a payment arriving at the same moment is then either
// counted before the refund or marked late after it, never lost between.
type OrderRefunds interface {
	// MarkOrderRefunded records that the money an order received was sent
	// back in the transaction txHash. Recording the same txHash again is
	// not an error, so a retried activity succeeds.
	MarkOrderRefunded(ctx context.Context, orderNumber, txHash string, at time.Time) error
	// MarkRecordedPaymentLate records that a payment the workflow stored
	// without crediting it reached its order too late to count: it is due
	// back on its own.
	MarkRecordedPaymentLate(ctx context.Context, paymentID string, at time.Time) error
}

// RecordTransition writes one step of the workflow's progress.
// The store records the events of the facts it writes in the same
// transaction; they are dispatched once it has committed.
func (a *Orders) RecordTransition(ctx context.Context, in RecordTransitionInput) error {
	defer a.heartbeat(ctx)()
	err := a.store.RecordTransition(ctx, in.OrderID, in.Transition, a.clock())
	return dispatchRecorded(ctx, a.events, in.OrderID, err)
}

// RecordPayment stores a payment the workflow has seen for the order, and
// dispatches the events that recorded.
func (a *Payments) RecordPayment(ctx context.Context, in RecordPaymentInput) error {
	defer a.heartbeat(ctx)()
	err := a.store.RecordPayment(ctx, in.OrderID, in.Payment, a.clock())
	return dispatchRecorded(ctx, a.events, in.OrderID, err)
}

// RecordRefund records that the order's received money was sent back in
// txHash, at the workflow's time at.
func (a *Payments) RecordRefund(ctx context.Context, in RecordRefundInput) error {
	defer a.heartbeat(ctx)()
	if err := a.ledger.MarkOrderRefunded(ctx, in.OrderNumber, in.TxHash, in.At); err != nil {
		return temporalError(err)
	}
	return nil
}

// RecordLatePayment stores a payment the workflow took in after the
// order's refunds were recorded or created and marks it late: it is not
// credited (the refunds covered what the order had), and it is due back
// on its own: its refund is created here.
func (a *Payments) RecordLatePayment(ctx context.Context, in RecordLatePaymentInput) error {
	orderID, p, at := in.OrderID, in.Payment, in.At
	defer a.heartbeat(ctx)()
	if err := a.store.RecordPayment(ctx, orderID, p, a.clock()); err != nil {
		return temporalError(err)
	}
	if err := a.ledger.MarkRecordedPaymentLate(ctx, p.ID, at); err != nil {
		return temporalError(err)
	}
	dispatchEvents(ctx, a.events, orderID)
	o, err := a.store.Order(ctx, orderID)
	if err != nil {
		return temporalError(err)
	}
	_, err = a.refunds.CreateRefunds(ctx, CreateRefundsInput{OrderID: orderID, OrderNumber: o.Number})
	return err
}

// PlaceOrder places the order with its buying provider and returns the
// provider's reference. Attempt numbers the placements of one order (see
// Fulfiller.Place); each is idempotent. A refusal is a non-retryable
// sourcing_failed error carrying the client-readable reason.
func (a *Orders) PlaceOrder(ctx context.Context, in PlaceOrderInput) (models.Placement, error) {
	defer a.heartbeat(ctx)()
	return a.placeOrder(ctx, in.OrderID, in.Attempt)
}

func (a *Orders) placeOrder(ctx context.Context, orderID string, attempt int) (models.Placement, error) {
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
	if err := a.store.RecordFulfilment(ctx, orderID, models.Fulfilment{Ref: p.Ref, Stage: models.FulfilmentPending}, a.clock()); err != nil {
		return models.Placement{}, temporalError(err)
	}
	return p, nil
}

// CheckOrder asks the provider where the order is, stores the snapshot
// (shipments and checkpoints, for clients and operators) and returns the
// small Progress the workflow decides on.
func (a *Orders) CheckOrder(ctx context.Context, in CheckOrderInput) (models.Progress, error) {
	defer a.heartbeat(ctx)()
	_, p, err := a.checkOrder(ctx, in.OrderID, in.Ref, in.Move)
	return p, err
}

// checkOrder is one check, making move first if one is given: the order
// as stored before it, and the provider's progress; the provider's
// snapshot is stored.
func (a *Orders) checkOrder(ctx context.Context, orderID, ref string, move *models.TestMove) (models.Order, models.Progress, error) {
	o, snap, p, err := a.askProvider(ctx, orderID, ref, move)
	if err == nil {
		err = a.recordSnapshot(ctx, orderID, snap)
	}
	return o, p, err
}

// askProvider is a check without storing its snapshot, making move first
// if one is given: the order as stored before it, the provider's snapshot
// and the progress it makes. A move is made of test-mode orders only, at a
// provider that takes them (TestMover).
func (a *Orders) askProvider(ctx context.Context, orderID, ref string, move *models.TestMove) (models.Order, models.Fulfilment, models.Progress, error) {
	o, f, err := a.orderAndFulfiller(ctx, orderID)
	if err != nil {
		return o, models.Fulfilment{}, models.Progress{}, err
	}
	var snap models.Fulfilment
	if move == nil {
		snap, err = f.Check(ctx, o, ref)
	} else if mover, ok := f.(TestMover); ok && o.Mode == models.ModeTest {
		snap, err = mover.Move(ctx, o, ref, *move)
	} else {
		err = models.NewError(models.CodeTestModeOnly)
	}
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

func (a *Orders) recordSnapshot(ctx context.Context, orderID string, snap models.Fulfilment) error {
	if err := a.store.RecordFulfilment(ctx, orderID, snap, a.clock()); err != nil {
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
func (a *Orders) WatchOrder(ctx context.Context, in WatchOrderInput) (models.Progress, error) {
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
	o, snap, p, err := a.askProvider(ctx, in.OrderID, in.Ref, nil)
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
func (a *Orders) SourceOrder(ctx context.Context, orderID string) (string, error) {
	defer a.heartbeat(ctx)()
	p, err := a.placeOrder(ctx, orderID, 1)
	if err != nil {
		return "", err
	}
	return p.Ref, a.awaitProgress(ctx, orderID, p.Ref, models.OrderOrdered, nil)
}

// ShipOrder waits until the order has shipped and returns the shipment.
func (a *Orders) ShipOrder(ctx context.Context, orderID string) (models.Shipment, error) {
	defer a.heartbeat(ctx)()
	var s models.Shipment
	err := a.awaitProgress(ctx, orderID, "", models.OrderShipped, &s)
	return s, err
}

// DeliverOrder waits until the order has been delivered.
func (a *Orders) DeliverOrder(ctx context.Context, orderID string) error {
	defer a.heartbeat(ctx)()
	return a.awaitProgress(ctx, orderID, "", models.OrderDelivered, nil)
}

// awaitProgress checks the order on its fulfiller's schedule until it has
// reached want (or gone past it). A failure is a sourcing_failed error,
// which the old workflow code turns into a failed order.
func (a *Orders) awaitProgress(ctx context.Context, orderID, ref string, want models.OrderStatus, s *models.Shipment) error {
	if ref == "" {
		o, err := a.store.Order(ctx, orderID)
		if err != nil {
			return temporalError(err)
		}
		if o.Fulfilment == nil || o.Fulfilment.Ref == "" {
			return temporalError(models.Errorf(models.CodeInternal, "order %s was never placed", orderID))
		}
		ref = o.Fulfilment.Ref
	}
	for {
		_, p, err := a.checkOrder(ctx, orderID, ref, nil)
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
func (a *Orders) orderAndFulfiller(ctx context.Context, orderID string) (models.Order, Fulfiller, error) {
	o, err := a.store.Order(ctx, orderID)
	if err != nil {
		return models.Order{}, nil, temporalError(err)
	}
	f, ok := a.fulfillers[o.Mode]
	if !ok || f == nil {
		err := models.Errorf(models.CodeLiveUnavailable, "no fulfiller for %s mode", o.Mode)
		return models.Order{}, nil, temporalError(err)
	}
	return o, f, nil
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
