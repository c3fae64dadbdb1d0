package models

import (
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
)

// A refund goes through the order's workflow exactly when the order ended
// owing the money it credited: that is when the workflow waits for it.
func TestRouteOrderRefund(t *testing.T) {
	some, none := decimal.RequireFromString("12.50"), decimal.Zero
	for _, tc := range []struct {
		status   OrderStatus
		payment  PaymentStatus
		received decimal.Decimal
		want     RefundRoute
	}{
		{OrderCancelled, PaymentRefundDue, some, RefundThroughWorkflow},
		{OrderFailed, PaymentRefundDue, some, RefundThroughWorkflow},
		// A delivered order made refund_due by a late payment: its
		// workflow has closed, and would answer so.
		{OrderDelivered, PaymentRefundDue, some, RefundThroughWorkflow},
		// refund_due only because of a payment in another asset.
		{OrderCancelled, PaymentRefundDue, none, RefundRecordedDirectly},
		{OrderCancelled, PaymentRefunded, some, RefundRecordedDirectly},
		{OrderCancelled, PaymentExpired, none, RefundRecordedDirectly},
		// An overpayment's excess: the order goes on, nothing waits.
		{OrderPaid, PaymentOverpaid, some, RefundRecordedDirectly},
		{OrderDelivered, PaymentOverpaid, some, RefundRecordedDirectly},
		// Not ended: its workflow does not wait for a refund.
		{OrderPaid, PaymentRefundDue, some, RefundRecordedDirectly},
		{OrderCreated, PaymentPartial, some, RefundRecordedDirectly},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.status, tc.payment, tc.received), func(t *testing.T) {
			assert.Equal(t, tc.want, RouteOrderRefund(tc.status, tc.payment, tc.received))
		})
	}
}

func TestOwesMoneyBack(t *testing.T) {
	for _, s := range []PaymentStatus{PaymentPending, PaymentPartial, PaymentConfirmed, PaymentOverpaid, PaymentExpired,
		PaymentRefundDue, PaymentRefunded, PaymentCancelled, PaymentProcessing} {
		want := s == PaymentRefundDue || s == PaymentOverpaid
		assert.Equal(t, want, s.OwesMoneyBack(), s)
	}
}

// Once refunded, an order that owed its money shows refunded; an overpaid
// one stays overpaid (it keeps its purchase); nothing else changes.
func TestPaymentStatusAfterRefund(t *testing.T) {
	for _, tc := range []struct{ before, after PaymentStatus }{
		{PaymentRefundDue, PaymentRefunded},
		{PaymentOverpaid, PaymentOverpaid},
		{PaymentConfirmed, PaymentConfirmed},
		{PaymentRefunded, PaymentRefunded},
	} {
		assert.Equal(t, tc.after, PaymentStatusAfterRefund(tc.before), tc.before)
	}
}

// An order's money goes back once: the same refund again is done, any
// other refused.
func TestDecideOrderRefund(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   PaymentStatus
		refunded bool
		refundTx string
		tx       string
		want     RefundRecord
	}{
		{"refund due", PaymentRefundDue, false, "", "tx1", RefundToRecord},
		{"overpaid", PaymentOverpaid, false, "", "tx1", RefundToRecord},
		{"same refund again", PaymentRefunded, true, "tx1", "tx1", RefundAlreadyRecorded},
		{"overpaid, same refund again", PaymentOverpaid, true, "tx1", "tx1", RefundAlreadyRecorded},
		{"another refund", PaymentRefunded, true, "tx1", "tx2", RefundNothingDue},
		{"overpaid, another refund", PaymentOverpaid, true, "tx1", "tx2", RefundNothingDue},
		{"nothing owed", PaymentConfirmed, false, "", "tx1", RefundNothingDue},
		{"nothing received", PaymentExpired, false, "", "tx1", RefundNothingDue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, DecideOrderRefund(tc.status, tc.refunded, tc.refundTx, tc.tx))
		})
	}
}

func TestAmountDueReceived(t *testing.T) {
	d := decimal.RequireFromString
	for _, tc := range []struct {
		received string
		want     bool
	}{{"0", false}, {"12.49", false}, {"12.50", true}, {"13", true}} {
		o := Order{PaymentAmount: d("12.50"), AmountReceived: d(tc.received)}
		assert.Equal(t, tc.want, o.AmountDueReceived(), tc.received)
	}
}
