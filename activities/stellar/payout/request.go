package payout

import (
	"context"
	"strconv"

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

// RecordFunc records a payout transaction, its hash and base64 signed
// envelope, before it is submitted (models.RecordRefundTransaction). The
// transaction is submitted only if it returns nil. It is an alias, so a
// consumer's interface may spell the func type out.
type RecordFunc = func(ctx context.Context, hash, envelope string) error

// Validate checks what can be checked of a payout on Stellar without the
// network: an address (not to_sender) with a memo that fits its type, a
// known asset, and an amount Stellar can carry. Errors are models errors:
// invalid_refund_destination for the destination, invalid_request for
// the rest.
func Validate(r models.PayoutRequest) error {
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
