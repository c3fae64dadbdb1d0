package models

import (
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// RefundsOwed returns the refunds order o owes and does not have yet,
// created at now and awaiting their destination. existing are the
// order's refunds so far, in any status (a cancelled one was settled
// another way; a failed one is still owed and retried, not replaced).
// o.Payments must be loaded: they name the payments owed back alone.
//
// Who owes what:
//   - failed (paid, the purchase failed): everything credited;
//   - cancelled with money credited (underpaid, then expired or cancelled
//     by the client or an operator): everything credited;
//   - paid or beyond, not failed: what was credited beyond the amount due;
//   - a payment recorded late (after the order closed): that payment;
//   - a payment in another asset: that payment, in its asset.
//
// Grouping: the order's own money (the first three) is one refund in the
// order's asset, for what is owed less what the order's earlier refunds
// of its own money already cover, keyed "order:<order id>:<n>" (the n-th
// such refund): a payment credited after an overpayment's refund was
// created, or a failure after it, adds a refund for the difference and
// never changes one that may be on its way. Its amount is the order's
// recorded AmountReceived, not a sum over Payments, so a refund is never
// short because a payment list was not loaded. Each late or wrong-asset
// payment is its own refund keyed "payment:<payment id>": such payments
// arrive at any time, and a refund per payment never has to grow.
//
// What an operator recorded by hand (mark-refunded: Order.RefundedAt for
// the order's money, a payment's RefundedAt) is settled and owes nothing.
// A payment still being credited (processing) owes nothing yet.
//
// Calling it twice with the same arguments returns refunds with the same
// keys and ids, so creating them is idempotent.
func RefundsOwed(o Order, existing []Refund, now time.Time) []Refund {
	var out []Refund
	have := map[string]bool{}
	var covered decimal.Decimal
	var coveredExcess decimal.Decimal
	n := 0
	for _, r := range existing {
		have[r.Key], have[r.ID] = true, true
		if r.OrderID == o.ID && r.Reason.ofOrder() {
			covered = covered.Add(r.Amount)
			if r.Reason == RefundOverpaid {
				coveredExcess = coveredExcess.Add(r.Amount)
			}
			n++
		}
	}

	if reason, owed := orderMoneyOwed(o); reason != "" {
		if amount := owed.Sub(covered); amount.IsPositive() {
			key := "order:" + o.ID + ":" + strconv.Itoa(n+1)
			out = append(out, Refund{
				ID:         RefundID(key),
				Key:        key,
				OrderID:    o.ID,
				PaymentIDs: creditedPayments(o, reason, coveredExcess),
				Reason:     reason,
				Amount:     amount,
				Asset:      o.PaymentAsset,
				Status:     RefundAwaitingDestination,
				CreatedAt:  now,
			})
		}
	}

	for _, p := range o.Payments {
		var reason RefundReason
		switch p.Outcome {
		case DispositionLate:
			reason = RefundLatePayment
		case DispositionWrongAsset:
			reason = RefundWrongAsset
		default:
			continue
		}
		key := PaymentRefundKey(p.ID)
		if p.RefundedAt != nil || !p.Amount.IsPositive() || have[key] || have[RefundID(key)] {
			continue
		}
		have[key] = true // listed twice, refunded once
		out = append(out, Refund{
			ID:         RefundID(key),
			Key:        key,
			OrderID:    o.ID,
			PaymentIDs: []string{p.ID},
			Reason:     reason,
			Amount:     p.Amount,
			Asset:      p.Asset,
			Status:     RefundAwaitingDestination,
			CreatedAt:  now,
		})
	}
	return out
}

// orderMoneyOwed is what o owes back of its own (credited) money in its
// asset, and why; no reason when it owes none of it.
func orderMoneyOwed(o Order) (RefundReason, decimal.Decimal) {
	received := o.AmountReceived
	if o.RefundedAt != nil || !received.IsPositive() {
		return "", decimal.Zero
	}
	switch {
	case o.Status == OrderFailed:
		return RefundOrderFailed, received
	case o.Status == OrderCancelled:
		c := o.Cancellation
		if !c.Valid() {
			c = legacyCancellation(o.StatusReason)
		}
		if c == CancellationPaymentWindowExpired {
			return RefundOrderExpired, received
		}
		return RefundOrderCancelled, received
	case StepReached(o.Status, OrderPaid):
		if excess := received.Sub(o.PaymentAmount); excess.IsPositive() {
			return RefundOverpaid, excess
		}
	}
	return "", decimal.Zero
}

// creditedPayments lists the credited payments a refund of the order's
// own money returns: all of them for a failed or cancelled order; for an
// overpayment, those credited (oldest first) beyond the amount due and
// the excess already covered.
func creditedPayments(o Order, reason RefundReason, coveredExcess decimal.Decimal) []string {
	var ids []string
	threshold := o.PaymentAmount.Add(coveredExcess)
	var sum decimal.Decimal
	for _, p := range o.Payments {
		if p.Outcome != DispositionCredited {
			continue
		}
		sum = sum.Add(p.Amount)
		if reason != RefundOverpaid || sum.GreaterThan(threshold) {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// PaymentRefundKey is the natural key of the refund of one payment whole
// (late, in another asset, or unmatched): a store finds the refund that
// covers a payment by it.
func PaymentRefundKey(paymentID string) string { return "payment:" + paymentID }

// RefundOfUnmatchedPayment is the refund of payment p, which named no
// order, created at now because an operator decided to return it
// (refunds create --payment): p whole, in its asset, with no order. Its
// key is the payment's, so deciding twice creates it once. The errors are
// for the operator.
func RefundOfUnmatchedPayment(p Payment, state PaymentState, now time.Time) (Refund, error) {
	if state != PaymentStateUnmatched || p.OrderID != "" {
		return Refund{}, fmt.Errorf("payment %s is %s, not unmatched: its order's refunds return it", p.ID, state)
	}
	if !p.Amount.IsPositive() {
		return Refund{}, fmt.Errorf("payment %s has no amount to return", p.ID)
	}
	key := PaymentRefundKey(p.ID)
	return Refund{
		ID:         RefundID(key),
		Key:        key,
		PaymentIDs: []string{p.ID},
		Mode:       p.Mode,
		Reason:     RefundUnmatchedPayment,
		Amount:     p.Amount,
		Asset:      p.Asset,
		Status:     RefundAwaitingDestination,
		CreatedAt:  now,
	}, nil
}

// RefundsSettled reports whether refunds, all of one order, are all
// settled (sent or cancelled). No refunds settle nothing: an order owing
// money with none created has not returned it.
func RefundsSettled(refunds []Refund) bool {
	if len(refunds) == 0 {
		return false
	}
	for _, r := range refunds {
		if !r.Status.Settled() {
			return false
		}
	}
	return true
}

// PaymentStatusAfterRefunds is the payment status of order o given its
// refunds. An order that owes money back (refund_due, overpaid) leaves
// that status only when nothing more is owed (RefundsOwed finds nothing
// to create) and every refund is settled (RefundsSettled). It then
// becomes refunded if the order did not keep the money (failed or
// cancelled), and confirmed if it did (paid or beyond: what it kept is
// the amount due, the rest went back). Any other status is returned as
// it is. o.Payments must be loaded, as for RefundsOwed.
func PaymentStatusAfterRefunds(o Order, refunds []Refund) PaymentStatus {
	s := o.PaymentStatus
	if !s.OwesMoneyBack() || !RefundsSettled(refunds) || len(RefundsOwed(o, refunds, time.Time{})) > 0 {
		return s
	}
	switch {
	case o.Status == OrderFailed || o.Status == OrderCancelled:
		return PaymentRefunded
	case StepReached(o.Status, OrderPaid):
		return PaymentConfirmed
	}
	return s
}

// RefundsSettledIn is what refunds, all of one order, returned of the
// order's own money in asset: the sum of those of its own money sent or
// settled another way (cancelled). It is what the order's amount due back
// no longer counts (AmountDueBack). A refund of one payment whole is left
// out: settling it marks its payment refunded, which AmountDueBack reads.
func RefundsSettledIn(refunds []Refund, asset string) decimal.Decimal {
	var sum decimal.Decimal
	for _, r := range refunds {
		if r.Status.Settled() && r.Asset == asset && r.Reason.ofOrder() {
			sum = sum.Add(r.Amount)
		}
	}
	return sum
}
