package resultcodes

import (
	"testing"

	"github.com/stellar/go-stellar-sdk/xdr"
	"github.com/stretchr/testify/assert"
)

// TestNames: Horizon's names where it has one, the XDR name otherwise,
// and an inner result other than a payment's by its operation type.
func TestNames(t *testing.T) {
	assert.Equal(t, "tx_bad_seq", Transaction(xdr.TransactionResultCodeTxBadSeq))
	assert.Equal(t, xdr.TransactionResultCodeTxFeeBumpInnerFailed.String(), Transaction(xdr.TransactionResultCodeTxFeeBumpInnerFailed))

	assert.Equal(t, "op_no_source_account", Operation(xdr.OperationResult{Code: xdr.OperationResultCodeOpNoAccount}))
	assert.Equal(t, "op_no_trust", Operation(xdr.OperationResult{
		Code: xdr.OperationResultCodeOpInner,
		Tr:   &xdr.OperationResultTr{Type: xdr.OperationTypePayment, PaymentResult: &xdr.PaymentResult{Code: xdr.PaymentResultCodePaymentNoTrust}},
	}))
	bump := xdr.OperationResultTr{Type: xdr.OperationTypeBumpSequence, BumpSeqResult: &xdr.BumpSequenceResult{}}
	assert.Equal(t, xdr.OperationTypeBumpSequence.String(), Operation(xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &bump}))
}
