package models

import "testing"

func TestDecideLatePayment(t *testing.T) {
	late := LatePayment{Late: true, OrderPaymentStatus: PaymentRefundDue}
	for _, tt := range []struct {
		name                                       string
		acknowledged, markedLate, recordedUncredit bool
		want                                       LatePayment
	}{
		{"never acknowledged: late, due back", false, false, false, late},
		{"acknowledged: counted, a second delivery", true, false, false, LatePayment{}},
		{"acknowledged as late before: late again, idempotent", true, true, false, late},
		{"recorded without credit: late although acknowledged", true, false, true, late},
	} {
		if got := DecideLatePayment(tt.acknowledged, tt.markedLate, tt.recordedUncredit); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
