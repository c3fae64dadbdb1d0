package models

import (
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
