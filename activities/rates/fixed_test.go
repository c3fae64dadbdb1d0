package rates

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFixed(t *testing.T) {
	price := decimal.RequireFromString("0.1234567890123")
	r, err := NewFixed(price, fixedClock).Rate(context.Background(), "xlm", "USD")
	require.NoError(t, err)
	assert.Equal(t, "XLM", r.Base)
	assert.Equal(t, "USD", r.Quote)
	assert.True(t, price.Equal(r.Price))
	assert.Equal(t, "fixed", r.Source)
	assert.Equal(t, testNow, r.At)
	assert.True(t, r.FreshAt(testNow, 0))
}

func TestFixedErrors(t *testing.T) {
	for _, p := range []string{"0", "-1"} {
		t.Run("price "+p, func(t *testing.T) {
			_, err := NewFixed(decimal.RequireFromString(p), fixedClock).Rate(context.Background(), "XLM", "USD")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "positive")
		})
	}
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := NewFixed(decimal.NewFromInt(1), fixedClock).Rate(ctx, "XLM", "USD")
		assert.ErrorIs(t, err, context.Canceled)
	})
}
