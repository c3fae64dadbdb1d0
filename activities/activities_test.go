package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/memocart/memocart/models"
)

// fakeStore answers Order from a map and returns err from every call when
// set; hold, when set, runs first in every call (and its error is the
// call's). It is the activities' Refunds too.
type fakeStore struct {
	mu     sync.Mutex
	orders map[string]models.Order
	err    error
	// transitionErr fails RecordTransition alone.
	transitionErr error
	hold          func(ctx context.Context) error
	transitions   []models.Transition
	payments      []models.Payment
	fulfilments   []models.Fulfilment
	refunds       []string // "refund:<tx>", "late:<payment id>"
}

func (s *fakeStore) wait(ctx context.Context) error {
	if s.hold == nil {
		return nil
	}
	return s.hold(ctx)
}

// call is every call's course: hold first, then under the lock err (when
// failable: the Mark calls ignore it) or f.
func (s *fakeStore) call(ctx context.Context, failable bool, f func() error) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if failable && s.err != nil {
		return s.err
	}
	return f()
}

func (s *fakeStore) Order(ctx context.Context, id string) (models.Order, error) {
	var o models.Order
	err := s.call(ctx, true, func() error {
		var ok bool
		if o, ok = s.orders[id]; !ok {
			return fmt.Errorf("fake store: %s: %w", id, models.ErrOrderNotFound)
		}
		return nil
	})
	return o, err
}

func (s *fakeStore) RecordTransition(ctx context.Context, _ string, t models.Transition, _ time.Time) error {
	return s.call(ctx, true, func() error {
		if s.transitionErr != nil {
			return s.transitionErr
		}
		s.transitions = append(s.transitions, t)
		return nil
	})
}

func (s *fakeStore) RecordFulfilment(ctx context.Context, _ string, f models.Fulfilment, _ time.Time) error {
	return s.call(ctx, true, func() error { s.fulfilments = append(s.fulfilments, f); return nil })
}

func (s *fakeStore) RecordPayment(ctx context.Context, _ string, p models.Payment, _ time.Time) error {
	return s.call(ctx, true, func() error { s.payments = append(s.payments, p); return nil })
}

func (s *fakeStore) MarkOrderRefunded(ctx context.Context, _, txHash string, _ time.Time) error {
	return s.call(ctx, false, func() error { s.refunds = append(s.refunds, "refund:"+txHash); return nil })
}

func (s *fakeStore) MarkRecordedPaymentLate(ctx context.Context, paymentID string, _ time.Time) error {
	return s.call(ctx, false, func() error { s.refunds = append(s.refunds, "late:"+paymentID); return nil })
}

// fakeFulfiller answers Place with "REF-<order id>" and Check with the
// snapshots of script, one per call (the last one again when it runs out).
// err is returned from every call; delay, block or hold make each call
// wait (hold's error is the call's). schedule, when set, replaces the
// default millisecond schedule.
type fakeFulfiller struct {
	err      error
	delay    time.Duration
	block    bool
	hold     func(ctx context.Context, call int) error // call counts Place and Check calls from 1
	calls    atomic.Int32
	script   []models.Fulfilment
	schedule models.PollSchedule
	checks   atomic.Int32
	seen     atomic.Value // last order seen
}

func (f *fakeFulfiller) wait(ctx context.Context, o models.Order) error {
	f.seen.Store(o)
	if n := int(f.calls.Add(1)); f.hold != nil {
		if err := f.hold(ctx, n); err != nil {
			return err
		}
	}
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(f.delay):
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeFulfiller) Place(ctx context.Context, o models.Order, attempt int) (models.Placement, error) {
	if err := f.wait(ctx, o); err != nil {
		return models.Placement{}, err
	}
	return models.Placement{Ref: fmt.Sprintf("REF-%s-%d", o.ID, attempt), CheckAfter: time.Millisecond}, nil
}

func (f *fakeFulfiller) Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error) {
	n := int(f.checks.Add(1))
	if err := f.wait(ctx, o); err != nil {
		return models.Fulfilment{}, err
	}
	if len(f.script) == 0 {
		return models.Fulfilment{Stage: models.FulfilmentPending}, nil
	}
	snap := f.script[min(n, len(f.script))-1]
	return snap, nil
}

