package models

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAmount(t *testing.T) {
	for _, s := range []string{"0", "12", "12.50", "0.0000001", "999999999999.9999999", "000012.5"} {
		d, err := ParseAmount(s, MaxPaymentDigits, MaxAmountDecimals)
		require.NoErrorf(t, err, "%q", s)
		assert.Truef(t, d.Equal(decimal.RequireFromString(s)), "%q read as %s", s, d)
	}
	for _, s := range []string{
		"", ".", "1.", ".5", "-1", "+1", "1e3", "1E+3", "1e400", " 1", "1 ", "1,5", "0x10", "NaN", "Infinity",
		"1234567890123", "1.12345678", "１２", strings.Repeat("0", 30) + "1", "\x001",
	} {
		_, err := ParseAmount(s, MaxPaymentDigits, MaxAmountDecimals)
		assert.Errorf(t, err, "%q must be refused", s)
	}
}

func TestValidID(t *testing.T) {
	id, err := NewID("ord", strings.NewReader(strings.Repeat("abcdefghij", 10)))
	require.NoError(t, err)
	assert.True(t, ValidID("ord", id))
	assert.False(t, ValidID("crt", id), "another kind's prefix")
	for _, s := range []string{"", "ord_", "ord", id + "x", id[:len(id)-1], id[:len(id)-1] + "_", id[:len(id)-1] + "\x00", "ORD" + id[3:]} {
		assert.Falsef(t, ValidID("ord", s), "%q", s)
	}
}
