package rates

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// Fixed is a Provider that always answers with the same price, dated now:
// for tests, and for running without network access. It answers every
// pair with that one price, so give it to code that asks for one pair
// only (XLM in USD).
type Fixed struct {
	price decimal.Decimal
	now   func() time.Time
}

// NewFixed returns a provider that quotes price. now is the clock
// (time.Now if nil).
func NewFixed(price decimal.Decimal, now func() time.Time) *Fixed {
	if now == nil {
		now = time.Now
	}
	return &Fixed{price: price, now: now}
}

// Rate returns the fixed price of base in quote, with Source "fixed". A
// price that is not positive is an error, as it would be from a live
// source, so a misconfigured fixed rate refuses orders instead of
// quoting nonsense.
func (f *Fixed) Rate(ctx context.Context, base, quote string) (models.Rate, error) {
	if err := ctx.Err(); err != nil {
		return models.Rate{}, err
	}
	if !f.price.IsPositive() {
		return models.Rate{}, fmt.Errorf("rates: fixed %s-%s price must be positive, got %s", base, quote, f.price)
	}
	return models.Rate{
		Base:   strings.ToUpper(base),
		Quote:  strings.ToUpper(quote),
		Price:  f.price,
		Source: "fixed",
		At:     f.now(),
	}, nil
}