func (f *fakeFulfiller) Schedule() models.PollSchedule {
	if f.schedule != (models.PollSchedule{}) {
		return f.schedule
	}
	return models.PollSchedule{First: time.Millisecond, Pending: 2 * time.Millisecond, Ordered: 3 * time.Millisecond, Shipped: 4 * time.Millisecond}
}

var testShipment = models.Shipment{Carrier: "Test Post", TrackingNumber: "TP1", EstimatedDelivery: "2026-03-17"}

// journey: still buying, bought, in transit, delivered.
func journey() []models.Fulfilment {
	p := models.Parcel{Carrier: testShipment.Carrier, TrackingNumber: testShipment.TrackingNumber, EstimatedDelivery: testShipment.EstimatedDelivery}
	inTransit, delivered := p, p
	inTransit.Status, delivered.Status = models.ParcelInTransit, models.ParcelDelivered
	return []models.Fulfilment{
		{Stage: models.FulfilmentPending},
		{Stage: models.FulfilmentPlaced},
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{inTransit}},
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{delivered}},
	}
}

func newEnv(t *testing.T, a allActs) *testsuite.TestActivityEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	for _, g := range []any{a.Orders, a.Payments, a.Refunds, a.Webhooks, a.Watches} {
		env.RegisterActivity(g)
	}
	RegisterBothShapes(env, a.Orders, a.Payments)
	return env
}

func testOrder(id string, mode models.Mode) models.Order {
	return models.Order{ID: id, Mode: mode, Items: []models.CartItem{{ProductID: "B0ABC12345", Quantity: 1}}}
}

func TestTemporalError(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		wantApp       bool
		wantType      string
		wantRetryable bool
	}{
		{name: "sourcing refusal", err: fmt.Errorf("vendor: gone: %w", models.ErrSourcingFailed), wantApp: true, wantType: "sourcing_failed"},
		{name: "order not found", err: models.ErrOrderNotFound, wantApp: true, wantType: "order_not_found"},
		{name: "live unavailable waits, retrying", err: models.ErrLiveUnavailable, wantApp: true, wantType: "live_mode_unavailable", wantRetryable: true},
		{name: "service unavailable stays retryable", err: fmt.Errorf("db: %w", models.ErrUnavailable), wantApp: true, wantType: "service_unavailable", wantRetryable: true},
		{name: "internal stays retryable", err: models.NewError(models.CodeInternal), wantApp: true, wantType: "internal_error", wantRetryable: true},
		{name: "plain error passes through", err: errors.New("connection reset")},
		{name: "context cancellation passes through", err: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := temporalError(tt.err)
			var appErr *temporal.ApplicationError
			if !tt.wantApp {
				assert.Same(t, tt.err, got)
				assert.False(t, errors.As(got, &appErr))
				return
			}
			require.ErrorAs(t, got, &appErr)
			assert.Equal(t, tt.wantType, appErr.Type())
			assert.Equal(t, !tt.wantRetryable, appErr.NonRetryable())
			assert.Equal(t, models.DefaultMessage(models.Code(tt.wantType)), appErr.Message(), "the public message, not the chain")
			if tt.wantType == string(models.CodeSourcingFailed) {
				// The customer's sentence only, also for a workflow that
				// reads the cause; the chain goes in the details.
				assert.Nil(t, appErr.Unwrap(), "no cause")
				var detail string
				require.NoError(t, appErr.Details(&detail))
				assert.Equal(t, tt.err.Error(), detail)
				return
			}
			assert.ErrorIs(t, got, tt.err, "the original error is the cause")
		})
	}
	assert.NoError(t, temporalError(nil))
}

