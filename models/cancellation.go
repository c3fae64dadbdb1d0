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

// CancelVerdict is what a customer's cancel request does to an order.
type CancelVerdict int

// Cancel verdicts.
const (
	// CancelProceeds: the order awaits payment; cancel it.
	CancelProceeds CancelVerdict = iota + 1
	// CancelDone: the order is cancelled already; cancelling is
	// idempotent, so the request is answered with the order as it is.
	CancelDone
)

// DecideCancel decides a customer's cancel request for an order at
// status whose amount due is (paid) or is not yet received. Only an order
// awaiting payment can be cancelled: once the amount due is in, the money
// is committed to buying the order, and giving it back is a refund, not a
// cancellation. Any other order is refused with NotCancellable.
func DecideCancel(status OrderStatus, paid bool) (CancelVerdict, error) {
	switch {
	case status == OrderCancelled:
		return CancelDone, nil
	case CanTransition(status, OrderCancelled) && !paid:
		return CancelProceeds, nil
	case status == OrderCreated:
		// Paid in full but not moved on yet: it is paid in all but name,
		// and will be in a moment.
		return 0, NotCancellable(OrderPaid)
	}
	return 0, NotCancellable(status)
}

// NotCancellable is the refusal of a cancel for an order at status: a
// CodeOrderNotCancellable error whose message names the status, so the
// client can tell paid from shipped from failed.
func NotCancellable(status OrderStatus) *Error {
	return Errorf(CodeOrderNotCancellable, "The order is %s: only an order awaiting payment can be cancelled", status)
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

// DecideExpire is whether test mode's helper may move an order's payment
// deadline to now: only while it awaits payment with its amount due not
// in (an order paid in full is paid in all but name); anything else is
// CodeInvalidOrderState naming its status.
func DecideExpire(status OrderStatus, paid bool) error {
	switch {
	case status == OrderCreated && !paid:
		return nil
	case status == OrderCreated:
		status = OrderPaid
	}
	return Errorf(CodeInvalidOrderState, "The order is %s: only an order awaiting payment can expire", status)
}
