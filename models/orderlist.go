package models

import "time"

// Order list bounds (GET /v1/orders).
const (
	DefaultOrderListLimit = 10
	MaxOrderListLimit     = 100
)

// OrderListQuery selects a page of one account's orders in one mode,
// newest first (created_at, then id, both descending, so orders created
// in the same second keep one order and pages never skip or repeat one).
type OrderListQuery struct {
	AccountID string
	Mode      Mode
	// Status keeps orders of that status only; empty keeps all.
	Status OrderStatus
	// CreatedGTE and CreatedLTE bound the creation time, inclusive; nil is
	// unbounded.
	CreatedGTE, CreatedLTE *time.Time
	// StartingAfter is the id of the last order of the previous page; the
	// page starts with the order after it. Empty starts with the newest.
	// An id that is not one of the account's orders in this mode is
	// ErrOrderNotFound.
	StartingAfter string
	// Limit is the page size, 1 to MaxOrderListLimit.
	Limit int
}
