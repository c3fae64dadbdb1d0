package payout

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stellar/go-stellar-sdk/xdr"
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

// Horizon's names of the result codes, as in its codes package.
var (
	txCodes = map[xdr.TransactionResultCode]string{
		xdr.TransactionResultCodeTxSuccess:             "tx_success",
		xdr.TransactionResultCodeTxFailed:              "tx_failed",
		xdr.TransactionResultCodeTxTooEarly:            "tx_too_early",
		xdr.TransactionResultCodeTxTooLate:             "tx_too_late",
		xdr.TransactionResultCodeTxMissingOperation:    "tx_missing_operation",
		xdr.TransactionResultCodeTxBadSeq:              "tx_bad_seq",
		xdr.TransactionResultCodeTxBadAuth:             "tx_bad_auth",
		xdr.TransactionResultCodeTxInsufficientBalance: "tx_insufficient_balance",
		xdr.TransactionResultCodeTxNoAccount:           "tx_no_source_account",
		xdr.TransactionResultCodeTxInsufficientFee:     "tx_insufficient_fee",
		xdr.TransactionResultCodeTxBadAuthExtra:        "tx_bad_auth_extra",
		xdr.TransactionResultCodeTxInternalError:       "tx_internal_error",
		xdr.TransactionResultCodeTxNotSupported:        "tx_not_supported",
		xdr.TransactionResultCodeTxBadSponsorship:      "tx_bad_sponsorship",
		xdr.TransactionResultCodeTxBadMinSeqAgeOrGap:   "tx_bad_minseq_age_or_gap",
		xdr.TransactionResultCodeTxMalformed:           "tx_malformed",
	}
	opCodes = map[xdr.OperationResultCode]string{
		xdr.OperationResultCodeOpBadAuth:           "op_bad_auth",
		xdr.OperationResultCodeOpNoAccount:         "op_no_source_account",
		xdr.OperationResultCodeOpNotSupported:      "op_not_supported",
		xdr.OperationResultCodeOpTooManySubentries: "op_too_many_subentries",
		xdr.OperationResultCodeOpExceededWorkLimit: "op_exceeded_work_limit",
		xdr.OperationResultCodeOpTooManySponsoring: "op_too_many_sponsoring",
	}
	paymentCodes = map[xdr.PaymentResultCode]string{
		xdr.PaymentResultCodePaymentSuccess:          "op_success",
		xdr.PaymentResultCodePaymentMalformed:        "op_malformed",
		xdr.PaymentResultCodePaymentUnderfunded:      "op_underfunded",
		xdr.PaymentResultCodePaymentSrcNoTrust:       "op_src_no_trust",
		xdr.PaymentResultCodePaymentSrcNotAuthorized: "op_src_not_authorized",
		xdr.PaymentResultCodePaymentNoDestination:    "op_no_destination",
		xdr.PaymentResultCodePaymentNoTrust:          "op_no_trust",
		xdr.PaymentResultCodePaymentNotAuthorized:    "op_not_authorized",
		xdr.PaymentResultCodePaymentLineFull:         "op_line_full",
		xdr.PaymentResultCodePaymentNoIssuer:         "op_no_issuer",
	}
)

// resultCodes decodes a transaction's result_xdr into Horizon's codes; a
// fee bump's are its inner transaction's. Only payments are ever
// submitted, so other operations' inner results are named by their XDR
// type.
func resultCodes(resultXDR string) (string, []string, error) {
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(resultXDR, &res); err != nil {
		return "", nil, fmt.Errorf("payout: decoding a transaction result: %w", err)
	}
	code, results := res.Result.Code, res.Result.Results
	if pair, ok := res.Result.GetInnerResultPair(); ok {
		code, results = pair.Result.Result.Code, pair.Result.Result.Results
	}
	tx, ok := txCodes[code]
	if !ok {
		tx = code.String()
	}
	var ops []string
	if results != nil {
		for _, r := range *results {
			ops = append(ops, operationCode(r))
		}
	}
	return tx, ops, nil
}

func operationCode(r xdr.OperationResult) string {
	if r.Code != xdr.OperationResultCodeOpInner {
		if c, ok := opCodes[r.Code]; ok {
			return c
		}
		return r.Code.String()
	}
	if pr, ok := r.Tr.GetPaymentResult(); ok {
		if c, ok := paymentCodes[pr.Code]; ok {
			return c
		}
		return pr.Code.String()
	}
	return r.Tr.Type.String()
}
