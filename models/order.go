package models

import (
	"time"

	"github.com/shopspring/decimal"
)

// OrderStatus is where an order is in its life. The normal sequence is
// strictly linear: created → paid → ordered → shipped → delivered.
// cancelled and failed are final states off that line.
type OrderStatus string

// Order statuses.
const (
	OrderCreated   OrderStatus = "created"   // waiting for payment
	OrderPaid      OrderStatus = "paid"      // payment confirmed
	OrderOrdered   OrderStatus = "ordered"   // product sourced from the marketplace
	OrderShipped   OrderStatus = "shipped"   // in transit
	OrderDelivered OrderStatus = "delivered" // arrived
	OrderCancelled OrderStatus = "cancelled" // not paid in time, or cancelled by an operator before payment
	OrderFailed    OrderStatus = "failed"    // could not be fulfilled after payment; the payment is due back
)

// OrderSteps are the tracking steps, in order.
var OrderSteps = []OrderStatus{OrderCreated, OrderPaid, OrderOrdered, OrderShipped, OrderDelivered}

// Final reports whether no further transition can happen.
func (s OrderStatus) Final() bool {
	return s == OrderDelivered || s == OrderCancelled || s == OrderFailed
}

// Valid reports whether s is a known status.
func (s OrderStatus) Valid() bool {
	switch s {
	case OrderCreated, OrderPaid, OrderOrdered, OrderShipped, OrderDelivered, OrderCancelled, OrderFailed:
		return true
	}
	return false
}

// stepIndex returns the position of s in OrderSteps, or -1.
func stepIndex(s OrderStatus) int {
	for i, st := range OrderSteps {
		if st == s {
			return i
		}
	}
	return -1
}

// StepReached reports whether an order at status has reached step on the
// normal line (created → … → delivered). Cancelled and failed reach nothing
// beyond where they left the line, so they report false.
func StepReached(status, step OrderStatus) bool {
	i, j := stepIndex(status), stepIndex(step)
	return i >= 0 && j >= 0 && i >= j
}

// CanTransition reports whether an order may move from one status to
// another: one step forward along the line; cancelled only from created;
// failed from any paid-but-not-delivered state.
func CanTransition(from, to OrderStatus) bool {
	switch to {
	case OrderCancelled:
		return from == OrderCreated
	case OrderFailed:
		return from == OrderPaid || from == OrderOrdered || from == OrderShipped
	}
	i, j := stepIndex(from), stepIndex(to)
	return i >= 0 && j == i+1
}

// PaymentStatus describes the money side of an order.
type PaymentStatus string

// Payment statuses.
const (
	PaymentPending   PaymentStatus = "pending"    // nothing received yet
	PaymentPartial   PaymentStatus = "partial"    // some received; more expected before the deadline
	PaymentConfirmed PaymentStatus = "confirmed"  // the full amount received
	PaymentOverpaid  PaymentStatus = "overpaid"   // confirmed, and more than the amount received; the excess is owed back
	PaymentExpired   PaymentStatus = "expired"    // deadline passed with nothing received
	PaymentRefundDue PaymentStatus = "refund_due" // money received that must go back (underpaid then expired, cancelled, or fulfilment failed)
	PaymentRefunded  PaymentStatus = "refunded"   // an operator sent the refund
	PaymentCancelled PaymentStatus = "cancelled"  // cancelled before anything was received
	// PaymentProcessing is shown to clients, never stored: a payment was
	// seen and is being credited (Order.PendingCredit). Do not pay again.
	PaymentProcessing PaymentStatus = "processing"
)

// ShownPaymentStatus is the payment status a client reads: the stored one,
// except that an order waiting for payment with money seen but not yet
// credited is "processing", so a client polling right then never reads
// "nothing received" and asks the payer to pay twice.
func (o Order) ShownPaymentStatus() PaymentStatus {
	if o.Status == OrderCreated && o.PendingCredit.IsPositive() &&
		(o.PaymentStatus == PaymentPending || o.PaymentStatus == PaymentPartial) {
		return PaymentProcessing
	}
	return o.PaymentStatus
}

// Step is one tracking step: reached or not, and when.
type Step struct {
	Name      OrderStatus
	Completed bool
	At        *time.Time
}

// ShippingAddress is where the order goes.
type ShippingAddress struct {
	Name       string
	Phone      string
	Line1      string
	Line2      string
	City       string
	Region     string
	PostalCode string
	Country    string
}

// Shipment is what the carrier side knows once the order ships.
type Shipment struct {
	Carrier           string
	TrackingNumber    string
	EstimatedDelivery string // YYYY-MM-DD
}

