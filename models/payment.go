package models

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Payment is one observed incoming payment, from a chain or the sandbox.
// ID is unique per source and network (e.g. "sandbox:<id>",
// "stellar:testnet:<operation id>"), so the same payment seen twice is
// stored and counted once.
type Payment struct {
	ID     string
	Mode   Mode
	Asset  string // "USDC", "XLM", or CODE:ISSUER for an asset the service does not accept
	Amount decimal.Decimal
	Memo   string
	// MemoType is the chain's memo type: "text" or "id" can name an order;
	// "hash", "return" and "none" never do. Empty for the sandbox (text).
	MemoType string
	// Sender is the paying account: on Stellar the muxed account (M…) the
	// payment came from, if any (a custodian's customer), else its G….
	Sender     string
	TxHash     string // the chain transaction carrying the payment, for operators
	ReceivedAt time.Time
	// OrderID is the matched order, empty while unmatched.
	OrderID string
}

// Transition is one step of an order's progress as the workflow decided it,
// written to the database by an idempotent activity.
type Transition struct {
	Status        OrderStatus
	PaymentStatus PaymentStatus
	// At is workflow time (deterministic), stored as the step's timestamp.
	At             time.Time
	AmountReceived decimal.Decimal
	// Shipment is set once the carrier is known.
	Shipment *Shipment
	// Reason explains cancelled and failed, for operators.
	Reason string
	// Cancellation says why, in the clients' vocabulary, when Status is
	// cancelled. Empty in transitions recorded before it existed.
	Cancellation CancellationReason `json:",omitempty"`
}

// PaymentTally adds up payments towards an amount due, counting each
// payment id once. It is pure so the workflow and tests share it.
type PaymentTally struct {
	Due      decimal.Decimal
	Received decimal.Decimal
	Seen     map[string]bool
}

// NewPaymentTally starts a tally for the amount due.
func NewPaymentTally(due decimal.Decimal) PaymentTally {
	return PaymentTally{Due: due, Received: decimal.Zero, Seen: map[string]bool{}}
}

// Add counts a payment if its id has not been counted; it reports whether
// the payment was new.
func (t *PaymentTally) Add(paymentID string, amount decimal.Decimal) bool {
	if t.Seen[paymentID] || !amount.IsPositive() {
		return false
	}
	t.Seen[paymentID] = true
	t.Received = t.Received.Add(amount)
	return true
}

// Remaining returns what is still due, never negative.
func (t PaymentTally) Remaining() decimal.Decimal {
	r := t.Due.Sub(t.Received)
	if r.IsNegative() {
		return decimal.Zero
	}
	return r
}

// Status returns the payment status the tally implies while the order is
// open: pending, partial, confirmed or overpaid.
func (t PaymentTally) Status() PaymentStatus {
	switch c := t.Received.Cmp(t.Due); {
	case t.Received.IsZero():
		return PaymentPending
	case c < 0:
		return PaymentPartial
	case c == 0:
		return PaymentConfirmed
	default:
		return PaymentOverpaid
	}
}

// Paid reports whether the amount due has been reached.
func (t PaymentTally) Paid() bool { return t.Received.GreaterThanOrEqual(t.Due) }

// PaymentOutcome is what the matcher did with an observed payment.
type PaymentOutcome string

// Payment outcomes.
const (
	PaymentOutcomeMatched   PaymentOutcome = "matched"   // handed to its order's workflow
	PaymentOutcomeUnmatched PaymentOutcome = "unmatched" // memo names no order: kept for an operator
	PaymentOutcomeLate      PaymentOutcome = "late"      // its order had already closed: refund due
	// PaymentOutcomeWrongAsset: matched to its order by the memo but in
	// another asset than the order's, so the order's workflow records it
	// without crediting it: due back. Only the test helper reports it (a
	// chain payment's outcome is read on the order).
	PaymentOutcomeWrongAsset PaymentOutcome = "wrong_asset"
)

// CreditsOrder reports whether a payment in asset counts towards an order
// priced in orderAsset: the same asset code, and for USDC the same issuer
// (a foreign USDC arrives as "USDC:<issuer>"). Anything else is recorded
// against the order and due back.
func CreditsOrder(asset, orderAsset string) bool { return strings.EqualFold(asset, orderAsset) }

// PaymentHandler takes one observed payment. Sources call it for every
// incoming payment, and again after a failure: it must be idempotent.
type PaymentHandler func(ctx context.Context, p Payment) (PaymentOutcome, error)

// ErrOrderClosed means an order's workflow has finished and takes no more
// payments.
var ErrOrderClosed = errors.New("order is closed")

// ErrRefundClosed: the refund's workflow is not running (it ended, the
// refund settled, or it has not started yet): no move can be made
// through it.
var ErrRefundClosed = errors.New("refund's workflow is not running")
