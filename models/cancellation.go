package models

// CancellationReason says why an order was cancelled, in a fixed
// vocabulary clients can switch on (GET /v1/orders: cancellation_reason).
// The words of whoever cancelled stay in the order's status reason, for
// operators.
type CancellationReason string

// Cancellation reasons.
const (
	// CancellationRequestedByCustomer: the account cancelled it through
	// the API (POST /v1/orders/{id}/cancel).
	CancellationRequestedByCustomer CancellationReason = "requested_by_customer"
	// CancellationPaymentWindowExpired: the payment deadline passed before
	// the full amount arrived.
	CancellationPaymentWindowExpired CancellationReason = "payment_window_expired"
	// CancellationByOperator: an operator cancelled it (the workflow's
	// cancel-order signal, or the workflow cancelled in Temporal).
	CancellationByOperator CancellationReason = "cancelled_by_operator"
)

// Valid reports whether r is one of the reasons.
func (r CancellationReason) Valid() bool {
	switch r {
	case CancellationRequestedByCustomer, CancellationPaymentWindowExpired, CancellationByOperator:
		return true
	}
	return false
}

// MaxCancelNote bounds the note a client may give when it cancels an
// order (the optional "reason" of the cancel request), in characters.
const MaxCancelNote = 500

// legacyCancellation is the reason of a cancellation written without one
// (by a workflow task scheduled before reasons existed), read from the
// words the workflow wrote: the deadline's, or else an operator's. The
// migration that added reasons filled older orders by the same rule.
func legacyCancellation(statusReason string) CancellationReason {
	if statusReason == "payment deadline passed" {
		return CancellationPaymentWindowExpired
	}
	return CancellationByOperator
}