// Order is a purchase of a cart, paid in a crypto asset.
type Order struct {
	ID            string
	Number        string
	AccountID     string
	Mode          Mode
	CartID        string
	Status        OrderStatus
	PaymentStatus PaymentStatus
	CustomerEmail string
	Address       ShippingAddress
	Currency      string
	Total         decimal.Decimal

	PaymentAsset     string
	PaymentAmount    decimal.Decimal
	PaymentAddress   string
	PaymentMemo      string
	PaymentExpiresAt time.Time
	AmountReceived   decimal.Decimal
	// AmountRefunded is what the service's refunds of the order's own
	// money returned in its asset: sent, or settled another way
	// (RefundsSettledIn).
	AmountRefunded decimal.Decimal
	// PendingCredit is what payments seen for this order but not yet
	// credited by its workflow add up to (read for clients only, while
	// the order waits for payment): PendingCredit(o).
	PendingCredit decimal.Decimal
	// Payments are the payments seen for the order, oldest first, with
	// what became of each (read for clients only; nil otherwise).
	Payments []OrderPayment

	// What a payer's wallet needs beyond the contract's fields.
	PaymentNetwork     string // "pubnet", "testnet", or "sandbox" in test mode
	PaymentAssetIssuer string // empty for XLM
	PaymentMemoType    string // "text"
	PaymentURI         string // SEP-0007 web+stellar:pay link

	// The exchange rate locked for the payment window, when the asset is
	// not quoted 1:1 (XLM): its price in the order's currency, source and
	// when it was taken.
	RatePrice  decimal.Decimal
	RateSource string
	RateAt     *time.Time

	RefundedAt *time.Time
	RefundTx   string
	// RefundDestination is where the client asked money owed back to go
	// (POST /v1/orders refund_destination, or set later); nil when not
	// given. Refunds created for the order start with it.
	RefundDestination *RefundDestination

	// SupplierBudget is the most the buying provider may spend on the
	// order (items, shipping and tax at the retailer), fixed when the order
	// is created: see OrderBudget.
	SupplierBudget decimal.Decimal
	// StatusReason says why the order was cancelled or failed.
	StatusReason string
	// Cancellation says why a cancelled order was cancelled; empty
	// otherwise.
	Cancellation CancellationReason
	// Metadata is the client's own: the cart's, with the order request's
	// merged over it (MergeMetadata); nil when none.
	Metadata map[string]string
	// Fulfilment is the latest snapshot from the buying provider; nil until
	// the order is placed with one.
	Fulfilment *Fulfilment

	Items    []CartItem
	Shipment Shipment
	Steps    map[OrderStatus]time.Time // when each reached step was reached

	// WorkflowStartedAt is nil until the order's workflow is known to exist.
	WorkflowStartedAt *time.Time

	CreatedAt time.Time
	UpdatedAt time.Time
}

// TrackingSteps returns the contract's step list in order: each reached step
// completed with its time, the rest not completed.
func (o Order) TrackingSteps() []Step {
	out := make([]Step, len(OrderSteps))
	for i, name := range OrderSteps {
		out[i] = Step{Name: name}
		if at, ok := o.Steps[name]; ok {
			at := at
			out[i].Completed, out[i].At = true, &at
		}
	}
	return out
}

// WorkflowID returns the id of the Temporal workflow carrying the order.
// It is derived from the order id so anyone holding one can find the other,
// and so starting it twice is refused by Temporal itself.
func WorkflowID(orderID string) string { return "order-" + orderID }

// OrderRequest asks a store to create the order for a cart exactly once:
// the caller, its idempotency key (may be empty), a hash of the normalised
// request so a replay can be told from a different request, and how to
// build the order from the cart once it is locked.
type OrderRequest struct {
	AccountID      string
	Mode           Mode
	CartID         string
	IdempotencyKey string
	RequestHash    string
	Now            time.Time
	// Build turns the locked, usable cart into the order to insert. It runs
	// inside the transaction and must not do I/O.
	Build func(cart Cart) (Order, error)
	// NewNumber mints an order number; called again on the rare collision.
	NewNumber func() (string, error)
	// EventsRecorded, if set, is told after the commit how many webhook
	// events the new order's transaction recorded: none when no endpoint
	// of the account subscribes, and then nothing needs dispatching.
	EventsRecorded func(n int)
}

// DefaultPaymentWindow is how long a payer has to pay a new order.
const DefaultPaymentWindow = 30 * time.Minute

// TransitionEffect is what writing a Transition over an order changes.
type TransitionEffect struct {
	// Status is set when the order moves to a new status; Reason and
	// Cancellation then go with it (may be empty).
	Status       OrderStatus
	Reason       string
	Cancellation CancellationReason
	// Payment is true when the payment status and amount received are
	// replaced by the transition's.
	Payment bool
	// Shipment is the carrier's news to store, if any.
	Shipment *Shipment
	// Step is true when the transition's status is recorded as a reached
	// step (keeping the first timestamp of a step already reached).
	Step bool
}

// Changes reports whether the effect writes anything to the order row.
func (e TransitionEffect) Changes() bool {
	return e.Status != "" || e.Payment || e.Shipment != nil
}

// ApplyTransition decides what writing t over an order at status with
// received money changes. Writes come from idempotent activities, possibly
// retried and reordered between the workflow's payment and fulfilment
// activities, so:
//   - the status only moves along CanTransition, never backwards;
//   - payment fields only move towards more money received; with the same
//     amount they follow a status write (refund_due when an order fails);
//   - a step is recorded when its status is current or just reached, and
//     keeps the first timestamp it was recorded with.
func ApplyTransition(status OrderStatus, received decimal.Decimal, t Transition) TransitionEffect {
	var e TransitionEffect
	moves := t.Status != status && CanTransition(status, t.Status)
	if moves {
		e.Status, e.Reason = t.Status, t.Reason
		if t.Status == OrderCancelled {
			e.Cancellation = t.Cancellation
			if !e.Cancellation.Valid() {
				e.Cancellation = legacyCancellation(t.Reason)
			}
		}
	}
	current := t.Status == status || moves
	if t.PaymentStatus != "" && (t.AmountReceived.GreaterThan(received) || t.AmountReceived.Equal(received) && current) {
		e.Payment = true
	}
	e.Shipment = t.Shipment
	e.Step = current
	return e
}
