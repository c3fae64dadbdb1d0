package models

import (
	"crypto/sha256"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// EventType names a kind of fact an account can subscribe its webhook
// endpoints to. Types are part of the public API: never renamed.
type EventType string

// Event types. The order ones follow the order's status; the payment ones
// say what a payment did to its order; the refund ones follow the money an
// order owes back.
const (
	EventOrderCreated   EventType = "order.created"
	EventOrderPaid      EventType = "order.paid"
	EventOrderOrdered   EventType = "order.ordered"
	EventOrderShipped   EventType = "order.shipped"
	EventOrderDelivered EventType = "order.delivered"
	EventOrderCancelled EventType = "order.cancelled"
	EventOrderFailed    EventType = "order.failed"
	// EventPaymentReceived: a payment was recorded against its order (once
	// per payment), credited or, in another asset, due back.
	EventPaymentReceived EventType = "payment.received"
	// EventPaymentPartial: the order's received amount grew but is still
	// short of the amount due.
	EventPaymentPartial EventType = "payment.partial"
	// EventPaymentOverpaid: the order's received amount grew beyond the
	// amount due; the excess is owed back.
	EventPaymentOverpaid EventType = "payment.overpaid"
	// EventPaymentLate: a payment reached its order after the order closed;
	// it is due back.
	EventPaymentLate EventType = "payment.late"
	// EventRefundCreated: the order owes money back and a refund of it was
	// created (once per refund).
	EventRefundCreated EventType = "refund.created"
	// EventRefundSent: a refund's money left, in the transaction the
	// refund names (once per refund: nothing leaves sent).
	EventRefundSent EventType = "refund.sent"
	// EventRefundFailed: a refund's payout was refused; the refund says
	// why. Each failure is its own fact: a refund given a new destination
	// may fail again.
	EventRefundFailed EventType = "refund.failed"

	// EventAll, in an endpoint's enabled events, subscribes it to every
	// type, including types added later.
	EventAll EventType = "*"
)

// EventTypes lists every event type, in documentation order.
var EventTypes = []EventType{
	EventOrderCreated, EventOrderPaid, EventOrderOrdered, EventOrderShipped, EventOrderDelivered,
	EventOrderCancelled, EventOrderFailed,
	EventPaymentReceived, EventPaymentPartial, EventPaymentOverpaid, EventPaymentLate,
	EventRefundCreated, EventRefundSent, EventRefundFailed,
}

// Valid reports whether t is a known event type (EventAll is not one).
func (t EventType) Valid() bool { return slices.Contains(EventTypes, t) }

// OrderEventType is the event of an order reaching status.
func OrderEventType(status OrderStatus) EventType { return EventType("order." + string(status)) }

// Event is one fact delivered to the webhook endpoints subscribed to its
// type. Its id is derived from the fact (EventID), so recording the same
// fact twice (a retried activity) stores one event.
type Event struct {
	ID        string
	Type      EventType
	AccountID string
	Mode      Mode
	OrderID   string
	PaymentID string // payment events only
	// CreatedAt is when the fact happened, as the body says.
	CreatedAt time.Time
	// Payload is the body delivered, as the API renders it: the envelope
	// with the object as it was when the fact was recorded.
	Payload []byte
	// RecordedAt is when the event row was written (the database's clock):
	// endpoints created after it do not receive the event.
	RecordedAt time.Time
	// DispatchedAt is set once the event's delivery workflow is known to
	// exist; nil rows are the outbox.
	DispatchedAt *time.Time
}

// EventSubject is what an event is about, as the transaction recording
// the fact sees it: the order, and the payment of a payment event or the
// refund of a refund event.
type EventSubject struct {
	Order   Order
	Payment *EventPayment // payment events only
	Refund  *Refund       // refund events only
}

// EventPayment is the payment a payment event is about, with what it did.
type EventPayment struct {
	Payment
	Outcome PaymentEventOutcome
}

// PaymentEventOutcome says what became of a payment, in payment events.
type PaymentEventOutcome string

// Payment outcomes shown in payment events.
const (
	PaymentEventCredited  PaymentEventOutcome = "credited"   // counted towards the amount due
	PaymentEventRefundDue PaymentEventOutcome = "refund_due" // recorded, not credited (another asset): due back
	PaymentEventLate      PaymentEventOutcome = "late"       // arrived after the order closed: due back
)

// EventID returns the id of the event of type t about the fact named by
// key (an order id, a payment id, an order id and amount...): "evt_" and 24
// letters or digits drawn from a SHA-256 of both, so it has the shape
// NewID gives and is the same every time the fact is recorded.
func EventID(t EventType, key string) string {
	// The type's length first: no type and key can spell another's.
	sum := sha256.Sum256([]byte(strconv.Itoa(len(t)) + ":" + string(t) + "/" + key))
	out := make([]byte, 0, 24)
	for len(out) < 24 {
		for _, b := range sum {
			if b < 248 && len(out) < 24 {
				out = append(out, base62[int(b)%62])
			}
		}
		sum = sha256.Sum256(sum[:])
	}
	return "evt_" + string(out)
}

// PaymentStatusEvent returns the payment event of an order's received
// amount moving from before to after with the payment status now, if the
// move is one: only growth of the amount is a fact (a status write with
// the same amount is not), partial and overpaid only. The key names the
// fact by order and amount.
func PaymentStatusEvent(orderID string, before, after decimal.Decimal, now PaymentStatus) (EventType, string, bool) {
	if !after.GreaterThan(before) {
		return "", "", false
	}
	switch now {
	case PaymentPartial:
		return EventPaymentPartial, orderID + "/" + after.String(), true
	case PaymentOverpaid:
		return EventPaymentOverpaid, orderID + "/" + after.String(), true
	}
	return "", "", false
}

// RefundStatusEvent returns the refund event of refund r having moved from
// status from to its status, if the move is one, with when it happened:
// reaching sent (keyed by the refund: it happens once) or failed (keyed by
// the refund and the failure's time, so a second failure, after a new
// destination, is a new fact). Any other move, or none (a retried write),
// is no event.
func RefundStatusEvent(from RefundStatus, r Refund) (typ EventType, key string, at time.Time, ok bool) {
	if r.Status == from {
		return "", "", time.Time{}, false
	}
	switch {
	case r.Status == RefundSent && r.SentAt != nil:
		return EventRefundSent, r.ID, *r.SentAt, true
	case r.Status == RefundFailed && r.FailedAt != nil:
		// Microseconds: what both databases keep, so the key is the same
		// computed from the move or from the stored row.
		failed := r.FailedAt.UTC().Truncate(time.Microsecond)
		return EventRefundFailed, r.ID + "/" + failed.Format(time.RFC3339Nano), *r.FailedAt, true
	}
	return "", "", time.Time{}, false
}

// MaxWebhookEndpoints bounds the endpoints of one account in one mode: each
// event fans out to all of them.
const MaxWebhookEndpoints = 16

// WebhookEndpoint is a URL an account has events delivered to.
type WebhookEndpoint struct {
	ID            string
	AccountID     string
	Mode          Mode
	URL           string
	Description   string
	EnabledEvents []EventType
	// Secret signs deliveries. Only creation and delivery see it; listings
	// leave it empty.
	Secret    string
	CreatedAt time.Time
	// DisabledAt and DisabledReason are set when deliveries failed for
	// WebhookDisableAfter without a success: nothing is delivered to the
	// endpoint any more.
	DisabledAt     *time.Time
	DisabledReason string
	DeletedAt      *time.Time
	// LastSuccessAt is the last 2xx answer of the endpoint.
	LastSuccessAt *time.Time
}

// Wants reports whether the endpoint subscribes to t.
func (e WebhookEndpoint) Wants(t EventType) bool {
	return slices.Contains(e.EnabledEvents, EventAll) || slices.Contains(e.EnabledEvents, t)
}

// Active reports whether events are delivered to the endpoint.
func (e WebhookEndpoint) Active() bool { return e.DisabledAt == nil && e.DeletedAt == nil }

// WebhookDisableAfter is how long an endpoint may fail every delivery
// before it is disabled.
const WebhookDisableAfter = 72 * time.Hour

// NormalizeEnabledEvents checks a subscription list: at least one entry,
// each a known type or "*"; duplicates dropped. "*" alone stands for all.
func NormalizeEnabledEvents(in []string) ([]EventType, error) {
	if len(in) == 0 {
		return nil, FieldError(CodeInvalidRequest, "enabled_events", "enabled_events must list at least one event type, or \"*\" for all")
	}
	var out []EventType
	for _, s := range in {
		t := EventType(s)
		if t != EventAll && !t.Valid() {
			return nil, FieldError(CodeInvalidRequest, "enabled_events", "enabled_events: %q is not an event type (%s, or \"*\")", clipText(s, 40), strings.Join(EventTypeNames(), ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if slices.Contains(out, EventAll) {
		return []EventType{EventAll}, nil
	}
	// Documentation order, so listings read the same whatever was sent.
	slices.SortFunc(out, func(a, b EventType) int { return slices.Index(EventTypes, a) - slices.Index(EventTypes, b) })
	return out, nil
}

// EventTypeNames lists every event type's name, in documentation order.
func EventTypeNames() []string {
	out := make([]string, len(EventTypes))
	for i, t := range EventTypes {
		out[i] = string(t)
	}
	return out
}

// clipText shortens s for an error message.
func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// WebhookSecretPrefix starts every endpoint secret.
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret returns a new endpoint secret, "whsec_" and 32 base62
// characters (about 190 bits), drawing randomness from random.
func NewWebhookSecret(random io.Reader) (string, error) {
	s, err := randomString(random, 32)
	if err != nil {
		return "", err
	}
	return WebhookSecretPrefix + s, nil
}

// WebhookAttempt is one delivery attempt of an event to an endpoint.
type WebhookAttempt struct {
	// DeliveryID names the delivery the attempt belongs to: one per event,
	// endpoint and dispatch (a resend is a new delivery).
	DeliveryID string
	EventID    string
	EventType  EventType
	EndpointID string
	Attempt    int
	Resend     bool
	At         time.Time
	Succeeded  bool
	// ResponseStatus is the endpoint's HTTP status; 0 when it gave none
	// (refused address, connection error, timeout).
	ResponseStatus int
	// Error says why a failed attempt failed, for the account to read.
	Error    string
	Duration time.Duration
	// NextRetryAt is when the next attempt is due after a failure; nil when
	// none will follow.
	NextRetryAt *time.Time
}

// DeliveryID names the delivery of an event to an endpoint by one
// dispatch (dispatch: the delivery workflow's id).
func DeliveryID(dispatch, endpointID string) string {
	id := EventID("delivery", dispatch+"/"+endpointID)
	return "dlv_" + strings.TrimPrefix(id, "evt_")
}
