package models

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildOrder(t *testing.T) {
	d := decimal.RequireFromString
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	cart := Cart{ID: "crt_1", ShipToCountry: "US", Status: CartReady,
		Quote: Quote{Currency: "USD", Subtotal: d("100.00"), Shipping: d("5.99"), Tax: d("8.74"), ServiceFee: d("3.00"), Total: d("117.73")}}
	addr := ShippingAddress{Name: "Ada Lovelace", Phone: "+1 415 555 0100", Line1: "1 Market St", City: "San Francisco", Region: "CA", PostalCode: "94107", Country: "US"}
	usdc, err := LookupAsset("USDC")
	require.NoError(t, err)
	xlm, err := LookupAsset("XLM")
	require.NoError(t, err)
	terms := func(mut func(*OrderTerms)) OrderTerms {
		t := OrderTerms{ID: "ord_1", AccountID: "acc_1", Mode: ModeLive, Email: "ada@example.com", Asset: usdc, Address: addr,
			PayTo: "GPAYTO", Network: "pubnet", USDCIssuer: "GISSUER", Now: now, Window: 30 * time.Minute}
		if mut != nil {
			mut(&t)
		}
		return t
	}

	t.Run("USDC is the total, 1:1", func(t *testing.T) {
		o, err := BuildOrder(cart, terms(nil))
		require.NoError(t, err)
		assert.Equal(t, OrderCreated, o.Status)
		assert.Equal(t, PaymentPending, o.PaymentStatus)
		assert.True(t, d("117.73").Equal(o.PaymentAmount))
		assert.Equal(t, "GISSUER", o.PaymentAssetIssuer)
		assert.Equal(t, now.Add(30*time.Minute), o.PaymentExpiresAt)
		assert.True(t, d("114.73").Equal(o.SupplierBudget), "subtotal+shipping+tax, no service fee: %s", o.SupplierBudget)
		assert.Equal(t, "crt_1", o.CartID)
		assert.Nil(t, o.RateAt)
	})
	t.Run("test mode needs no phone", func(t *testing.T) {
		_, err := BuildOrder(cart, terms(func(t *OrderTerms) { t.Mode, t.Address.Phone = ModeTest, "" }))
		require.NoError(t, err)
	})
	t.Run("XLM at the locked rate", func(t *testing.T) {
		rate := Rate{Base: "XLM", Quote: "USD", Price: d("0.25"), Source: "coinbase", At: now.Add(-10 * time.Second)}
		o, err := BuildOrder(cart, terms(func(t *OrderTerms) { t.Asset, t.Rate = xlm, &rate }))
		require.NoError(t, err)
		assert.True(t, d("470.92").Equal(o.PaymentAmount), "117.73 / 0.25 = %s", o.PaymentAmount)
		assert.Empty(t, o.PaymentAssetIssuer)
		require.NotNil(t, o.RateAt)
		assert.Equal(t, rate.At, *o.RateAt)
	})

	failures := []struct {
		name  string
		cart  Cart
		mut   func(*OrderTerms)
		code  Code
		field string
	}{
		{"another destination", cart, func(t *OrderTerms) { t.Address.Country = "CA" }, CodeInvalidAddress, "shipping_address.country"},
		{"one-word name", cart, func(t *OrderTerms) { t.Address.Name = "Ada" }, CodeInvalidAddress, "shipping_address.name"},
		{"live without a phone", cart, func(t *OrderTerms) { t.Address.Phone = "" }, CodeInvalidAddress, "shipping_address.phone"},
		{"rate in another currency", func() Cart { c := cart; c.Currency = "EUR"; return c }(), func(t *OrderTerms) {
			t.Asset, t.Rate = xlm, &Rate{Base: "XLM", Quote: "USD", Price: d("0.25"), At: now}
		}, CodeUnsupportedAsset, "payment_asset"},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildOrder(tc.cart, terms(tc.mut))
			var me *Error
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tc.code, me.Code)
			assert.Equal(t, tc.field, me.Field)
		})
	}
}
