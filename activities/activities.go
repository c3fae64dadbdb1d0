package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
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
	RecordTransition(ctx context.Context, orderID string, t models.Transition) error
	// RecordPayment stores a payment and attaches it to the order,
	// idempotently by p.ID.
	RecordPayment(ctx context.Context, orderID string, p models.Payment) error
}

// Fulfiller buys and delivers an order on a marketplace. Implementations
// must be idempotent by order id: a retried Source never buys twice.
type Fulfiller interface {
	// Source buys the order's items. A permanent refusal (item gone, seller
	// cancelled) is an error wrapping models.ErrSourcingFailed.
	Source(ctx context.Context, o models.Order) (supplierRef string, err error)
	// Ship blocks until the order has shipped and returns what the carrier
	// knows. It must honour ctx.
	Ship(ctx context.Context, o models.Order) (models.Shipment, error)
	// Deliver blocks until the order has been delivered. It must honour ctx.
	Deliver(ctx context.Context, o models.Order) error
}

// Activities carries the dependencies of every activity. Register a
// pointer to it with the worker; the workflow calls its methods through
// method values of a nil *Activities, so the registered names are the
// method names.
type Activities struct {
	Store Store
	// Fulfillers holds one fulfiller per mode: the sandbox for test, the
	// marketplaces for live. A paid order of a mode without one keeps
	// retrying its sourcing (live_mode_unavailable, retryable) until one
	// is deployed.
	Fulfillers map[models.Mode]Fulfiller
	// Watchers holds the chain payment watchers this worker can run, keyed
	// "network/account".
	Watchers map[string]PaymentWatcher

	// Tests override how often and how heartbeats are recorded: the SDK
	// forwards at most one heartbeat per throttle interval (30s by default).
	heartbeatEvery  time.Duration
	recordHeartbeat func(ctx context.Context, details ...any)
}

// RecordTransition writes one step of the workflow's progress.
func (a *Activities) RecordTransition(ctx context.Context, orderID string, t models.Transition) error {
	return temporalError(a.Store.RecordTransition(ctx, orderID, t))
}

// RecordPayment stores a payment the workflow has seen for the order.
func (a *Activities) RecordPayment(ctx context.Context, orderID string, p models.Payment) error {
	return temporalError(a.Store.RecordPayment(ctx, orderID, p))
}

// SourceOrder buys the order's items on its marketplace and returns the
// supplier's reference. A refusal is a non-retryable sourcing_failed error.
func (a *Activities) SourceOrder(ctx context.Context, orderID string) (string, error) {
	o, f, err := a.orderAndFulfiller(ctx, orderID)
	if err != nil {
		return "", err
	}
	defer a.heartbeat(ctx)()
	ref, err := f.Source(ctx, o)
	return ref, temporalError(err)
}

// ShipOrder waits until the order has shipped and returns the shipment.
func (a *Activities) ShipOrder(ctx context.Context, orderID string) (models.Shipment, error) {
	o, f, err := a.orderAndFulfiller(ctx, orderID)
	if err != nil {
		return models.Shipment{}, err
	}
	defer a.heartbeat(ctx)()
	s, err := f.Ship(ctx, o)
	return s, temporalError(err)
}

// DeliverOrder waits until the order has been delivered.
func (a *Activities) DeliverOrder(ctx context.Context, orderID string) error {
	o, f, err := a.orderAndFulfiller(ctx, orderID)
	if err != nil {
		return err
	}
	defer a.heartbeat(ctx)()
	return temporalError(f.Deliver(ctx, o))
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
// function is called, so a fulfiller blocked on a marketplace for minutes
// neither trips the heartbeat timeout nor misses a cancellation (which
// arrives by cancelling ctx). Fulfillers then need to know nothing about
// Temporal.
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
	case models.CodeUnavailable, models.CodeInternal, models.CodeLiveUnavailable:
		return temporal.NewApplicationErrorWithCause(e.Message, string(e.Code), err)
	}
	return temporal.NewNonRetryableApplicationError(e.Message, string(e.Code), err)
}
