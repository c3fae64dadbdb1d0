package models

import (
	"time"

	"github.com/shopspring/decimal"
)

// OpsSnapshot is what an operator on call watches of the money and the
// work, as of At, per mode: the refunds by status, the oldest waiting in
// each unsettled status and what they owe; the unmatched payments; the
// orders stuck (StuckAfter); the webhook endpoints disabled and the events
// not dispatched yet.
type OpsSnapshot struct {
	At    time.Time
	Modes map[Mode]*ModeOps
}

// ModeOps is one mode's part of an OpsSnapshot.
type ModeOps struct {
	Refunds       map[RefundStatus]int
	RefundsOldest map[RefundStatus]time.Time // last move of the oldest, unsettled statuses only
	RefundsOwed   map[string]decimal.Decimal // by asset: unsettled refunds' amounts
	Unmatched     int
	UnmatchedOwed map[string]decimal.Decimal // by asset
	// UnmatchedOldest is when the oldest unmatched payment was stored;
	// zero without one.
	UnmatchedOldest   time.Time
	OrdersStuck       map[OrderStatus]int
	EndpointsDisabled int
	EventsWaiting     int
	// EventsOldestWaiting is when the oldest event not dispatched yet was
	// recorded; zero without one.
	EventsOldestWaiting time.Time
}

// Mode returns the snapshot's part for m, made on first use.
func (s *OpsSnapshot) Mode(m Mode) *ModeOps {
	if s.Modes == nil {
		s.Modes = map[Mode]*ModeOps{}
	}
	if s.Modes[m] == nil {
		s.Modes[m] = &ModeOps{
			Refunds: map[RefundStatus]int{}, RefundsOldest: map[RefundStatus]time.Time{},
			RefundsOwed: map[string]decimal.Decimal{}, UnmatchedOwed: map[string]decimal.Decimal{},
			OrdersStuck: map[OrderStatus]int{},
		}
	}
	return s.Modes[m]
}

// StuckGrace is how long past its payment deadline an order may still
// await payment: its workflow expires it at the deadline, so one still
// created after this has a workflow that is not running.
const StuckGrace = 15 * time.Minute

// StuckAfter is how long an order may stay in status without a write
// before it counts as stuck: what the service promises, with a margin. A
// paid order is placed with its buying provider within minutes; a
// retailer ships within days and a carrier delivers within weeks.
// Created is measured from its payment deadline (StuckGrace); final
// statuses never stick.
func StuckAfter(status OrderStatus) (time.Duration, bool) {
	switch status {
	case OrderCreated:
		return StuckGrace, true
	case OrderPaid:
		return time.Hour, true
	case OrderOrdered:
		return 7 * 24 * time.Hour, true
	case OrderShipped:
		return 30 * 24 * time.Hour, true
	}
	return 0, false
}

// OpenStatuses are the order statuses StuckAfter watches, in order: every
// tracking step but the last.
var OpenStatuses = OrderSteps[:len(OrderSteps)-1]
