package models

import (
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// PaymentDisposition is what became of one payment seen for an order, as
// the order's reader sees it (GET /v1/orders/{id}: payments[].outcome).
type PaymentDisposition string

// Payment dispositions.
const (
	// DispositionProcessing: seen (on the chain, in the sandbox) and being
	// credited by the order's workflow; it moves on within seconds.
	DispositionProcessing PaymentDisposition = "processing"
	// DispositionCredited: counted towards the amount due. If the order
	// ends cancelled or failed, the order's payment_status says the money
	// is due back (refund_due).
	DispositionCredited PaymentDisposition = "credited"
	// DispositionWrongAsset: not in the order's asset (or USDC of another
	// issuer): recorded, never credited, due back.
	DispositionWrongAsset PaymentDisposition = "wrong_asset"
	// DispositionLate: arrived after the order closed (cancelled, expired,
	// or its workflow over): not credited, due back.
	DispositionLate PaymentDisposition = "late"
	// DispositionRefunded: an operator sent it back.
	DispositionRefunded PaymentDisposition = "refunded"
)

// OrderPayment is one payment seen for an order, for the client that
// reconciles it: where it came from, how much of what, and its outcome.
type OrderPayment struct {
	ID         string // Memocart's payment id: "stellar:<network>:<operation id>", "sandbox_…", "manual:…"
	Asset      string
	Amount     decimal.Decimal
	TxHash     string // the chain transaction; empty in the sandbox and for manual payments
	ReceivedAt time.Time
	Outcome    PaymentDisposition
	RefundedAt *time.Time
	RefundTx   string
}

// PaymentSource splits a payment id into the network the payment was seen
// on and its id there: ("pubnet", "123456789") for
// "stellar:pubnet:123456789", ("sandbox", "") for a sandbox payment.
// Anything else was recorded by an operator (docs/operators.md: manual
// payments, "manual:<reference>"): ("manual", "").
func PaymentSource(id string) (network, networkID string) {
	if rest, ok := strings.CutPrefix(id, "stellar:"); ok {
		if net, opID, ok := strings.Cut(rest, ":"); ok && net != "" && opID != "" {
			return net, opID
		}
	}
	if strings.HasPrefix(id, "sandbox") {
		return "sandbox", ""
	}
	return "manual", ""
}

// PendingCreditOf is what an order's payments still being credited add up
// to in the order's asset, while it waits for payment (Order.PendingCredit):
// money already seen, which a client must not ask the payer to send again.
func PendingCreditOf(o Order) decimal.Decimal {
	var sum decimal.Decimal // the zero value while nothing is pending, as an order read without payments has
	if o.Status != OrderCreated {
		return sum
	}
	for _, p := range o.Payments {
		if p.Outcome == DispositionProcessing && p.Asset == o.PaymentAsset {
			sum = sum.Add(p.Amount)
		}
	}
	return sum
}

// AmountToPay is what the payer is still asked to send: the amount due less
// what was credited, while the order waits for payment; nothing once it no
// longer does (paid, cancelled, failed), whatever was received, so a
// client never shows a closed order's full amount as payable.
func AmountToPay(o Order) decimal.Decimal {
	if o.Status != OrderCreated {
		return decimal.Zero
	}
	due := o.PaymentAmount.Sub(o.AmountReceived)
	if due.IsNegative() {
		return decimal.Zero
	}
	return due
}

// AmountDueReceived reports whether the money credited to the order, as
// recorded, has reached its amount due (PaymentTally.Paid).
func (o Order) AmountDueReceived() bool { return o.AmountReceived.GreaterThanOrEqual(o.PaymentAmount) }

// AmountDueBack is the money in the order's asset owed back to the payer
// and not yet refunded: what a cancelled or failed order had credited, or
// an overpayment's excess, less what the refunds of that money returned
// (AmountRefunded); and payments in the order's asset that arrived after
// it closed and are not refunded (their refund settling marks them so).
// Payments in another asset are due back too, in their own asset:
// Payments lists them (DispositionWrongAsset), and so do their refunds.
func AmountDueBack(o Order) decimal.Decimal {
	var sum decimal.Decimal
	if o.RefundedAt == nil {
		switch {
		case o.Status == OrderCancelled || o.Status == OrderFailed:
			sum = sum.Add(o.AmountReceived)
		case o.AmountReceived.GreaterThan(o.PaymentAmount):
			sum = sum.Add(o.AmountReceived.Sub(o.PaymentAmount))
		}
	}
	for _, p := range o.Payments {
		if p.Outcome == DispositionLate && p.RefundedAt == nil && CreditsOrder(p.Asset, o.PaymentAsset) {
			sum = sum.Add(p.Amount)
		}
	}
	return decimal.Max(sum.Sub(o.AmountRefunded), decimal.Zero)
}
