package models

import (
	"errors"
	"slices"

	"github.com/shopspring/decimal"
)

// RefundRoute is where an operator's refund of an order's money is
// recorded.
type RefundRoute int

// Refund routes.
const (
	// RefundRecordedDirectly: the database alone holds what is due back;
	// the refund is written there.
	RefundRecordedDirectly RefundRoute = iota + 1
	// RefundThroughWorkflow: the order's workflow is waiting for the
	// refund (up to its refund wait) and records it, so that no payment
	// it credits can slip between the refund and the order's close.
	RefundThroughWorkflow
)

// RefundCoversIt refuses an operator's record of money sent back by hand
// (memocart payments mark-refunded) when refund r covers that money: the
// refunds are the one ledger of money owed back and the service pays them
// out itself, so a record kept beside one would let the money leave
// twice. what names the money ("Order 123", "Payment p"). The operator
// moves the refund instead, under the refund's own rules.
func RefundCoversIt(what string, r Refund) *Error {
	return Errorf(CodeInvalidRefundState,
		"%s is owed back by refund %s (%s), which the service pays out itself: if it was paid another way, "+
			"record that with `memocart refunds mark-sent %s --tx <hash>`, or settle it with `memocart refunds cancel %s`",
		what, r.ID, r.Status, r.ID, r.ID)
}

// RouteOrderRefund decides where the refund of an order is recorded. An
// order that reached a final status holding money it credited, and owing
// it (refund_due: cancelled or failed after a payment), keeps its workflow
// open for the refund: the refund goes through the workflow, which closes
// the order only once no payment can slip in between. Anything else (an
// overpayment's excess, a refund_due caused only by a stray payment) is
// recorded directly, as is the refund of a workflow that closed meanwhile
// (its wait ran out). The workflow asks the same question of its own
// state to know whether it waits.
func RouteOrderRefund(status OrderStatus, paymentStatus PaymentStatus, received decimal.Decimal) RefundRoute {
	if status.Final() && paymentStatus == PaymentRefundDue && received.IsPositive() {
		return RefundThroughWorkflow
	}
	return RefundRecordedDirectly
}

// OwesMoneyBack reports whether an order at payment status s holds money
// the payer must get back: credited money of an order that will not use
// it (refund_due) or an overpayment's excess (overpaid). An order whose
// refund is recorded owes nothing more.
func (s PaymentStatus) OwesMoneyBack() bool {
	return slices.Contains(PaymentStatusesOwingMoneyBack(), s)
}

// PaymentStatusesOwingMoneyBack lists the payment statuses OwesMoneyBack
// holds for, for a store that selects such orders.
func PaymentStatusesOwingMoneyBack() []PaymentStatus {
	return []PaymentStatus{PaymentRefundDue, PaymentOverpaid}
}

// PaymentStatusAfterRefund is the payment status of an order at s once
// its refund is recorded: refund_due becomes refunded; an overpaid order
// stays overpaid (it was paid, and keeps its purchase), its excess no
// longer listed as due back.
func PaymentStatusAfterRefund(s PaymentStatus) PaymentStatus {
	if s == PaymentRefundDue {
		return PaymentRefunded
	}
	return s
}

// RefundRecord is what recording an operator's refund of an order's money
// does.
type RefundRecord int

// Refund records.
const (
	// RefundToRecord: the order owes money back; record the refund.
	RefundToRecord RefundRecord = iota + 1
	// RefundAlreadyRecorded: this very refund is recorded (a retried
	// write); recording it again changes nothing and is no error.
	RefundAlreadyRecorded
	// RefundNothingDue: the order owes nothing (never did, or another
	// refund is recorded): refused.
	RefundNothingDue
)

// ErrNothingToRefund refuses an operator's record of a refund for money
// that is not due back (DecideOrderRefund's RefundNothingDue, a payment
// not due back on its own, or none).
var ErrNothingToRefund = errors.New("nothing is due back there")

// DecideOrderRefund decides an operator's refund sent in transaction tx
// for an order at payment status s, whose recorded refund, if any
// (refunded), was sent in refundTx. An order's money goes back once.
func DecideOrderRefund(s PaymentStatus, refunded bool, refundTx, tx string) RefundRecord {
	switch {
	case refunded && refundTx == tx:
		return RefundAlreadyRecorded
	case !refunded && s.OwesMoneyBack():
		return RefundToRecord
	}
	return RefundNothingDue
}
