package payout

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/memocart/memocart/models"
)

// txHashField is the request field VerifyPayment's refusals name: the
// operator's --tx.
const txHashField = "transaction_hash"

// creditingTypes are the operations that credit their destination the
// record's amount, in the record's asset: a path payment's destination
// gets amount, never source_amount.
var creditingTypes = map[string]bool{
	"payment":                     true,
	"path_payment_strict_receive": true,
	"path_payment_strict_send":    true,
}

// paymentRecord is what VerifyPayment reads of a transaction's payment
// operations (GET /transactions/{hash}/payments).
type paymentRecord struct {
	Type                  string `json:"type"`
	TransactionSuccessful bool   `json:"transaction_successful"`
	To                    string `json:"to"`
	ToMuxedID             string `json:"to_muxed_id"`
	AssetType             string `json:"asset_type"`
	AssetCode             string `json:"asset_code"`
	AssetIssuer           string `json:"asset_issuer"`
	Amount                string `json:"amount"`
}

// memoBody is the memo of Horizon's transaction resource: absent for
// none, base64 for hash and return, an id in decimal.
type memoBody struct {
	Successful bool    `json:"successful"`
	MemoType   string  `json:"memo_type"`
	Memo       *string `json:"memo"`
}

// VerifyPayment checks on Horizon that transaction hash paid want: it is
// in the ledger and successful, and one of its payments (payment, or a
// path payment's amount received) credits want.To's account (its muxed
// id too, when To is muxed; a muxed form of a plain To counts) exactly
// want.Amount of want.Asset (XLM, USDC of the configured issuer, or
// CODE:ISSUER), and its memo is To's when To has one. A refusal is an
// invalid_request models error naming transaction_hash, saying what does
// not match; a failure to ask Horizon is a plain error, worth retrying.
// A hash that Horizon does not know is refused: behind a load balancer an
// instance may not have the ledger yet, and the operator asks again.
//
// Cost: two GETs (the transaction, then its payments: one page, since a
// transaction holds at most 100 operations).
func (p *Payer) VerifyPayment(ctx context.Context, hash string, want models.RefundPayment) error {
	h, err := models.RefundTxHash(hash)
	if err != nil {
		return err
	}
	refuse := func(format string, args ...any) error {
		return models.FieldError(models.CodeInvalidRequest, txHashField, "Transaction %s %s", h, fmt.Sprintf(format, args...))
	}
	var tx memoBody
	_, err = p.getJSON(ctx, "/transactions/"+url.PathEscape(h), &tx)
	switch {
	case errors.Is(err, errNotFound):
		return refuse("is not on the Stellar network (Horizon does not know it): check the hash, or try again once it is in a ledger")
	case err != nil:
		return err
	case !tx.Successful:
		return refuse("failed on the network: it paid nothing")
	}
	if err := memoMatches(tx, want.To); err != nil {
		return refuse("%v", err)
	}
	var page struct {
		Embedded struct {
			Records []paymentRecord `json:"records"`
		} `json:"_embedded"`
	}
	_, err = p.getJSON(ctx, "/transactions/"+url.PathEscape(h)+"/payments?limit=200", &page)
	if errors.Is(err, errNotFound) {
		return refuse("is not on the Stellar network (Horizon does not know it): check the hash, or try again once it is in a ledger")
	}
	if err != nil {
		return err
	}
	to, toID, err := destinationParts(want.To.Address)
	if err != nil {
		return err
	}
	var seen []string
	for _, r := range page.Embedded.Records {
		if !creditingTypes[r.Type] || !r.TransactionSuccessful {
			continue
		}
		amount, err := models.StellarAmount(r.Amount)
		if err != nil {
			return fmt.Errorf("payout: horizon listed a payment of transaction %s with amount %q: %w", h, r.Amount, err)
		}
		asset := p.assetName(r)
		switch {
		case slices.Contains(want.NotTo, r.To):
			seen = append(seen, "one to this service's own account")
			continue
		case to != "" && r.To != to:
			seen = append(seen, "one to another account")
			continue
		case toID != "" && r.ToMuxedID != toID:
			seen = append(seen, "one to another muxed id of the account")
			continue
		case asset != want.Asset:
			seen = append(seen, fmt.Sprintf("one of %s %s", amount, asset))
			continue
		case !amount.Equal(want.Amount):
			seen = append(seen, fmt.Sprintf("one of %s %s", amount, asset))
			continue
		}
		return nil
	}
	what := "no payment"
	if len(seen) > 0 {
		what = fmt.Sprintf("%d payment(s) that do not match (%s)", len(seen), joinFirst(seen, 3))
	}
	to = "the refund's destination"
	if want.To.Address == "" {
		to = "an account not this service's"
	}
	return refuse("does not pay the refund: it holds %s, not one of exactly %s %s to %s", what, want.Amount, want.Asset, to)
}

// destinationParts splits a destination address into its account (G…)
// and, for a muxed one, its id in decimal; "" and "" for none.
func destinationParts(address string) (account, id string, err error) {
	if address == "" {
		return "", "", nil
	}
	m, err := xdr.AddressToMuxedAccount(address)
	if err != nil {
		return "", "", models.FieldError(models.CodeInvalidRefundDestination, destinationField, "The address is not a Stellar account")
	}
	acc := m.ToAccountId()
	if med, ok := m.GetMed25519(); ok {
		return acc.Address(), strconv.FormatUint(uint64(med.Id), 10), nil
	}
	return acc.Address(), "", nil
}

// assetName names a record's asset as refunds do: XLM, USDC of the
// configured issuer, or CODE:ISSUER.
func (p *Payer) assetName(r paymentRecord) string {
	switch {
	case r.AssetType == "native":
		return AssetXLM
	case r.AssetCode == AssetUSDC && r.AssetIssuer == p.issuer:
		return AssetUSDC
	}
	return r.AssetCode + ":" + r.AssetIssuer
}

// memoMatches checks the transaction's memo against d's, when d has one.
func memoMatches(tx memoBody, d models.RefundDestination) error {
	d = d.Normalized()
	if d.MemoType == "" {
		return nil
	}
	got := ""
	if tx.Memo != nil {
		got = *tx.Memo
	}
	mismatch := fmt.Errorf("carries memo %s %q, not the destination's %s memo", tx.MemoType, got, d.MemoType)
	if tx.MemoType != d.MemoType || tx.Memo == nil {
		return mismatch
	}
	switch d.MemoType {
	case "text":
		if got != d.Memo {
			return mismatch
		}
	case "id":
		a, errA := strconv.ParseUint(got, 10, 64)
		b, errB := strconv.ParseUint(d.Memo, 10, 64)
		if errA != nil || errB != nil || a != b {
			return mismatch
		}
	case "hash", "return":
		want, err := models.RefundMemoHash(d.Memo)
		raw, errGot := base64.StdEncoding.DecodeString(got)
		if err != nil || errGot != nil || !bytes.Equal(raw, want[:]) {
			return mismatch
		}
	default:
		return mismatch
	}
	return nil
}

func joinFirst(list []string, n int) string {
	out := ""
	for i, s := range list {
		if i == n {
			return out + ", …"
		}
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
