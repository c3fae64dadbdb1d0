package models

import (
	"errors"

	"github.com/shopspring/decimal"
)

// A refund's payout, in the terms of any payout rail: the refund
// activities speak these to their payers (the Stellar network's in live
// mode, the sandbox's in test mode), so a new rail is one more adapter.

// PayoutRequest is one refund payout.
type PayoutRequest struct {
	// RefundID names the refund in logs.
	RefundID string
	// Destination is where the money goes: an account and the memo its
	// owner needs. A to_sender destination is resolved to the paying
	// account's address first.
	Destination RefundDestination
	// Asset is the refund's asset code ("XLM", "USDC").
	Asset string
	// Amount is what the destination receives, positive. The payout
	// account pays the network's fee.
	Amount decimal.Decimal
	// Prior is the transaction an earlier attempt recorded, if any.
	Prior PayoutPrior
	// TestRefusal, for a test-mode refund only, is the refusal a test
	// helper asked of this payout (TestPayoutRefusals): the sandbox payer
	// answers it as the network would.
	TestRefusal string
}

// PayoutPrior is the payout transaction an earlier attempt recorded before
// submitting it (Refund's TransactionHash and Envelope): its hash and, on
// a rail that has one, its signed envelope.
type PayoutPrior struct {
	Hash     string
	Envelope string
}

// PayoutOutcome is how a payout ended.
type PayoutOutcome string

// Outcomes of a payout. Anything else is an error: the payout may be
// retried (with Prior set to what was recorded).
const (
	PayoutSent    PayoutOutcome = "sent"    // the transaction is final and paid
	PayoutRefused PayoutOutcome = "refused" // refused for a reason the payer (or an operator) must fix
)

// PayoutResult is a payout's end.
type PayoutResult struct {
	Outcome PayoutOutcome
	// Hash is the transaction that paid, or the refused one (kept for
	// operators).
	Hash string
	// Code is the rail's code that refused it ("op_no_trust"...); empty
	// when sent.
	Code string
	// Reason says, for the payer, why it was refused and what to do
	// (FailRefund's reason); empty when sent.
	Reason string
}

// Errors a payout rail answers with (wrapped), which its caller treats
// alike whatever the rail.
var (
	// ErrPayoutUnderfunded: the payout account cannot make this payment
	// (funds, trustline, or the fee). An operator must top it up; the
	// caller retries later, with the recorded transaction as Prior, and
	// alerts meanwhile.
	ErrPayoutUnderfunded = errors.New("payout: the payout account cannot fund this payment")
	// ErrPayoutFeeTooLow: the network's fee is above the configured
	// maximum. The caller retries later, with the recorded transaction as
	// Prior, and alerts meanwhile.
	ErrPayoutFeeTooLow = errors.New("payout: the network's fee is above the configured maximum")
	// ErrPayoutOutcomeUnknown: a transaction was submitted and whether it
	// applied is not known yet. Retry with the recorded transaction as
	// Prior: the retry looks it up before building another.
	ErrPayoutOutcomeUnknown = errors.New("payout: the transaction's outcome is not known yet")
)
