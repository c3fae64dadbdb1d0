package workflows

import (
	"github.com/memocart/memocart/models"
)

// The workflow's decisions, as pure functions: no workflow context, so
// they are trivially deterministic and tested on their own.

// paymentOutcome decides how the wait for payment ended. An operator's
// (or the customer's) cancel wins even over a payment completed in the same
// instant: they acted while the order was open, and the money goes back. A
// payment completed in time wins over the deadline. cancellation is the
// reason clients read when the order is cancelled.
func paymentOutcome(cancel *CancelSignal, paid bool) (status models.OrderStatus, unpaidClose models.PaymentStatus, reason string, cancellation models.CancellationReason) {
	switch {
	case cancel != nil:
		reason := "cancelled by an operator"
		if cancel.RequestedBy != "" {
			reason = "cancelled by " + cancel.RequestedBy
		}
		if cancel.Reason != "" {
			reason += ": " + cancel.Reason
		}
		cancellation := cancel.Cancellation
		if cancellation != models.CancellationRequestedByCustomer {
			cancellation = models.CancellationByOperator
		}
		return models.OrderCancelled, models.PaymentCancelled, reason, cancellation
	case paid:
		return models.OrderPaid, "", "", ""
	default:
		return models.OrderCancelled, models.PaymentExpired, "payment deadline passed", models.CancellationPaymentWindowExpired
	}
}

// paymentStatusOf derives the payment status from the order status and the
// money held. unpaidClose is what a cancelled order that received nothing
// shows (expired or cancelled); strays counts payments in another asset,
// never credited but still money that must go back.
func paymentStatusOf(status models.OrderStatus, unpaidClose models.PaymentStatus, t models.PaymentTally, strays int) models.PaymentStatus {
	switch status {
	case models.OrderCancelled:
		if t.Received.IsPositive() || strays > 0 {
			return models.PaymentRefundDue
		}
		return unpaidClose
	case models.OrderFailed:
		return models.PaymentRefundDue
	case models.OrderCreated:
		// pending or partial; a stray payment changes nothing yet.
		return t.Status()
	default:
		// Paid and beyond: confirmed, or overpaid when more money than due
		// is held, in the order's asset or not.
		if s := t.Status(); s == models.PaymentConfirmed && strays > 0 {
			return models.PaymentOverpaid
		}
		return t.Status()
	}
}

// sameTransition reports whether writing b after a would change nothing
// but the timestamp.
func sameTransition(a, b models.Transition) bool {
	if a.Status != b.Status || a.PaymentStatus != b.PaymentStatus ||
		!a.AmountReceived.Equal(b.AmountReceived) || a.Reason != b.Reason || a.Cancellation != b.Cancellation {
		return false
	}
	if (a.Shipment == nil) != (b.Shipment == nil) {
		return false
	}
	return a.Shipment == nil || *a.Shipment == *b.Shipment
}