func TestRecordActivities(t *testing.T) {
	store := &fakeStore{}
	env := newEnv(t, parts{Store: store}.build())
	tr := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, AmountReceived: decimal.RequireFromString("995.98")}
	_, err := env.ExecuteActivity(allActs{}.RecordTransition, RecordTransitionInput{OrderID: "ord_1", Transition: tr})
	require.NoError(t, err)
	p := models.Payment{ID: "sandbox:p1", Asset: "USDC", Amount: decimal.RequireFromString("1.5")}
	_, err = env.ExecuteActivity(allActs{}.RecordPayment, RecordPaymentInput{OrderID: "ord_1", Payment: p})
	require.NoError(t, err)
	require.Len(t, store.transitions, 1)
	assert.Equal(t, models.OrderPaid, store.transitions[0].Status)
	require.Len(t, store.payments, 1)
	assert.Equal(t, "sandbox:p1", store.payments[0].ID)

	t.Run("a store error keeps its code", func(t *testing.T) {
		store.err = fmt.Errorf("sqlstore: %w", models.ErrOrderNotFound)
		_, err := env.ExecuteActivity(allActs{}.RecordTransition, RecordTransitionInput{OrderID: "ord_1", Transition: tr})
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.Equal(t, "order_not_found", appErr.Type())
		assert.True(t, appErr.NonRetryable())
	})
	t.Run("a transient store error stays retryable", func(t *testing.T) {
		store.err = errors.New("connection reset")
		_, err := env.ExecuteActivity(allActs{}.RecordPayment, RecordPaymentInput{OrderID: "ord_1", Payment: p})
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.False(t, appErr.NonRetryable())
		assert.Contains(t, appErr.Error(), "connection reset")
	})
}

func TestPlaceAndCheckOrder(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{"ord_test": testOrder("ord_test", models.ModeTest)}}
	ff := &fakeFulfiller{script: journey()}
	var a allActs // method values of a nil pointer, as the workflow uses them
	env := newEnv(t, parts{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: ff}}.build())

	val, err := env.ExecuteActivity(a.PlaceOrder, PlaceOrderInput{OrderID: "ord_test", Attempt: 2})
	require.NoError(t, err)
	var placed models.Placement
	require.NoError(t, val.Get(&placed))
	assert.Equal(t, models.Placement{Ref: "REF-ord_test-2", CheckAfter: time.Millisecond}, placed)
	assert.Equal(t, "ord_test", ff.seen.Load().(models.Order).ID, "the fulfiller gets the stored order")
	require.Len(t, store.fulfilments, 1, "the reference is stored as soon as the order is placed")
	assert.Equal(t, models.Fulfilment{Ref: "REF-ord_test-2", Stage: models.FulfilmentPending}, store.fulfilments[0])

	// Each check stores the provider's snapshot and returns the progress
	// with the fulfiller's advice for the next check.
	want := []models.Progress{
		{Status: models.OrderPaid, NextCheck: 2 * time.Millisecond},
		{Status: models.OrderOrdered, NextCheck: 3 * time.Millisecond},
		{Status: models.OrderShipped, Shipment: testShipment, NextCheck: 4 * time.Millisecond},
		{Status: models.OrderDelivered, Shipment: testShipment, NextCheck: 2 * time.Millisecond},
	}
	for i, w := range want {
		val, err := env.ExecuteActivity(a.CheckOrder, CheckOrderInput{OrderID: "ord_test", Ref: placed.Ref})
		require.NoError(t, err)
		var p models.Progress
		require.NoError(t, val.Get(&p))
		assert.Equal(t, w, p, "check %d", i+1)
		last := store.fulfilments[len(store.fulfilments)-1]
		assert.Equal(t, placed.Ref, last.Ref, "a snapshot without a reference gets the placed one")
		assert.Equal(t, journey()[i].Stage, last.Stage)
	}
}

// runWatch runs one WatchOrder attempt and decodes its progress.
func runWatch(t *testing.T, env *testsuite.TestActivityEnvironment, in WatchOrderInput) (models.Progress, error) {
	t.Helper()
	var a allActs
	val, err := env.ExecuteActivity(a.WatchOrder, in)
	if err != nil {
		return models.Progress{}, err
	}
	var p models.Progress
	require.NoError(t, val.Get(&p))
	return p, nil
}

