package models

import (
	"time"

	"github.com/shopspring/decimal"
)

// Refund list bounds (GET /v1/refunds), as for orders.
const (
	DefaultRefundListLimit = DefaultOrderListLimit
	MaxRefundListLimit     = MaxOrderListLimit
)

// RefundListQuery selects a page of one account's refunds in one mode,
// newest first (created_at, then id, both descending), like
// OrderListQuery.
type RefundListQuery struct {
	AccountID string
	Mode      Mode
	// Status keeps refunds of that status only; empty keeps all.
	Status RefundStatus
	// OrderID keeps the refunds of that order only; empty keeps all.
	OrderID string
	// CreatedGTE and CreatedLTE bound the creation time, inclusive.
	CreatedGTE, CreatedLTE *time.Time
	// StartingAfter is the id of the last refund of the previous page. An
	// id that is not one of the account's refunds in this mode is
	// ErrRefundNotFound.
	StartingAfter string
	// Limit is the page size, 1 to MaxRefundListLimit.
	Limit int
}

// RefundValue is what refund r is worth in order o's currency, at the
// rate the order was priced at (its total over its payment amount),
// rounded to the cent; false when that rate does not apply: a refund in
// another asset than the order's (a wrong-asset payment) or of no order.
// The operator's approval limits compare against it.
func RefundValue(o Order, r Refund) (decimal.Decimal, bool) {
	if r.OrderID == "" || r.OrderID != o.ID || r.Asset != o.PaymentAsset || !o.PaymentAmount.IsPositive() {
		return decimal.Zero, false
	}
	return r.Amount.Mul(o.Total).Div(o.PaymentAmount).Round(2), true
}

// RefundWorkflowID is the id of a refund's Refund workflow: one run per
// refund.
func RefundWorkflowID(refundID string) string { return "refund-" + refundID }
