// Package resultcodes names transaction and operation results as Horizon
// does (its codes package): "tx_failed", "op_no_trust". The payout client
// reads them and the test Horizon (horizontest) writes them, so both speak
// the one vocabulary.
//
// It may import the Stellar SDK's xdr and the standard library.
package resultcodes

import "github.com/stellar/go-stellar-sdk/xdr"

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

// Transaction is Horizon's name of a transaction result code, or the XDR
// name of one Horizon has no name for.
func Transaction(code xdr.TransactionResultCode) string {
	if c, ok := txCodes[code]; ok {
		return c
	}
	return code.String()
}

// Operation is Horizon's name of an operation's result. Only payments are
// ever submitted, so other operations' inner results are named by their
// XDR type, and codes Horizon has no name for by their XDR name.
func Operation(r xdr.OperationResult) string {
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
