package payout

import (
	"context"
	"strconv"

	"github.com/shopspring/decimal"
	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/memocart/memocart/models"
)

// The assets a refund is paid in: the native lumen and USDC of the
// configured issuer.
const (
	AssetXLM  = "XLM"
	AssetUSDC = "USDC"
)

// Request is one refund payout.
type Request struct {
	// RefundID names the refund in logs.
	RefundID string
	// Destination is where the money goes: an account (G…) or muxed
	// account (M…) and the memo its owner needs. A to_sender destination
	// must be resolved to the paying account's address first.
	Destination models.RefundDestination
	// Asset is AssetXLM or AssetUSDC.
	Asset string
	// Amount is what the destination receives, positive, with at most 7
	// decimal places. The payout account pays the network's fee.
	Amount decimal.Decimal
	// Prior is the transaction an earlier attempt recorded, if any.
	Prior Prior
}

// Prior is the payout transaction an earlier attempt recorded before
// submitting it (models.Refund's TransactionHash and Envelope): its hash
// and its signed envelope in base64.
type Prior struct {
	Hash     string
	Envelope string
}

// Outcome is how a payout ended.
type Outcome string

// Outcomes of a payout. Anything else is an error: the payout may be
// retried (with Prior set to what was recorded).
const (
	Sent    Outcome = "sent"    // the transaction is in the ledger and paid
	Refused Outcome = "refused" // the network refused it for a reason the payer (or an operator) must fix
)

// Result is a payout's end.
type Result struct {
	Outcome Outcome
	// Hash is the transaction that paid, or the refused one (kept for
	// operators).
	Hash string
	// Code is Horizon's result code that refused it ("op_no_trust",
	// "tx_bad_auth"...); empty when sent.
	Code string
	// Reason says, for the payer, why it was refused and what to do
	// (models.FailRefund's reason); empty when sent.
	Reason string
}

// RecordFunc records a payout transaction, its hash and base64 signed
// envelope, before it is submitted (models.RecordRefundTransaction). The
// transaction is submitted only if it returns nil. It is an alias, so a
// consumer's interface may spell the func type out.
type RecordFunc = func(ctx context.Context, hash, envelope string) error

// Validate checks what can be checked of r without the network: an
// address (not to_sender) with a memo that fits its type, a known asset,
// and an amount Stellar can carry. Errors are models errors:
// invalid_refund_destination for the destination, invalid_request for
// the rest.
func (r Request) Validate() error {
	d := r.Destination
	if d.ToSender || d.Address == "" {
		return models.Errorf(models.CodeInvalidRequest, "A payout needs the destination's address: resolve to_sender to the paying account first")
	}
	if err := models.ValidateRefundDestination(d); err != nil {
		return err
	}
	if r.Asset != AssetXLM && r.Asset != AssetUSDC {
		return models.Errorf(models.CodeInvalidRequest, "A payout is in %s or %s, not %q", AssetXLM, AssetUSDC, r.Asset)
	}
	if !r.Amount.IsPositive() || !r.Amount.Equal(r.Amount.Truncate(7)) {
		return models.Errorf(models.CodeInvalidRequest, "A payout amount is positive with at most 7 decimal places, not %s", r.Amount)
	}
	if _, err := amount.ParseInt64(r.Amount.StringFixed(7)); err != nil {
		return models.Errorf(models.CodeInvalidRequest, "A payout amount must fit Stellar's largest amount, not %s", r.Amount)
	}
	return nil
}

// memo is the transaction memo of a validated destination.
func memo(d models.RefundDestination) (txnbuild.Memo, error) {
	switch d.MemoType {
	case "text":
		return txnbuild.MemoText(d.Memo), nil
	case "id":
		v, err := strconv.ParseUint(d.Memo, 10, 64)
		return txnbuild.MemoID(v), err
	case "hash":
		h, err := models.RefundMemoHash(d.Memo)
		return txnbuild.MemoHash(h), err
	case "return":
		h, err := models.RefundMemoHash(d.Memo)
		return txnbuild.MemoReturn(h), err
	}
	return nil, nil
}
