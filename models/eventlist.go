package models

import "time"

// Event list bounds (GET /v1/events), as the order list's.
const (
	DefaultEventListLimit = DefaultOrderListLimit
	MaxEventListLimit     = MaxOrderListLimit
)

// DefaultEventRetention is how long events are kept for the events API
// when MEMOCART_EVENT_RETENTION does not say: the 30 days a client may
// take to notice it missed webhooks and catch up.
const DefaultEventRetention = 30 * 24 * time.Hour

// EventListQuery selects a page of one account's events in one mode,
// newest first in the order they were committed (not by CreatedAt, the
// fact's own time): an event committed after a page was read always
// comes before that page's first, so a client catching up with
// EndingBefore from the newest event it saw misses none.
type EventListQuery struct {
	AccountID string
	Mode      Mode
	// Types keeps events of these types only; empty keeps all.
	Types []EventType
	// OrderID keeps the events of that order only.
	OrderID string
	// CreatedGTE and CreatedLTE bound the fact's time (the body's
	// created_at), inclusive; nil is unbounded.
	CreatedGTE, CreatedLTE *time.Time
	// StartingAfter is the id of the last event of the previous page: the
	// page holds the events committed before it. EndingBefore is the id of
	// the first event of the previous page (or the newest one a client
	// saw): the page holds the Limit events committed after it that are
	// nearest to it, still newest first. At most one is set; an id that
	// is not one of the account's events in this mode is
	// ErrEventNotFound.
	StartingAfter, EndingBefore string
	// Limit is the page size, 1 to MaxEventListLimit.
	Limit int
}