// TestWatchOrder: a watch's attempt checks the provider and returns only
// news to the order as stored; otherwise it fails as OrderUnchanged,
// benign, with the provider's advised wait (at least minRecheck) as the
// next retry's delay. A first check due within maxWatchSleep is slept
// through; one due later fails the attempt without asking the provider.
func TestWatchOrder(t *testing.T) {
	o := testOrder("ord_test", models.ModeTest)
	o.Status = models.OrderPaid
	store := &fakeStore{orders: map[string]models.Order{"ord_test": o}}
	ff := &fakeFulfiller{script: journey()}
	env := newEnv(t, parts{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: ff}}.build())
	watch := func(notBefore time.Time) (models.Progress, error) {
		t.Helper()
		return runWatch(t, env, WatchOrderInput{OrderID: "ord_test", Ref: "REF-1", NotBefore: notBefore})
	}
	unchanged := func(err error) *temporal.ApplicationError {
		t.Helper()
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.Equal(t, OrderUnchanged, appErr.Type())
		assert.Equal(t, temporal.ApplicationErrorCategoryBenign, appErr.Category())
		assert.False(t, appErr.NonRetryable())
		return appErr
	}

	_, err := watch(time.Now().Add(time.Hour))
	assert.InDelta(t, time.Hour, unchanged(err).NextRetryDelay(), float64(time.Minute), "retried when the first check is due")
	assert.Zero(t, ff.checks.Load(), "an early attempt does not ask the provider")

	start := time.Now()
	_, err = watch(start.Add(100 * time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "a first check due soon is slept through")
	assert.Equal(t, int32(1), ff.checks.Load())
	assert.Equal(t, minRecheck, unchanged(err).NextRetryDelay(), "still pending: no news to a paid order; the advised 2 ms is raised")

	p, err := watch(time.Time{})
	require.NoError(t, err)
	assert.Equal(t, models.OrderOrdered, p.Status, "bought: news")

	// The workflow has not written it yet: the same progress is news again.
	p, err = watch(time.Time{})
	require.NoError(t, err)
	assert.Equal(t, models.OrderShipped, p.Status)
	store.mu.Lock()
	o.Status, o.Shipment = models.OrderShipped, testShipment
	store.orders["ord_test"] = o
	store.mu.Unlock()
	ff.script = append(ff.script[:3:3], ff.script[2]) // in transit again
	_, err = watch(time.Time{})
	unchanged(err)
}

