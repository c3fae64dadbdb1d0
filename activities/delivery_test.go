package activities

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// recordingDispatcher records the orders whose events it was asked to
// dispatch.
type recordingDispatcher struct {
	mu     sync.Mutex
	orders []string
	err    error
}

func (d *recordingDispatcher) DispatchOrderEvents(_ context.Context, orderID string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.orders = append(d.orders, orderID)
	return d.err
}

func (d *recordingDispatcher) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.orders...)
}

// TestRecordActivitiesDispatchEventsAfterCommit: the events a write
// recorded are dispatched once it has committed, never before or without
// it, and a dispatcher failing does not fail the write (the outbox sweep
// dispatches them).
func TestRecordActivitiesDispatchEventsAfterCommit(t *testing.T) {
	store := &fakeStore{}
	disp := &recordingDispatcher{}
	env := newEnv(t, parts{Store: store, Events: disp}.build())
	tr := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, AmountReceived: decimal.RequireFromString("1")}
	p := models.Payment{ID: "sandbox:p1", Asset: "USDC", Amount: decimal.RequireFromString("1")}
	_, err := env.ExecuteActivity(allActs{}.RecordPayment, RecordPaymentInput{OrderID: "ord_1", Payment: p})
	require.NoError(t, err)
	_, err = env.ExecuteActivity(allActs{}.RecordTransition, RecordTransitionInput{OrderID: "ord_1", Transition: tr})
	require.NoError(t, err)
	assert.Equal(t, []string{"ord_1", "ord_1"}, disp.calls())

	disp.mu.Lock()
	disp.err = errors.New("temporal unavailable")
	disp.mu.Unlock()
	_, err = env.ExecuteActivity(allActs{}.RecordTransition, RecordTransitionInput{OrderID: "ord_1", Transition: tr})
	assert.NoError(t, err, "the order's write stands; the sweep dispatches")
	assert.Len(t, disp.calls(), 3)

	store.mu.Lock()
	store.err = errors.New("connection reset")
	store.mu.Unlock()
	_, err = env.ExecuteActivity(allActs{}.RecordTransition, RecordTransitionInput{OrderID: "ord_1", Transition: tr})
	require.Error(t, err)
	_, err = env.ExecuteActivity(allActs{}.RecordPayment, RecordPaymentInput{OrderID: "ord_1", Payment: p})
	require.Error(t, err)
	assert.Len(t, disp.calls(), 3, "nothing is dispatched for a write that did not commit")
}
