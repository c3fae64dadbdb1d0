package activities

import (
	"context"
	"errors"
	"fmt"
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
// set.
type fakeStore struct {
	mu          sync.Mutex
	orders      map[string]models.Order
	err         error
	transitions []models.Transition
	payments    []models.Payment
}

func (s *fakeStore) Order(_ context.Context, id string) (models.Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return models.Order{}, s.err
	}
	o, ok := s.orders[id]
	if !ok {
		return models.Order{}, fmt.Errorf("fake store: %s: %w", id, models.ErrOrderNotFound)
	}
	return o, nil
}

func (s *fakeStore) RecordTransition(_ context.Context, _ string, t models.Transition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.transitions = append(s.transitions, t)
	return nil
}

func (s *fakeStore) RecordPayment(_ context.Context, _ string, p models.Payment) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.payments = append(s.payments, p)
	return nil
}

// fakeFulfiller returns err from every call and, when block is set, waits
// for ctx to end before answering.
type fakeFulfiller struct {
	err   error
	delay time.Duration
	block bool
	seen  atomic.Value // last order seen
}

func (f *fakeFulfiller) wait(ctx context.Context, o models.Order) error {
	f.seen.Store(o)
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

func (f *fakeFulfiller) Source(ctx context.Context, o models.Order) (string, error) {
	if err := f.wait(ctx, o); err != nil {
		return "", err
	}
	return "REF-" + o.ID, nil
}

func (f *fakeFulfiller) Ship(ctx context.Context, o models.Order) (models.Shipment, error) {
	if err := f.wait(ctx, o); err != nil {
		return models.Shipment{}, err
	}
	return models.Shipment{Carrier: "Test Post", TrackingNumber: "TP1", EstimatedDelivery: "2026-03-17"}, nil
}

func (f *fakeFulfiller) Deliver(ctx context.Context, o models.Order) error { return f.wait(ctx, o) }

func newEnv(t *testing.T, a *Activities) *testsuite.TestActivityEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(a)
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
			assert.ErrorIs(t, got, tt.err, "the original error is the cause")
		})
	}
	assert.NoError(t, temporalError(nil))
}

func TestRecordActivities(t *testing.T) {
	store := &fakeStore{}
	env := newEnv(t, &Activities{Store: store})
	tr := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, AmountReceived: decimal.RequireFromString("995.98")}
	_, err := env.ExecuteActivity((&Activities{}).RecordTransition, "ord_1", tr)
	require.NoError(t, err)
	p := models.Payment{ID: "sandbox:p1", Asset: "USDC", Amount: decimal.RequireFromString("1.5")}
	_, err = env.ExecuteActivity((&Activities{}).RecordPayment, "ord_1", p)
	require.NoError(t, err)
	require.Len(t, store.transitions, 1)
	assert.Equal(t, models.OrderPaid, store.transitions[0].Status)
	require.Len(t, store.payments, 1)
	assert.Equal(t, "sandbox:p1", store.payments[0].ID)

	t.Run("a store error keeps its code", func(t *testing.T) {
		store.err = fmt.Errorf("sqlstore: %w", models.ErrOrderNotFound)
		_, err := env.ExecuteActivity((&Activities{}).RecordTransition, "ord_1", tr)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.Equal(t, "order_not_found", appErr.Type())
		assert.True(t, appErr.NonRetryable())
	})
	t.Run("a transient store error stays retryable", func(t *testing.T) {
		store.err = errors.New("connection reset")
		_, err := env.ExecuteActivity((&Activities{}).RecordPayment, "ord_1", p)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		assert.False(t, appErr.NonRetryable())
		assert.Contains(t, appErr.Error(), "connection reset")
	})
}

