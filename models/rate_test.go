package models

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
)

func TestRateFreshAt(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	price := decimal.RequireFromString("0.1234")
	maxAge := 5 * time.Minute
	tests := []struct {
		name  string
		price decimal.Decimal
		at    time.Time
		want  bool
	}{
		{"just quoted", price, now, true},
		{"within max age", price, now.Add(-4 * time.Minute), true},
		{"exactly max age", price, now.Add(-maxAge), true},
		{"just past max age", price, now.Add(-maxAge - time.Nanosecond), false},
		{"hours old", price, now.Add(-3 * time.Hour), false},
		{"slightly in the future (clock skew)", price, now.Add(30 * time.Second), true},
		{"a minute in the future", price, now.Add(time.Minute), true},
		{"too far in the future", price, now.Add(time.Minute + time.Nanosecond), false},
		{"zero time", price, time.Time{}, false},
		{"zero price", decimal.Zero, now, false},
		{"zero value price", decimal.Decimal{}, now, false},
		{"negative price", price.Neg(), now, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Rate{Base: "XLM", Quote: "USD", Price: tc.price, Source: "fixed", At: tc.at}
			assert.Equal(t, tc.want, r.FreshAt(now, maxAge))
		})
	}
	assert.False(t, Rate{}.FreshAt(now, 100*365*24*time.Hour), "the zero Rate is never fresh")
}

func TestRateFreshAtOtherTimeZone(t *testing.T) {
	// Freshness compares instants, so the source's time zone is irrelevant.
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := now.Add(-time.Minute).In(time.FixedZone("UTC+9", 9*3600))
	r := Rate{Price: decimal.RequireFromString("0.1"), At: at}
	assert.True(t, r.FreshAt(now, 2*time.Minute))
	assert.False(t, r.FreshAt(now, 30*time.Second))
}
