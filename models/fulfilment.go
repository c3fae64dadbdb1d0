package models

import (
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// FulfilmentStage is where the buying provider's order is, before parcels
// come into it: still being bought, bought, or refused for good.
type FulfilmentStage string

// Fulfilment stages.
const (
	FulfilmentPending FulfilmentStage = "pending" // accepted by the provider, not yet bought at the retailer
	FulfilmentPlaced  FulfilmentStage = "placed"  // bought: the retailer has the order
	FulfilmentFailed  FulfilmentStage = "failed"  // refused or cancelled for good; nothing will ship
)

// ParcelStatus is a shipment's state in the carrier vocabulary every
// provider's is mapped to (see shared/reference/marketplaces.md).
type ParcelStatus string

// Parcel statuses, from least to most advanced; undeliverable is final.
const (
	ParcelPending       ParcelStatus = "pending"       // label created, not yet moving
	ParcelInTransit     ParcelStatus = "in_transit"    // moving, out for delivery included
	ParcelDelivered     ParcelStatus = "delivered"     // arrived
	ParcelUndeliverable ParcelStatus = "undeliverable" // failed, returned to sender
)

// Checkpoint is one carrier scan of a parcel.
type Checkpoint struct {
	At      time.Time
	Status  string
	Message string
	City    string
	State   string
	Country string
	Zip     string
}

// Parcel is one shipment of an order, as the provider reports it. An order
// bought from several sellers arrives in several parcels.
type Parcel struct {
	Carrier        string
	TrackingNumber string
	TrackingURL    string
	Status         ParcelStatus
	// EstimatedDelivery is the provider's destination-local date
	// (YYYY-MM-DD), empty until known. It is never computed here.
	EstimatedDelivery string
	Checkpoints       []Checkpoint // most recent first
}

// SupplierPrice is what the buying provider charged for the order: our
// cost, for operators; never shown to API clients.
type SupplierPrice struct {
	Currency string
	Subtotal decimal.Decimal
	Tax      decimal.Decimal
	Shipping decimal.Decimal
	Discount decimal.Decimal
	Fees     decimal.Decimal
	Total    decimal.Decimal
	// Breakdown is false when only Total is meaningful.
	Breakdown bool
}

// Fulfilment is a snapshot of an order at its buying provider: what a
// fulfiller's Check returns and what the store keeps for operators and
// clients.
type Fulfilment struct {
	// Ref is the provider's order id.
	Ref   string
	Stage FulfilmentStage
	// ProviderStatus is the provider's own word for the order's state
	// (order_placed, cancelled_by_retailer...), for operators.
	ProviderStatus   string
	MerchantOrderIDs []string
	Price            *SupplierPrice
	Parcels          []Parcel
	// FailureCode is the provider's machine-readable reason when Stage is
	// failed (an error type such as product_out_of_stock, or a status such
	// as cancelled_by_retailer); FailureReason the sentence a client reads.
	FailureCode   string
	FailureReason string
	// Retryable marks a failure that placing the order again may cure (the
	// retailer was rate limiting or briefly down): nothing was bought.
	Retryable bool
	// WatchWrote is set by a watch that writes the steps this snapshot
	// shows on the behalf of a run from before watch-reports, before it
	// writes them: until a later check stores a snapshot, the workflow may
	// not have heard of them (a lost attempt), and the next watch reports
	// them (activities/watch_legacy.go).
	WatchWrote bool `json:",omitempty"`
}

// Progress is what the order workflow needs from a fulfilment check: where
// the order should now be, and when to look again. It is small on purpose:
// it is recorded in the workflow's history on every check.
type Progress struct {
	// Status is the order status the fulfilment has reached: paid (still
	// being bought), ordered, shipped, delivered or failed.
	Status OrderStatus
	// Reason is the client-readable failure reason when Status is failed.
	Reason string
	// Shipment is what the order's tracking shows (the least advanced
	// parcel); zero before the order ships.
	Shipment Shipment
	// NextCheck is how long the fulfiller advises waiting before checking
	// again; zero leaves it to the workflow's default.
	NextCheck time.Duration
	// Retry is set with Status failed when placing the order again may
	// succeed (see Fulfilment.Retryable).
	Retry bool
	// Recorded is the last of the transitions a watch wrote for this
	// progress on the behalf of a run from before watch-reports
	// (activities/watch_legacy.go); nil otherwise: the workflow writes.
	Recorded *Transition `json:",omitempty"`
}

// Transitions returns the writes that take an order written as from to
// the progress p, each at at: one per step p has reached and from has
// not, in order (a check may find the order both bought and shipped),
// with from's payment fields; the shipment is taken at the step shipped,
// and a shipment that differs once shipped (a new estimated delivery
// date) is one more write. Progress behind from, a failure and an order
// off the steps (cancelled, failed) take none: failing an order, or
// placing it again, is its workflow's decision.
func (p Progress) Transitions(from Transition, at time.Time) []Transition {
	if p.Status == OrderFailed || stepIndex(from.Status) < 0 {
		return nil
	}
	shipped := p.Shipment != (Shipment{}) && StepReached(p.Status, OrderShipped)
	var out []Transition
	t := from
	t.At = at
	for _, step := range OrderSteps {
		if StepReached(t.Status, step) || !StepReached(p.Status, step) {
			continue
		}
		if step == OrderShipped && shipped {
			s := p.Shipment
			t.Shipment = &s
		}
		t.Status, t.Reason = step, ""
		out = append(out, t)
	}
	if shipped && StepReached(t.Status, OrderShipped) && (t.Shipment == nil || *t.Shipment != p.Shipment) {
		s := p.Shipment
		t.Shipment = &s
		out = append(out, t)
	}
	return out
}

// News reports whether p tells an order at status, with shipment,
// anything its workflow acts on: a failure of an order not failed, a step
// the order has not reached, or, once both are shipped, another shipment
// (a new estimated delivery date). Progress behind the order is no news.
func (p Progress) News(status OrderStatus, shipment Shipment) bool {
	if p.Status == OrderFailed {
		return status != OrderFailed
	}
	if !StepReached(status, p.Status) {
		return true
	}
	return StepReached(p.Status, OrderShipped) && StepReached(status, OrderShipped) &&
		p.Shipment != (Shipment{}) && p.Shipment != shipment
}

// Progress maps a fulfilment snapshot to the order's progress:
//   - a failed fulfilment, or any undeliverable parcel, is failed;
//   - still pending at the provider is paid;
//   - placed without parcels, or with a parcel still waiting for its
//     carrier (label created, no tracking number), is ordered;
//   - every parcel delivered is delivered;
//   - otherwise shipped, and the tracking shows the least advanced parcel.
//
// NextCheck is left zero: it is the fulfiller's to advise.
func (f Fulfilment) Progress() Progress {
	if f.Stage == FulfilmentFailed {
		return Progress{Status: OrderFailed, Reason: failureReasonOr(f.FailureReason, f.FailureCode), Retry: f.Retryable}
	}
	for _, p := range f.Parcels {
		if p.Status == ParcelUndeliverable {
			return Progress{Status: OrderFailed, Reason: FulfilmentFailureReason("undeliverable")}
		}
	}
	if f.Stage != FulfilmentPlaced {
		return Progress{Status: OrderPaid}
	}
	if len(f.Parcels) == 0 {
		return Progress{Status: OrderOrdered}
	}
	least := f.leastAdvanced()
	if least.TrackingNumber == "" {
		return Progress{Status: OrderOrdered}
	}
	s := Shipment{Carrier: least.Carrier, TrackingNumber: least.TrackingNumber, EstimatedDelivery: least.EstimatedDelivery}
	if least.Status == ParcelDelivered {
		return Progress{Status: OrderDelivered, Shipment: s}
	}
	return Progress{Status: OrderShipped, Shipment: s}
}

// leastAdvanced returns the parcel furthest from the door; among equals the
// first listed, so the answer is stable.
func (f Fulfilment) leastAdvanced() Parcel {
	rank := func(p Parcel) int {
		if p.TrackingNumber == "" {
			return -1 // not even handed to a carrier
		}
		return slices.Index([]ParcelStatus{ParcelPending, ParcelInTransit, ParcelDelivered}, p.Status)
	}
	least := f.Parcels[0]
	for _, p := range f.Parcels[1:] {
		if rank(p) < rank(least) {
			least = p
		}
	}
	return least
}

// fulfilmentFailureReasons are the sentences a client reads in an order's
// failure_reason, by the provider's failure code. Codes are the buying
// provider's error types and terminal statuses, grouped by what the
// customer can make of them; the money is due back in every case.
var fulfilmentFailureReasons = map[string]string{
	// product
	"product_not_found":            "The product no longer exists at the retailer.",
	"product_out_of_stock":         "The product went out of stock at the retailer before it could be bought.",
	"product_unavailable":          "The product is no longer available at the retailer.",
	"invalid_product_url":          "The product link could not be bought from.",
	"product_variant_required":     "The product needs a size, colour or other option to be chosen.",
	"product_variant_unavailable":  "The chosen option of the product is no longer available.",
	"product_quantity_unavailable": "The retailer does not have the quantity ordered.",
	"quantity_limit_exceeded":      "The retailer limits how many of this product one order may buy.",
	"order_limit_exceeded":         "The retailer limits how many of this product one order may buy.",
	// price
	"max_price_exceeded": "The retailer's price rose above what was paid for the order.",
	// shipping
	"shipping_address_invalid":    "The retailer refused the shipping address.",
	"shipping_unavailable":        "The retailer does not ship this product to the address.",
	"shipping_method_unavailable": "The retailer does not ship this product to the address.",
	"undeliverable":               "The carrier could not deliver the parcel.",
	// retailer
	"cancelled_by_retailer":  "The retailer cancelled the order.",
	"retailer_not_supported": "The product cannot be bought from this retailer.",
	"cancelled":              "The purchase was cancelled before it was completed.",
}

// FulfilmentFailureReason returns the client-readable sentence for a
// provider failure code; an unknown code gets a generic sentence rather
// than the provider's own words, which are not written for customers.
func FulfilmentFailureReason(code string) string {
	if r, ok := fulfilmentFailureReasons[code]; ok {
		return r
	}
	return "The retailer could not complete the purchase."
}

func failureReasonOr(reason, code string) string {
	if reason != "" {
		return reason
	}
	return FulfilmentFailureReason(code)
}

// Placement is what placing an order with a buying provider returns: the
// provider's order reference and how long to wait before the first check.
type Placement struct {
	Ref        string
	CheckAfter time.Duration
}

// PollSchedule is how often a fulfiller advises checking an order, by how
// far it has come. Zero durations fall back to Default.
type PollSchedule struct {
	First   time.Duration // after placing the order
	Pending time.Duration // while the provider is still buying
	Ordered time.Duration // bought, waiting for tracking numbers
	Shipped time.Duration // in transit, waiting for delivery
}

// Next returns how long to wait before checking an order that has reached
// status.
func (s PollSchedule) Next(status OrderStatus) time.Duration {
	var d time.Duration
	switch status {
	case OrderPaid:
		d = s.Pending
	case OrderOrdered:
		d = s.Ordered
	case OrderShipped:
		d = s.Shipped
	}
	if d <= 0 {
		d = s.Pending
	}
	return d
}

// FulfilmentEvent is a buying provider's webhook delivery, verified: which
// order it is about. It is a hint to check the order, never the truth
// about it.
type FulfilmentEvent struct {
	EventID string // the provider's id of the event, if it has one
	Ref     string // the provider's order id
	OrderID string // our order id, from the metadata we placed the order with
	// NoNews says the event cannot change what the order's workflow acts
	// on (the provider started buying, a return): it is not handed over,
	// sparing the workflow a signal and a check.
	NoNews bool
}
