package models

import (
	"errors"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func requireAssetError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "want *Error, got %v", err)
	assert.Equal(t, CodeUnsupportedAsset, e.Code)
	assert.Equal(t, "payment_asset", e.Field)
	return e
}

func TestLookupAsset(t *testing.T) {
	tests := []struct {
		in       string
		wantCode string
	}{
		{"USDC", "USDC"},
		{"usdc", "USDC"},
		{" Usdc ", "USDC"},
		{"XLM", "XLM"},
		{"xlm", "XLM"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			a, err := LookupAsset(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.wantCode, a.Code)
			assert.Equal(t, int32(7), a.Decimals, "Stellar amounts have 7 decimal places")
			assert.NotEmpty(t, a.Description)
		})
	}
}

func TestLookupAssetUnknown(t *testing.T) {
	for _, in := range []string{"", " ", "BTC", "USD", "USDT", "usd c", "USDC:GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN"} {
		t.Run(in, func(t *testing.T) {
			a, err := LookupAsset(in)
			assert.Equal(t, Asset{}, a)
			e := requireAssetError(t, err)
			// The message tells the client what it may send instead.
			assert.Contains(t, e.Message, "USDC")
			assert.Contains(t, e.Message, "XLM")
		})
	}
}

func TestSupportedAssets(t *testing.T) {
	assert.Equal(t, []string{"USDC", "XLM"}, SupportedAssets())

	// Every listed code looks up, and the caller owns the slice.
	codes := SupportedAssets()
	for _, c := range codes {
		_, err := LookupAsset(c)
		assert.NoError(t, err, c)
	}
	codes[0] = "BTC"
	assert.Equal(t, "USDC", SupportedAssets()[0])
}

func TestQuoteAmount(t *testing.T) {
	usdc, err := LookupAsset("USDC")
	require.NoError(t, err)
	tests := []struct {
		name     string
		asset    Asset
		total    string
		currency string
		want     string
	}{
		{"whole cents", usdc, "17.24", "USD", "17.24"},
		{"integer", usdc, "100", "USD", "100"},
		{"already 7 places", usdc, "1.2345678", "USD", "1.2345678"},
		{"rounded up, never down", usdc, "1.23456781", "USD", "1.2345679"},
		{"rounded up from just above", usdc, "0.00000000001", "USD", "0.0000001"},
		{"lower-case currency", usdc, "5.00", "usd", "5.00"},
		{"hand-built asset uses the table's decimals", Asset{Code: "usdc", Decimals: 2}, "1.234", "USD", "1.234"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := QuoteAmount(tc.asset, decimal.RequireFromString(tc.total), tc.currency)
			require.NoError(t, err)
			assert.Truef(t, decimal.RequireFromString(tc.want).Equal(got), "want %s, got %s", tc.want, got)
		})
	}
}

func TestQuoteAmountNeedsExchangeRate(t *testing.T) {
	usdc, err := LookupAsset("USDC")
	require.NoError(t, err)
	xlm, err := LookupAsset("XLM")
	require.NoError(t, err)
	tests := []struct {
		name      string
		asset     Asset
		currency  string
		wantAlt   bool // the message suggests USDC
		wantInMsg string
	}{
		{"XLM for USD", xlm, "USD", true, "XLM"},
		{"XLM for EUR", xlm, "EUR", false, "EUR"},
		{"USDC for EUR", usdc, "EUR", false, "EUR"},
		{"USDC for GBP", usdc, "GBP", false, "GBP"},
		{"unknown asset", Asset{Code: "BTC", Decimals: 8}, "USD", true, "USDC"},
		{"zero asset", Asset{}, "USD", true, "USDC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := QuoteAmount(tc.asset, decimal.RequireFromString("10.00"), tc.currency)
			assert.True(t, got.IsZero())
			e := requireAssetError(t, err)
			assert.Contains(t, e.Message, tc.wantInMsg)
			if tc.wantAlt {
				assert.Contains(t, e.Message, "USDC")
			} else {
				assert.NotContains(t, e.Message, "use ")
			}
		})
	}
}

func TestQuoteAmountRejectsNonPositiveTotal(t *testing.T) {
	usdc, err := LookupAsset("USDC")
	require.NoError(t, err)
	for _, total := range []string{"0", "-0.01"} {
		t.Run(total, func(t *testing.T) {
			_, err := QuoteAmount(usdc, decimal.RequireFromString(total), "USD")
			require.Error(t, err)
			// A caller bug, not a client error: it must map to internal.
			assert.Equal(t, CodeInternal, CodeOf(err))
		})
	}
}

// TestAssetRules: XLM is the native asset and floats (an order in it
// locks a rate); USDC is pegged to the dollar and is not native.
func TestAssetRules(t *testing.T) {
	usdc, err := LookupAsset("usdc")
	require.NoError(t, err)
	xlm, err := LookupAsset("XLM")
	require.NoError(t, err)
	assert.False(t, usdc.Floating())
	assert.False(t, usdc.Native())
	assert.True(t, xlm.Floating())
	assert.True(t, xlm.Native())
}
