package models

import (
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
)

// A cancellation carries its reason into the order; one written without a
// reason (a workflow task scheduled before reasons existed) gets the one
// its words imply, as the migration filled older orders.
func TestApplyTransitionCancellation(t *testing.T) {
	zero := decimal.Zero
	for _, tc := range []struct {
		name string
		t    Transition
		want CancellationReason
	}{
		{"customer", Transition{Status: OrderCancelled, Cancellation: CancellationRequestedByCustomer, Reason: "cancelled by the customer (API)"}, CancellationRequestedByCustomer},
		{"deadline", Transition{Status: OrderCancelled, Cancellation: CancellationPaymentWindowExpired, Reason: "payment deadline passed"}, CancellationPaymentWindowExpired},
		{"legacy deadline", Transition{Status: OrderCancelled, Reason: "payment deadline passed"}, CancellationPaymentWindowExpired},
		{"legacy operator", Transition{Status: OrderCancelled, Reason: "cancelled by ops: fraud"}, CancellationByOperator},
		{"legacy workflow cancelled", Transition{Status: OrderCancelled, Reason: "workflow cancelled"}, CancellationByOperator},
		{"not a cancellation", Transition{Status: OrderPaid, Cancellation: CancellationByOperator}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ApplyTransition(OrderCreated, zero, tc.t).Cancellation)
		})
	}
	assert.Empty(t, ApplyTransition(OrderCancelled, zero, Transition{Status: OrderCancelled, Reason: "again"}).Cancellation,
		"an order already cancelled keeps its reason")
}

// Only an order awaiting payment, its amount due not in, is cancelled; one
// cancelled already is answered as it is; anything else is refused with
// the status it is at (paid, for one paid in full but not moved on yet).
func TestDecideCancel(t *testing.T) {
	for _, tc := range []struct {
		status  OrderStatus
		paid    bool
		want    CancelVerdict
		refused OrderStatus // the status the refusal names; "" when accepted
	}{
		{OrderCreated, false, CancelProceeds, ""},
		{OrderCreated, true, 0, OrderPaid},
		{OrderCancelled, false, CancelDone, ""},
		{OrderCancelled, true, CancelDone, ""},
		{OrderPaid, true, 0, OrderPaid},
		{OrderOrdered, true, 0, OrderOrdered},
		{OrderShipped, true, 0, OrderShipped},
		{OrderDelivered, true, 0, OrderDelivered},
		{OrderFailed, true, 0, OrderFailed},
		{OrderFailed, false, 0, OrderFailed},
	} {
		t.Run(fmt.Sprintf("%s paid=%t", tc.status, tc.paid), func(t *testing.T) {
			got, err := DecideCancel(tc.status, tc.paid)
			assert.Equal(t, tc.want, got)
			if tc.refused == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, NewError(CodeOrderNotCancellable))
			assert.Equal(t, NotCancellable(tc.refused), err)
		})
	}
}

func TestNotCancellable(t *testing.T) {
	err := NotCancellable(OrderShipped)
	assert.Equal(t, CodeOrderNotCancellable, err.Code)
	assert.Equal(t, "The order is shipped: only an order awaiting payment can be cancelled", err.Message)
}
