package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/memocart/memocart/activities/stellar/payout"
	"github.com/memocart/memocart/models"
)

// Text memos of a refund destination that make the sandbox payer fail as
// the network would (see Payer).
const (
	PayoutMemoNoTrust     = "no_trust"
	PayoutMemoNoAccount   = "no_account"
	PayoutMemoUnderfunded = "underfunded"
	PayoutMemoTimeout     = "timeout"
)

// Payer is the test-mode adapter of the refund payer port
// (activities.Payer): it speaks like payout.Payer and moves no money. A payout's transaction hash is SHA-256 of the refund id
// and the request (destination, memo, asset, amount), so the same request
// always has the same hash and a retry finds its own. record is called
// with the hash (and no envelope: there is no chain) before the payout is
// "submitted", exactly as the live payer does, and nothing is sent if it
// fails.
//
// The destination's text memo chooses the outcome, or the request's
// TestRefusal (a test helper's, which takes the memo's place):
//
//   - "no_trust": Refused with op_no_trust, as a destination without a
//     trustline is.
//   - "no_account": Refused with op_no_destination, as a destination
//     that does not exist is.
//   - "underfunded": models.ErrPayoutUnderfunded, every time, as from a
//     payout account an operator must top up.
//   - "timeout": the first Pay records the hash and returns
//     models.ErrPayoutOutcomeUnknown, as after a lost answer; the next
//     Pay with that hash as Prior returns Sent with it.
//   - anything else: Sent.
//
// A Pay whose Prior is its own hash records nothing again and answers the
// same. CheckDestination accepts any well-formed address.
type Payer struct{}

// NewPayer returns the sandbox payer.
func NewPayer() *Payer { return &Payer{} }

// CheckDestination checks d's address and asset as payout.Payer does,
// without a network: every well-formed account exists, trusts USDC and
// takes payments without a memo.
func (p *Payer) CheckDestination(ctx context.Context, d models.RefundDestination, asset string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := models.ValidateRefundAddress(d.Address); err != nil {
		return err
	}
	if asset != payout.AssetXLM && asset != payout.AssetUSDC {
		return models.Errorf(models.CodeInvalidRequest, "A payout is in %s or %s, not %q", payout.AssetXLM, payout.AssetUSDC, asset)
	}
	return nil
}

// VerifyPayment checks only that hash is shaped like a transaction hash:
// test mode has no chain to look it up on, so an operator's mark-sent of
// a test refund is taken as said, as before live refunds were checked.
func (p *Payer) VerifyPayment(ctx context.Context, hash string, _ models.RefundPayment) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := models.RefundTxHash(hash)
	return err
}

// Pay "pays" req (see Payer for the memos that make it fail).
func (p *Payer) Pay(ctx context.Context, req models.PayoutRequest, record payout.RecordFunc) (models.PayoutResult, error) {
	if err := ctx.Err(); err != nil {
		return models.PayoutResult{}, err
	}
	if err := payout.Validate(req); err != nil {
		return models.PayoutResult{}, err
	}
	hash := payoutHash(req)
	memo := ""
	if req.Destination.MemoType == "text" {
		memo = req.Destination.Memo
	}
	if req.TestRefusal != "" {
		memo = req.TestRefusal // a test helper's refusal, as the memo would ask it
	}
	if !strings.EqualFold(req.Prior.Hash, hash) {
		if err := record(ctx, hash, ""); err != nil {
			return models.PayoutResult{}, fmt.Errorf("sandbox payer: recording transaction %s before submitting it: %w", hash, err)
		}
		if memo == PayoutMemoTimeout {
			return models.PayoutResult{}, fmt.Errorf("sandbox payer: memo %q: %w", memo, models.ErrPayoutOutcomeUnknown)
		}
	}
	switch memo {
	case PayoutMemoNoTrust:
		return refused(hash, "op_no_trust", req.Asset), nil
	case PayoutMemoNoAccount:
		return refused(hash, "op_no_destination", req.Asset), nil
	case PayoutMemoUnderfunded:
		return models.PayoutResult{}, fmt.Errorf("sandbox payer: memo %q: transaction %s: %w", memo, hash, models.ErrPayoutUnderfunded)
	}
	return models.PayoutResult{Outcome: models.PayoutSent, Hash: hash}, nil
}

func refused(hash, code, asset string) models.PayoutResult {
	return models.PayoutResult{Outcome: models.PayoutRefused, Hash: hash, Code: code, Reason: payout.RefusalReason(code, asset)}
}

// payoutHash is the sandbox transaction hash of req: 64 hex digits, like a
// Stellar hash, from everything that makes the payment (not Prior).
func payoutHash(req models.PayoutRequest) string {
	d := req.Destination
	memoType := d.MemoType
	if memoType == "none" {
		memoType = ""
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{
		"memocart sandbox refund", req.RefundID, d.Address, memoType, d.Memo, req.Asset, req.Amount.StringFixed(7),
	}, "\x00")))
	return hex.EncodeToString(sum[:])
}
