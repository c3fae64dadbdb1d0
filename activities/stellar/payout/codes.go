package payout

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/memocart/memocart/activities/stellar/resultcodes"
)

// action is what a transaction result leads to.
type action int

const (
	actSent        action = iota // in the ledger, successful
	actRefused                   // refused for a reason the payer or an operator must fix
	actRebuild                   // refused before any ledger, for good: another may be built
	actUnderfunded               // the payout account cannot pay: models.ErrPayoutUnderfunded
	actRetry                     // refused for now: the same envelope may apply later
)

// outcome is a transaction result: what it leads to, and the result code
// that decided it.
type outcome struct {
	act   action
	hash  string
	code  string   // the deciding code, e.g. "op_no_trust"
	codes []string // every code, transaction first, for messages
}

// classify maps Horizon's result codes (extras.result_codes, or decoded
// from result_xdr) to what they lead to. A failed operation decides for a
// failed transaction; the first one does when several failed.
func classify(txCode string, opCodes []string) outcome {
	o := outcome{code: txCode, codes: append([]string{txCode}, opCodes...)}
	switch txCode {
	case "tx_success":
		o.act = actSent
	case "tx_bad_seq", "tx_too_late":
		// The sequence number is spent, or the time bounds have passed:
		// the envelope can never apply.
		o.act = actRebuild
	case "tx_insufficient_fee":
		o.act = actRetry
	case "tx_insufficient_balance", "tx_no_source_account":
		o.act = actUnderfunded
	case "tx_failed":
		o.act = actRefused
		if i := slices.IndexFunc(opCodes, func(c string) bool { return c != "op_success" }); i >= 0 {
			o.code = opCodes[i]
		}
		switch o.code {
		case "op_underfunded", "op_src_no_trust", "op_src_not_authorized":
			o.act = actUnderfunded
		}
	default:
		o.act = actRefused
	}
	return o
}

// reasons are what a payer reads about a refused payout and can act on;
// %[1]s is the asset.
var reasons = map[string]string{
	"op_no_trust":       "The destination account does not trust %[1]s: add a %[1]s trustline and set the destination again",
	"op_no_destination": "The destination account does not exist on the Stellar network: create it with some XLM and set the destination again, or give another address",
	"op_not_authorized": "The %[1]s issuer has not authorized the destination account to hold %[1]s: get it authorized and set the destination again, or give another address",
	"op_line_full":      "The destination account's %[1]s trustline cannot take this amount: raise its limit and set the destination again",
}

// RefusalReason is what a payer reads when a payout in asset was refused
// with Horizon's result code: what to fix for the codes a payer can act
// on, and that an operator will look into it for the others.
func RefusalReason(code, asset string) string {
	if format, ok := reasons[code]; ok {
		return fmt.Sprintf(format, asset)
	}
	return fmt.Sprintf("The Stellar network refused the refund payment (%s): an operator will look into it", code)
}

// reason is the payer's sentence for a refused outcome, naming every code
// when none is one the payer can act on.
func reason(o outcome, asset string) string {
	if _, ok := reasons[o.code]; ok {
		return RefusalReason(o.code, asset)
	}
	return RefusalReason(strings.Join(o.codes, ", "), asset)
}

// resultCodes decodes a transaction's result_xdr into Horizon's codes; a
// fee bump's are its inner transaction's.
func resultCodes(resultXDR string) (string, []string, error) {
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(resultXDR, &res); err != nil {
		return "", nil, fmt.Errorf("payout: decoding a transaction result: %w", err)
	}
	code, results := res.Result.Code, res.Result.Results
	if pair, ok := res.Result.GetInnerResultPair(); ok {
		code, results = pair.Result.Result.Code, pair.Result.Result.Results
	}
	tx := resultcodes.Transaction(code)
	var ops []string
	if results != nil {
		for _, r := range *results {
			ops = append(ops, resultcodes.Operation(r))
		}
	}
	return tx, ops, nil
}
