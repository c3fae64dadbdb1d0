package models

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
)

func TestRefundValue(t *testing.T) {
	o := Order{ID: "ord_1", Total: decimal.RequireFromString("50.00"), PaymentAsset: "XLM", PaymentAmount: decimal.RequireFromString("400")}
	cases := []struct {
		name string
		r    Refund
		want string
		ok   bool
	}{
		{"at the order's rate", Refund{OrderID: "ord_1", Asset: "XLM", Amount: decimal.RequireFromString("100")}, "12.5", true},
		{"rounded to the cent", Refund{OrderID: "ord_1", Asset: "XLM", Amount: decimal.RequireFromString("0.0333333")}, "0", true},
		{"another asset", Refund{OrderID: "ord_1", Asset: "USDC", Amount: decimal.RequireFromString("100")}, "0", false},
		{"no order", Refund{Asset: "XLM", Amount: decimal.RequireFromString("100")}, "0", false},
		{"another order", Refund{OrderID: "ord_2", Asset: "XLM", Amount: decimal.RequireFromString("100")}, "0", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, ok := RefundValue(o, c.r)
			assert.Equal(t, c.ok, ok)
			assert.True(t, v.Equal(decimal.RequireFromString(c.want)), v.String())
		})
	}
}

func TestRefundsSettledInAndAmountDueBack(t *testing.T) {
	refunds := []Refund{
		{Asset: "USDC", Amount: decimal.RequireFromString("10"), Status: RefundSent, Reason: RefundOrderFailed},
		{Asset: "USDC", Amount: decimal.RequireFromString("2.5"), Status: RefundCancelled, Reason: RefundOverpaid},
		{Asset: "USDC", Amount: decimal.RequireFromString("4"), Status: RefundSending, Reason: RefundOrderFailed},
		{Asset: "XLM", Amount: decimal.RequireFromString("40"), Status: RefundSent, Reason: RefundOrderFailed},
		// A payment's own refund settles by marking its payment refunded.
		{Asset: "USDC", Amount: decimal.RequireFromString("3"), Status: RefundSent, Reason: RefundLatePayment},
	}
	assert.Equal(t, "12.5", RefundsSettledIn(refunds, "USDC").String(), "the order's money sent and cancelled, in the asset only")

	o := Order{Status: OrderFailed, PaymentAsset: "USDC", PaymentAmount: decimal.RequireFromString("20"), AmountReceived: decimal.RequireFromString("20")}
	assert.Equal(t, "20", AmountDueBack(o).String())
	o.AmountRefunded = decimal.RequireFromString("12.5")
	assert.Equal(t, "7.5", AmountDueBack(o).String(), "less what the refunds returned")
	o.AmountRefunded = decimal.RequireFromString("25")
	assert.Equal(t, "0", AmountDueBack(o).String(), "never below zero")
}