// TestWatchOrderWritesItsSteps: a watch given the workflow's last write
// writes the steps it finds, from the order as stored, with the
// workflow's payment fields and the watch's time, and returns the last as
// Progress.Recorded; a failure, and a watch started without it, write
// nothing; a failed write is retried like an outage.
func TestWatchOrderWritesItsSteps(t *testing.T) {
	o := testOrder("ord_test", models.ModeTest)
	o.Status = models.OrderPaid
	store := &fakeStore{orders: map[string]models.Order{"ord_test": o}}
	j := journey()
	ff := &fakeFulfiller{script: []models.Fulfilment{j[2]}} // bought and in transit at once
	at := time.Date(2036, 3, 14, 9, 30, 0, 0, time.UTC)
	env := newEnv(t, parts{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: ff}, Now: func() time.Time { return at }}.build())
	written := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentOverpaid, AmountReceived: decimal.RequireFromString("995.98"), At: at.Add(-time.Hour)}
	watch := func(w *models.Transition) (models.Progress, error) {
		t.Helper()
		return runWatch(t, env, WatchOrderInput{OrderID: "ord_test", Ref: "REF-1", Written: w})
	}

	p, err := watch(nil)
	require.NoError(t, err)
	assert.Equal(t, models.OrderShipped, p.Status)
	assert.Nil(t, p.Recorded, "a watch of older workflow code leaves the writes to the workflow")
	assert.Empty(t, store.transitions)
	assert.False(t, store.fulfilments[len(store.fulfilments)-1].WatchWrote)

	p, err = watch(&written)
	require.NoError(t, err)
	ship := testShipment
	want := []models.Transition{
		{Status: models.OrderOrdered, PaymentStatus: models.PaymentOverpaid, AmountReceived: written.AmountReceived, At: at},
		{Status: models.OrderShipped, PaymentStatus: models.PaymentOverpaid, AmountReceived: written.AmountReceived, At: at, Shipment: &ship},
	}
	assert.Equal(t, want, store.transitions, "both steps, the shipment from shipped on")
	require.NotNil(t, p.Recorded)
	assert.Equal(t, want[1], *p.Recorded)
	lastSnapshot := func() models.Fulfilment {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.fulfilments[len(store.fulfilments)-1]
	}
	assert.True(t, lastSnapshot().WatchWrote, "the snapshot says a watch wrote its steps")

	t.Run("steps a lost attempt wrote are reported by the next", func(t *testing.T) {
		// As the database holds the order after an attempt that wrote
		// shipped and was lost before the workflow heard of it.
		lost := o
		lost.Status, lost.Shipment = models.OrderShipped, testShipment
		lost.Steps = map[models.OrderStatus]time.Time{models.OrderShipped: at.Add(-time.Minute)}
		lost.Fulfilment = &models.Fulfilment{Stage: models.FulfilmentPlaced, WatchWrote: true}
		store.mu.Lock()
		store.transitions = nil
		store.orders["ord_test"] = lost
		store.mu.Unlock()
		p, err := watch(&written) // the workflow still at paid
		require.NoError(t, err)
		assert.Equal(t, models.OrderShipped, p.Status)
		require.NotNil(t, p.Recorded, "news to the workflow, though not to the database")
		assert.Equal(t, models.Transition{Status: models.OrderShipped, PaymentStatus: models.PaymentOverpaid,
			AmountReceived: written.AmountReceived, At: at.Add(-time.Minute), Shipment: &ship}, *p.Recorded)
		assert.Empty(t, store.transitions, "nothing left to write")

		// A check that stored its snapshot since (a hint's, whose
		// progress the workflow took): the same state is no news.
		lost.Fulfilment = &models.Fulfilment{Stage: models.FulfilmentPlaced}
		store.mu.Lock()
		store.orders["ord_test"] = lost
		store.mu.Unlock()
		_, err = watch(&written)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.Equal(t, OrderUnchanged, appErr.Type())
		assert.False(t, lastSnapshot().WatchWrote)
		store.mu.Lock()
		store.orders["ord_test"] = o
		store.mu.Unlock()
	})

	t.Run("steps the order has reached are not written again", func(t *testing.T) {
		store.mu.Lock()
		store.transitions = nil
		o.Status = models.OrderOrdered
		store.orders["ord_test"] = o
		store.mu.Unlock()
		p, err := watch(&written) // the workflow wrote ordered after the watch started
		require.NoError(t, err)
		assert.Equal(t, want[1:], store.transitions)
		assert.Equal(t, want[1], *p.Recorded)
	})
	t.Run("a failure is the workflow's to write", func(t *testing.T) {
		store.mu.Lock()
		store.transitions = nil
		store.mu.Unlock()
		ff.script = []models.Fulfilment{{Stage: models.FulfilmentFailed, FailureReason: "out of stock"}}
		ff.checks.Store(0)
		p, err := watch(&written)
		require.NoError(t, err)
		assert.Equal(t, models.OrderFailed, p.Status)
		assert.Nil(t, p.Recorded)
		assert.Empty(t, store.transitions)
		assert.False(t, lastSnapshot().WatchWrote, "nothing written, nothing marked")
	})
	t.Run("a failed write is retried", func(t *testing.T) {
		ff.script = []models.Fulfilment{j[3]}
		ff.checks.Store(0)
		store.mu.Lock()
		store.orders["ord_test"] = o
		store.transitionErr = errors.New("connection reset")
		store.mu.Unlock()
		_, err := watch(&written)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.False(t, appErr.NonRetryable())
		assert.NotEqual(t, OrderUnchanged, appErr.Type())
		assert.Contains(t, appErr.Error(), "connection reset")
	})
}

