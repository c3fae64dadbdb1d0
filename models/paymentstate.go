package models

import (
	"fmt"
	"slices"
)

// PaymentState is where an observed payment stands in the service's
// books, as stored: what the matcher, the order's workflow and operators
// have done with it. Clients read a payment's PaymentDisposition instead.
type PaymentState string

// Payment states.
const (
	PaymentStateReceived  PaymentState = "received"   // stored by a source, not yet through the matcher
	PaymentStateUnmatched PaymentState = "unmatched"  // its memo names no order: kept for an operator
	PaymentStateMatched   PaymentState = "matched"    // attached to an order and handed to its workflow
	PaymentStateLate      PaymentState = "late"       // arrived after its order closed: due back
	PaymentStateRefundDue PaymentState = "refund_due" // due back whole, never credited: in another asset than its order's, or unmatched and being refunded
	PaymentStateRefunded  PaymentState = "refunded"   // sent back: its refund settled, or an operator recorded it
)

// DueBack reports whether a payment in state s is owed back whole, on its
// own rather than as part of its order's money: it came too late, or in
// an asset the order does not take. Only such a payment is refunded alone.
func (s PaymentState) DueBack() bool { return slices.Contains(PaymentStatesDueBack(), s) }

// PaymentStatesDueBack lists the states DueBack holds for, for a store
// that selects such payments.
func PaymentStatesDueBack() []PaymentState {
	return []PaymentState{PaymentStateLate, PaymentStateRefundDue}
}

// CanAttachPayment decides whether an operator may attach payment p, in
// state, to order o (nil when no order has the number the operator gave):
// the payer got the memo wrong. Only a payment that matched no order can
// be attached, since a matched one was counted by its own order and one
// being refunded is on its way back to its payer; and only
// to an order of its mode, since test money never pays a live order, nor
// the reverse. The errors are for the operator.
func CanAttachPayment(p Payment, state PaymentState, o *Order) error {
	switch state {
	case PaymentStateUnmatched:
	case PaymentStateRefundDue, PaymentStateRefunded:
		// Money being sent back (or sent) never pays for an order too.
		return fmt.Errorf("payment %s is %s, not unmatched: it is being refunded or was, and pays no order", p.ID, state)
	default:
		return fmt.Errorf("payment %s is %s, not unmatched", p.ID, state)
	}
	if o == nil {
		return ErrOrderNotFound
	}
	if o.Mode != p.Mode {
		return fmt.Errorf("payment %s is %s mode, order %s is %s mode", p.ID, p.Mode, o.Number, o.Mode)
	}
	return nil
}
