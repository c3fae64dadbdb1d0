package models

// LatePayment is what marking a payment late does, as DecideLatePayment
// decides it.
type LatePayment struct {
	// Late: the payment is marked late; false changes nothing.
	Late bool
	// OrderPaymentStatus is its order's payment status then: refund_due,
	// so neither an operator nor a client can miss that money must go
	// back.
	OrderPaymentStatus PaymentStatus
}

// DecideLatePayment decides a payment that reached its order after the
// order's workflow closed (or after its refunds were created). It is late,
// and due back on its own, unless the workflow already counted it: it
// acknowledged the payment (acknowledged) and had not marked it late
// (markedLate): a second delivery of a counted payment (a source replaying
// it, a test payment retried under its Idempotency-Key) is not late money.
// A payment the workflow recorded without crediting it
// (recordedUncredited: RecordLatePayment) is late although acknowledged.
func DecideLatePayment(acknowledged, markedLate, recordedUncredited bool) LatePayment {
	if acknowledged && !markedLate && !recordedUncredited {
		return LatePayment{}
	}
	return LatePayment{Late: true, OrderPaymentStatus: PaymentRefundDue}
}