func TestFulfilmentActivityFailures(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{
		"ord_test": testOrder("ord_test", models.ModeTest),
		"ord_live": testOrder("ord_live", models.ModeLive),
	}}
	ff := &fakeFulfiller{}
	var a allActs
	env := newEnv(t, parts{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: ff}}.build())
	failures := []struct {
		name     string
		err      error
		orderID  string
		wantType string
		retry    bool
	}{
		{name: "no fulfiller for the mode", orderID: "ord_live", wantType: "live_mode_unavailable", retry: true},
		{name: "unknown order", orderID: "ord_missing", wantType: "order_not_found"},
		{name: "marketplace refusal", orderID: "ord_test", wantType: "sourcing_failed",
			err: fmt.Errorf("vendor: withdrawn: %w", models.ErrSourcingFailed)},
		{name: "marketplace down", orderID: "ord_test", wantType: "marketplace_unavailable",
			err: fmt.Errorf("vendor: %w", models.ErrMarketplaceUnavailable), retry: true},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			ff.err = tt.err
			for _, run := range []func() error{
				func() error {
					_, err := env.ExecuteActivity(a.PlaceOrder, PlaceOrderInput{OrderID: tt.orderID, Attempt: 1})
					return err
				},
				func() error {
					_, err := env.ExecuteActivity(a.CheckOrder, CheckOrderInput{OrderID: tt.orderID, Ref: "REF"})
					return err
				},
			} {
				err := run()
				var appErr *temporal.ApplicationError
				require.ErrorAs(t, err, &appErr)
				assert.Equal(t, tt.wantType, appErr.Type())
				assert.Equal(t, !tt.retry, appErr.NonRetryable())
			}
		})
	}
}

// TestBlockingActivitiesOfOldRuns: the activities of workflows started
// before fulfilment was polled still take an order all the way, each
// blocking until its step is reached.
func TestBlockingActivitiesOfOldRuns(t *testing.T) {
	order := testOrder("ord_test", models.ModeTest)
	store := &fakeStore{orders: map[string]models.Order{"ord_test": order}}
	ff := &fakeFulfiller{script: journey()}
	var a allActs
	env := newEnv(t, parts{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: ff}}.build())

	val, err := env.ExecuteActivity(a.SourceOrder, "ord_test")
	require.NoError(t, err)
	var ref string
	require.NoError(t, val.Get(&ref))
	assert.Equal(t, "REF-ord_test-1", ref)
	assert.Equal(t, int32(2), ff.checks.Load(), "sourced once the provider bought it")

	// Later activities find the reference in the store.
	order.Fulfilment = &models.Fulfilment{Ref: ref}
	store.orders["ord_test"] = order
	val, err = env.ExecuteActivity(a.ShipOrder, "ord_test")
	require.NoError(t, err)
	var s models.Shipment
	require.NoError(t, val.Get(&s))
	assert.Equal(t, testShipment, s)
	_, err = env.ExecuteActivity(a.DeliverOrder, "ord_test")
	require.NoError(t, err)
	assert.Equal(t, int32(4), ff.checks.Load())

	// A failure at the provider is the refusal the old workflow expects.
	ff.script = []models.Fulfilment{{Stage: models.FulfilmentFailed, FailureCode: "cancelled_by_retailer"}}
	ff.checks.Store(0)
	_, err = env.ExecuteActivity(a.DeliverOrder, "ord_test")
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, "sourcing_failed", appErr.Type())
	assert.Contains(t, appErr.Error(), models.FulfilmentFailureReason("cancelled_by_retailer"))
}

// beatCounter counts the heartbeats an activity records.
type beatCounter struct{ n atomic.Int32 }

func (b *beatCounter) record(context.Context, ...any) { b.n.Add(1) }

