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