func TestFulfilmentActivities(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{
		"ord_test": testOrder("ord_test", models.ModeTest),
		"ord_live": testOrder("ord_live", models.ModeLive),
	}}
	ff := &fakeFulfiller{}
	var a *Activities // method values of a nil pointer, as the workflow uses them
	env := newEnv(t, &Activities{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: ff}})

	val, err := env.ExecuteActivity(a.SourceOrder, "ord_test")
	require.NoError(t, err)
	var ref string
	require.NoError(t, val.Get(&ref))
	assert.Equal(t, "REF-ord_test", ref)
	assert.Equal(t, "ord_test", ff.seen.Load().(models.Order).ID, "the fulfiller gets the stored order")

	val, err = env.ExecuteActivity(a.ShipOrder, "ord_test")
	require.NoError(t, err)
	var s models.Shipment
	require.NoError(t, val.Get(&s))
	assert.Equal(t, "TP1", s.TrackingNumber)

	_, err = env.ExecuteActivity(a.DeliverOrder, "ord_test")
	require.NoError(t, err)

	failures := []struct {
		name     string
		setup    func()
		orderID  string
		wantType string
		retry    bool
	}{
		{name: "no fulfiller for the mode", orderID: "ord_live", wantType: "live_mode_unavailable", retry: true},
		{name: "unknown order", orderID: "ord_missing", wantType: "order_not_found"},
		{name: "marketplace refusal", orderID: "ord_test", wantType: "sourcing_failed",
			setup: func() { ff.err = fmt.Errorf("vendor: withdrawn: %w", models.ErrSourcingFailed) }},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			_, err := env.ExecuteActivity(a.SourceOrder, tt.orderID)
			var appErr *temporal.ApplicationError
			require.ErrorAs(t, err, &appErr)
			assert.Equal(t, tt.wantType, appErr.Type())
			assert.Equal(t, !tt.retry, appErr.NonRetryable())
		})
	}
}

func TestFulfilmentHeartbeats(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{"ord_1": testOrder("ord_1", models.ModeTest)}}
	var beats atomic.Int32
	acts := &Activities{
		Store:           store,
		Fulfillers:      map[models.Mode]Fulfiller{models.ModeTest: &fakeFulfiller{delay: 200 * time.Millisecond}},
		heartbeatEvery:  10 * time.Millisecond,
		recordHeartbeat: func(context.Context, ...any) { beats.Add(1) },
	}
	env := newEnv(t, acts)

	for _, run := range []func() error{
		func() error { _, err := env.ExecuteActivity(acts.SourceOrder, "ord_1"); return err },
		func() error { _, err := env.ExecuteActivity(acts.ShipOrder, "ord_1"); return err },
		func() error { _, err := env.ExecuteActivity(acts.DeliverOrder, "ord_1"); return err },
	} {
		beats.Store(0)
		require.NoError(t, run())
		assert.GreaterOrEqual(t, beats.Load(), int32(5), "heartbeats while the fulfiller waits")
		after := beats.Load()
		time.Sleep(50 * time.Millisecond)
		assert.Equal(t, after, beats.Load(), "no heartbeats once the activity returned")
	}
}

// TestFulfilmentHeartbeatReachesTemporal checks the default path: the
// heartbeat goes to the SDK (which forwards the first one at once).
func TestFulfilmentHeartbeatReachesTemporal(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{"ord_1": testOrder("ord_1", models.ModeTest)}}
	acts := &Activities{
		Store:          store,
		Fulfillers:     map[models.Mode]Fulfiller{models.ModeTest: &fakeFulfiller{delay: 100 * time.Millisecond}},
		heartbeatEvery: 10 * time.Millisecond,
	}
	env := newEnv(t, acts)
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
	_, err := env.ExecuteActivity(acts.DeliverOrder, "ord_1")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, beats.Load(), int32(1))
}

func TestHeartbeatOutsideAnActivity(t *testing.T) {
	// Fulfillers may be driven outside Temporal (scripts, tests): the
	// heartbeat helper must then do nothing rather than panic.
	stop := (&Activities{}).heartbeat(t.Context())
	stop()
}

func TestFulfilmentHonoursCancellation(t *testing.T) {
	store := &fakeStore{orders: map[string]models.Order{"ord_1": testOrder("ord_1", models.ModeTest)}}
	acts := &Activities{Store: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: &fakeFulfiller{block: true}}}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := acts.DeliverOrder(ctx, "ord_1")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
