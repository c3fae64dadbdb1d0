package models

import (
	"time"

	"github.com/shopspring/decimal"
)

// rateClockSkew is how far in the future a rate's timestamp may be and
// still be believed: a source's clock and ours are never quite in step.
const rateClockSkew = time.Minute

// Rate is an exchange rate as one source quoted it at one moment, used to
// price an order in an asset that is not pegged to the order's currency.
type Rate struct {
	Base  string // the asset priced: "XLM"
	Quote string // the currency it is priced in: "USD"
	// Price is how many Quote units one Base unit costs.
	Price decimal.Decimal
	// Source names where the rate came from, for operators and receipts:
	// "coinbase:XLM-USD", "fixed".
	Source string
	// At is when the source quoted the rate (or, if it gives no time,
	// when it was received).
	At time.Time
}

// FreshAt reports whether r may still price an order at now: it is no
// older than maxAge and not dated more than a minute into the future (a
// later date means a broken clock or a broken source, not a very fresh
// rate). A rate without a positive price is never fresh, so the zero Rate
// can't be mistaken for a quote.
func (r Rate) FreshAt(now time.Time, maxAge time.Duration) bool {
	if !r.Price.IsPositive() || r.At.IsZero() {
		return false
	}
	age := now.Sub(r.At)
	return age >= -rateClockSkew && age <= maxAge
}
