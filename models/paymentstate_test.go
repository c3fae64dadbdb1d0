package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPaymentStateDueBack(t *testing.T) {
	for _, tc := range []struct {
		state PaymentState
		want  bool
	}{
		{PaymentStateReceived, false},
		{PaymentStateUnmatched, false},
		{PaymentStateMatched, false},
		{PaymentStateLate, true},
		{PaymentStateRefundDue, true},
		{PaymentStateRefunded, false},
	} {
		assert.Equal(t, tc.want, tc.state.DueBack(), tc.state)
	}
}

// Only an unmatched payment is attached, and only to an existing order of
// its mode; the payment's state is judged first.
func TestCanAttachPayment(t *testing.T) {
	p := Payment{ID: "pay_1", Mode: ModeLive}
	live := &Order{ID: "ord_1", Number: "1234-5678-903", Mode: ModeLive}
	test := &Order{ID: "ord_2", Number: "1234-5678-911", Mode: ModeTest}
	for _, tc := range []struct {
		name  string
		state PaymentState
		order *Order
		want  string // the error, "" when allowed
	}{
		{"unmatched, same mode", PaymentStateUnmatched, live, ""},
		{"unmatched, other mode", PaymentStateUnmatched, test, "payment pay_1 is live mode, order 1234-5678-911 is test mode"},
		{"unmatched, no such order", PaymentStateUnmatched, nil, ErrOrderNotFound.Error()},
		{"matched already", PaymentStateMatched, live, "payment pay_1 is matched, not unmatched"},
		{"matched already, no such order", PaymentStateMatched, nil, "payment pay_1 is matched, not unmatched"},
		{"not through the matcher yet", PaymentStateReceived, live, "payment pay_1 is received, not unmatched"},
		{"late", PaymentStateLate, live, "payment pay_1 is late, not unmatched"},
		{"refunded", PaymentStateRefunded, live, "payment pay_1 is refunded, not unmatched: it is being refunded or was, and pays no order"},
		{"being refunded", PaymentStateRefundDue, live, "payment pay_1 is refund_due, not unmatched: it is being refunded or was, and pays no order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CanAttachPayment(p, tc.state, tc.order)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	assert.ErrorIs(t, CanAttachPayment(p, PaymentStateUnmatched, nil), ErrOrderNotFound)
}