// await is a fake call that lasts until the activity has beaten n more
// times, and fails if it does not within 5 s: it proves the activity
// beats while that call runs, without depending on how fast it beats.
func (b *beatCounter) await(ctx context.Context, n int32) error {
	want := b.n.Load() + n
	deadline := time.Now().Add(5 * time.Second)
	for b.n.Load() < want {
		if time.Now().After(deadline) {
			return errors.New("no heartbeat while the call ran")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// TestActivitiesHeartbeatWhileTheyRun: the workflow gives every order
// activity a HeartbeatTimeout of seconds (workflows' activityHeartbeat),
// so each must beat for as long as it runs, whichever call of its store
// or provider takes the time, and stop once it returns: an activity that
// went quiet while healthy would be timed out and retried. The blocking
// activities of old runs beat through their waits between checks too, and
// the webhook workflow's two database activities, which it runs with the
// order's store options, beat as well.
func TestActivitiesHeartbeatWhileTheyRun(t *testing.T) {
	var a allActs
	at := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	payment := models.Payment{ID: "sandbox:p1", Asset: "USDC", Amount: decimal.RequireFromString("1.5")}
	slow := func(b *beatCounter) func(context.Context) error {
		return func(ctx context.Context) error { return b.await(ctx, 3) }
	}
	slowProvider := func(b *beatCounter) *fakeFulfiller {
		return &fakeFulfiller{hold: func(ctx context.Context, _ int) error { return b.await(ctx, 3) }}
	}
	tests := []struct {
		name      string
		slowStore bool // every store call lasts 3 beats
		fulfiller func(b *beatCounter) *fakeFulfiller
		slowSend  bool // the webhook endpoint answers after 3 beats
		// activity runs with args.
		activity any
		args     []any
	}{
		{name: "PlaceOrder, slow provider", fulfiller: slowProvider, activity: a.PlaceOrder, args: []any{PlaceOrderInput{OrderID: "ord_1", Attempt: 1}}},
		{name: "PlaceOrder, slow store", slowStore: true, activity: a.PlaceOrder, args: []any{PlaceOrderInput{OrderID: "ord_1", Attempt: 1}}},
		{name: "CheckOrder, slow provider", fulfiller: slowProvider, activity: a.CheckOrder, args: []any{CheckOrderInput{OrderID: "ord_1", Ref: "REF"}}},
		{name: "CheckOrder, slow store", slowStore: true, activity: a.CheckOrder, args: []any{CheckOrderInput{OrderID: "ord_1", Ref: "REF"}}},
		{name: "RecordTransition", slowStore: true, activity: a.RecordTransition,
			args: []any{RecordTransitionInput{OrderID: "ord_1", Transition: models.Transition{Status: models.OrderPaid, At: at}}}},
		{name: "RecordPayment", slowStore: true, activity: a.RecordPayment, args: []any{RecordPaymentInput{OrderID: "ord_1", Payment: payment}}},
		{name: "RecordRefund", slowStore: true, activity: a.RecordRefund, args: []any{RecordRefundInput{OrderNumber: "12345678906", TxHash: "tx1", At: at}}},
		{name: "RecordLatePayment", slowStore: true, activity: a.RecordLatePayment, args: []any{RecordLatePaymentInput{OrderID: "ord_1", Payment: payment, At: at}}},
		// The webhook delivery workflow runs these two with the order's
		// store options.
		{name: "WebhookTargets", slowStore: true, activity: a.WebhookTargets, args: []any{"evt_1"}},
		{name: "DeliverWebhook, slow endpoint", slowSend: true, activity: a.DeliverWebhook, args: []any{DeliverWebhookInput{EventID: "evt_1", EndpointID: "ep_1"}}},
		{name: "DeliverWebhook, slow store", slowStore: true, activity: a.DeliverWebhook, args: []any{DeliverWebhookInput{EventID: "evt_1", EndpointID: "ep_1"}}},
		{name: "DisableWebhookEndpoint", slowStore: true, activity: a.DisableWebhookEndpoint, args: []any{"ep_1", at, "failing"}},
		{
			// Place and the checks are instant; the second check starts
			// only once the activity has beaten during the 150 ms wait
			// before it (15 beats when nothing is lost).
			name: "SourceOrder of an old run, waiting for the next check",
			fulfiller: func(b *beatCounter) *fakeFulfiller {
				var afterFirst int32
				return &fakeFulfiller{
					script:   []models.Fulfilment{{Stage: models.FulfilmentPending}, {Stage: models.FulfilmentPlaced}},
					schedule: models.PollSchedule{First: time.Millisecond, Pending: 150 * time.Millisecond, Ordered: time.Millisecond, Shipped: time.Millisecond},
					hold: func(_ context.Context, call int) error {
						switch call {
						case 2: // the first check
							afterFirst = b.n.Load()
						case 3: // the second
							if b.n.Load() == afterFirst {
								return errors.New("no heartbeat while waiting for the next check")
							}
						}
						return nil
					},
				}
			},
			activity: a.SourceOrder, args: []any{"ord_1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var beats beatCounter
			store := &fakeStore{orders: map[string]models.Order{"ord_1": testOrder("ord_1", models.ModeTest)}}
			if tt.slowStore {
				store.hold = slow(&beats)
			}
			ff := &fakeFulfiller{}
			if tt.fulfiller != nil {
				ff = tt.fulfiller(&beats)
			}
			sender := holdingSender{}
			if tt.slowSend {
				sender.hold = slow(&beats)
			}
			acts := parts{
				Store:           store,
				Refunds:         store,
				Webhooks:        holdingWebhookStore{hold: store.hold},
				Sender:          sender,
				Fulfillers:      map[models.Mode]Fulfiller{models.ModeTest: ff},
				Payouts:         &RefundPayouts{Store: &refundsStore{refunds: map[string]models.Refund{}}},
				heartbeatEvery:  10 * time.Millisecond,
				recordHeartbeat: beats.record,
			}.build()
			_, err := newEnv(t, acts).ExecuteActivity(tt.activity, tt.args...)
			require.NoError(t, err)
			after := beats.n.Load()
			time.Sleep(50 * time.Millisecond)
			assert.Equal(t, after, beats.n.Load(), "no heartbeats once the activity returned")
		})
	}
}

// holdingSender runs hold, when set, before an endpoint answers 204.
type holdingSender struct {
	hold func(ctx context.Context) error
}

func (s holdingSender) Send(ctx context.Context, _ models.Mode, _ string, _ http.Header, _ []byte) (int, error) {
	if s.hold != nil {
		if err := s.hold(ctx); err != nil {
			return 0, err
		}
	}
	return http.StatusNoContent, nil
}

// holdingWebhookStore runs hold, when set, in every call, and answers
// with nothing.
type holdingWebhookStore struct {
	hold func(ctx context.Context) error
}

func (s holdingWebhookStore) wait(ctx context.Context) error {
	if s.hold == nil {
		return nil
	}
	return s.hold(ctx)
}

func (s holdingWebhookStore) WebhookTargets(ctx context.Context, _ string) ([]models.WebhookEndpoint, error) {
	return nil, s.wait(ctx)
}

func (s holdingWebhookStore) WebhookDelivery(ctx context.Context, _, _ string, _ time.Time) (models.Event, models.WebhookEndpoint, error) {
	return models.Event{}, models.WebhookEndpoint{}, s.wait(ctx)
}

func (s holdingWebhookStore) RecordWebhookAttempt(ctx context.Context, _ models.WebhookAttempt, _ string) error {
	return s.wait(ctx)
}

func (s holdingWebhookStore) DisableWebhookEndpoint(ctx context.Context, _ string, _, _ time.Time, _ string) (bool, error) {
	return false, s.wait(ctx)
}

// TestFulfilmentHeartbeatReachesTemporal checks the default path: the
// heartbeat goes to the SDK (which forwards the first one at once).
func TestFulfilmentHeartbeatReachesTemporal(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{"ord_1": testOrder("ord_1", models.ModeTest)}}
	acts := parts{
		Store:          store,
		Fulfillers:     map[models.Mode]Fulfiller{models.ModeTest: &fakeFulfiller{delay: 100 * time.Millisecond}},
		heartbeatEvery: 10 * time.Millisecond,
	}.build()
	env := newEnv(t, acts)
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
	_, err := env.ExecuteActivity(acts.CheckOrder, CheckOrderInput{OrderID: "ord_1", Ref: "REF"})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, beats.Load(), int32(1))
}

func TestHeartbeatOutsideAnActivity(t *testing.T) {
	// Fulfillers may be driven outside Temporal (scripts, tests): the
	// heartbeat helper must then do nothing rather than panic.
	stop := (&runtime{}).heartbeat(t.Context())
	stop()
}

func TestFulfilmentHonoursCancellation(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{"ord_1": testOrder("ord_1", models.ModeTest)}}
	acts := parts{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: &fakeFulfiller{block: true}}}.build()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := acts.CheckOrder(ctx, CheckOrderInput{OrderID: "ord_1", Ref: "REF"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
