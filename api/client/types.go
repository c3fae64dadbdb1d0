package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// The resources of api/openapi.json, one Go type per schema. JSON names
// are the contract's; contract_test.go fails when a schema gains, loses or
// renames a property these types do not follow. Amounts are
// decimal.Decimal (the API writes them as JSON strings or numbers, never
// to be read as floats); instants are time.Time, and a nullable one a
// *time.Time; other nullable values are pointers, nil for null.

// OrderStatus is an order's status (and its tracking step).
type OrderStatus string

// The order statuses: created → paid → ordered → shipped → delivered, or
// cancelled or failed.
const (
	OrderCreated   OrderStatus = "created"
	OrderPaid      OrderStatus = "paid"
	OrderOrdered   OrderStatus = "ordered"
	OrderShipped   OrderStatus = "shipped"
	OrderDelivered OrderStatus = "delivered"
	OrderCancelled OrderStatus = "cancelled"
	OrderFailed    OrderStatus = "failed"
)

// Final reports whether no other status can follow s.
func (s OrderStatus) Final() bool {
	return s == OrderDelivered || s == OrderCancelled || s == OrderFailed
}

// PaymentStatus is an order's payment_status.
type PaymentStatus string

// The payment statuses; docs/api.md "Statuses" says what each means.
const (
	PaymentPending    PaymentStatus = "pending"
	PaymentProcessing PaymentStatus = "processing"
	PaymentPartial    PaymentStatus = "partial"
	PaymentConfirmed  PaymentStatus = "confirmed"
	PaymentOverpaid   PaymentStatus = "overpaid"
	PaymentExpired    PaymentStatus = "expired"
	PaymentCancelled  PaymentStatus = "cancelled"
	PaymentRefundDue  PaymentStatus = "refund_due"
	PaymentRefunded   PaymentStatus = "refunded"
)

// RefundStatus is a refund's status.
type RefundStatus string

// The refund statuses; docs/api.md "Refunds" says what each means.
const (
	RefundAwaitingDestination RefundStatus = "awaiting_destination"
	RefundAwaitingApproval    RefundStatus = "awaiting_approval"
	RefundSending             RefundStatus = "sending"
	RefundSent                RefundStatus = "sent"
	RefundFailed              RefundStatus = "failed"
	RefundCancelled           RefundStatus = "cancelled"
)

// EventType is the type of an event (WebhookEventType).
type EventType string

// The event types; docs/webhooks.md "Events" says when each happens.
const (
	EventOrderCreated    EventType = "order.created"
	EventOrderPaid       EventType = "order.paid"
	EventOrderOrdered    EventType = "order.ordered"
	EventOrderShipped    EventType = "order.shipped"
	EventOrderDelivered  EventType = "order.delivered"
	EventOrderCancelled  EventType = "order.cancelled"
	EventOrderFailed     EventType = "order.failed"
	EventPaymentReceived EventType = "payment.received"
	EventPaymentPartial  EventType = "payment.partial"
	EventPaymentOverpaid EventType = "payment.overpaid"
	EventPaymentLate     EventType = "payment.late"
	EventRefundCreated   EventType = "refund.created"
	EventRefundSent      EventType = "refund.sent"
	EventRefundFailed    EventType = "refund.failed"
)

// EventAll in a webhook endpoint's enabled_events subscribes to every
// type, including types added later.
const EventAll EventType = "*"

// Date is a calendar date ("2026-11-25"), as the API gives estimated
// deliveries: the destination's local date, not an instant.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// String returns the date as YYYY-MM-DD.
func (d Date) String() string {
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
}

// MarshalJSON writes the date as a "YYYY-MM-DD" string.
func (d Date) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a "YYYY-MM-DD" string.
func (d *Date) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return fmt.Errorf("memocart: date %q: %w", s, err)
	}
	d.Year, d.Month, d.Day = t.Date()
	return nil
}

// ProductPreview is a product as the marketplace lists it now.
type ProductPreview struct {
	Marketplace  string          `json:"marketplace"`
	Title        string          `json:"title"`
	ImageURL     string          `json:"image_url"`
	ProductURL   string          `json:"product_url"`
	Currency     string          `json:"currency"`
	Price        decimal.Decimal `json:"price"`
	Availability string          `json:"availability"`
}

// Cart is a priced cart, valid until ExpiresAt.
type Cart struct {
	ID               string            `json:"id"`
	Status           string            `json:"status"`
	Currency         string            `json:"currency"`
	Subtotal         decimal.Decimal   `json:"subtotal"`
	Shipping         decimal.Decimal   `json:"shipping"`
	Tax              decimal.Decimal   `json:"tax"`
	ServiceFee       decimal.Decimal   `json:"service_fee"`
	Total            decimal.Decimal   `json:"total"`
	ShipToCountry    string            `json:"ship_to_country"`
	ShipToPostalCode string            `json:"ship_to_postal_code,omitempty"`
	CreatedAt        time.Time         `json:"created_at"`
	ExpiresAt        time.Time         `json:"expires_at"`
	Items            []CartItem        `json:"items"`
	Metadata         map[string]string `json:"metadata"`
}

// CartItem is one line of a cart.
type CartItem struct {
	ProductURL  string          `json:"product_url"`
	Marketplace string          `json:"marketplace"`
	ProductID   string          `json:"product_id"`
	Title       string          `json:"title"`
	ImageURL    string          `json:"image_url"`
	Quantity    int             `json:"quantity"`
	UnitPrice   decimal.Decimal `json:"unit_price"`
	LineTotal   decimal.Decimal `json:"line_total"`
	UpstreamID  string          `json:"upstream_id,omitempty"`
	Variation   string          `json:"variation,omitempty"`
	Listing     string          `json:"listing,omitempty"`
}

// ExchangeRate is the rate an XLM amount was quoted at.
type ExchangeRate struct {
	Price  decimal.Decimal `json:"price"`
	Source string          `json:"source"`
	At     time.Time       `json:"at"`
}

// CreatedOrder is the answer to CreateOrder: the order with its payment
// instructions.
type CreatedOrder struct {
	ID                 string             `json:"id"`
	Number             string             `json:"number"`
	Status             OrderStatus        `json:"status"`
	PaymentStatus      PaymentStatus      `json:"payment_status"`
	Currency           string             `json:"currency"`
	Total              decimal.Decimal    `json:"total"`
	PaymentAsset       string             `json:"payment_asset"`
	PaymentAmount      decimal.Decimal    `json:"payment_amount"`
	PaymentAddress     string             `json:"payment_address"`
	PaymentMemo        string             `json:"payment_memo"`
	PaymentExpiresAt   time.Time          `json:"payment_expires_at"`
	TrackingURL        string             `json:"tracking_url"`
	CreatedAt          time.Time          `json:"created_at"`
	PaymentNetwork     string             `json:"payment_network"`
	PaymentAssetIssuer *string            `json:"payment_asset_issuer"`
	PaymentMemoType    string             `json:"payment_memo_type"`
	PaymentURI         string             `json:"payment_uri"`
	ExchangeRate       *ExchangeRate      `json:"exchange_rate,omitempty"`
	Metadata           map[string]string  `json:"metadata"`
	RefundDestination  *RefundDestination `json:"refund_destination"`
}

// Order is an order as GET /v1/orders/{id_or_number} returns it.
type Order struct {
	ID                 string             `json:"id"`
	Number             string             `json:"number"`
	Status             OrderStatus        `json:"status"`
	Total              decimal.Decimal    `json:"total"`
	Currency           string             `json:"currency"`
	PaymentStatus      PaymentStatus      `json:"payment_status"`
	CreatedAt          time.Time          `json:"created_at"`
	Tracking           Tracking           `json:"tracking"`
	Payment            PaymentInfo        `json:"payment"`
	TrackingURL        string             `json:"tracking_url"`
	FailureReason      *string            `json:"failure_reason"`
	CancellationReason *string            `json:"cancellation_reason"`
	Shipments          []Shipment         `json:"shipments"`
	Payments           []OrderPayment     `json:"payments"`
	Metadata           map[string]string  `json:"metadata"`
	RefundDestination  *RefundDestination `json:"refund_destination"`
	// Refunds is given by the reads of one order (get, cancel, refund
	// destination); lists and events leave it out.
	Refunds []Refund `json:"refunds,omitempty"`
}

// Tracking is an order's progress as the shopper's tracking page shows it.
type Tracking struct {
	CurrentStep       OrderStatus    `json:"current_step"`
	Carrier           *string        `json:"carrier"`
	TrackingNumber    *string        `json:"tracking_number"`
	EstimatedDelivery *Date          `json:"estimated_delivery"`
	Steps             []TrackingStep `json:"steps"`
}

// TrackingStep is one of the five steps, with when it was reached.
type TrackingStep struct {
	Name      OrderStatus `json:"name"`
	Completed bool        `json:"completed"`
	Timestamp *time.Time  `json:"timestamp"`
}

// PaymentInfo is what the payer must pay, and what arrived.
type PaymentInfo struct {
	Network          string          `json:"network"`
	AssetIssuer      *string         `json:"asset_issuer"`
	MemoType         string          `json:"memo_type"`
	URI              string          `json:"uri"`
	ExchangeRate     *ExchangeRate   `json:"exchange_rate,omitempty"`
	Asset            string          `json:"asset"`
	Amount           decimal.Decimal `json:"amount"`
	AmountReceived   decimal.Decimal `json:"amount_received"`
	AmountProcessing decimal.Decimal `json:"amount_processing"`
	AmountDue        decimal.Decimal `json:"amount_due"`
	AmountDueBack    decimal.Decimal `json:"amount_due_back"`
	Address          string          `json:"address"`
	Memo             string          `json:"memo"`
	ExpiresAt        time.Time       `json:"expires_at"`
}

// Shipment is one parcel of an order.
type Shipment struct {
	Carrier           string       `json:"carrier"`
	TrackingNumber    *string      `json:"tracking_number"`
	TrackingURL       *string      `json:"tracking_url"`
	Status            string       `json:"status"`
	EstimatedDelivery *Date        `json:"estimated_delivery"`
	Checkpoints       []Checkpoint `json:"checkpoints"`
}

// Checkpoint is one scan of a parcel.
type Checkpoint struct {
	Time    time.Time `json:"time"`
	Status  string    `json:"status"`
	Message string    `json:"message"`
	City    string    `json:"city,omitempty"`
	State   string    `json:"state,omitempty"`
	Country string    `json:"country,omitempty"`
	Zip     string    `json:"zip,omitempty"`
}

// OrderPayment is one payment attached to an order (or seen with its memo).
type OrderPayment struct {
	ID                    string          `json:"id"`
	Network               string          `json:"network"`
	NetworkID             *string         `json:"network_id"`
	TransactionHash       *string         `json:"transaction_hash"`
	Asset                 string          `json:"asset"`
	Amount                decimal.Decimal `json:"amount"`
	ReceivedAt            time.Time       `json:"received_at"`
	Outcome               string          `json:"outcome"`
	RefundedAt            *time.Time      `json:"refunded_at"`
	RefundTransactionHash *string         `json:"refund_transaction_hash"`
}

// RefundDestination is where an order's or a refund's money goes back:
// an address (with its memo) or, with ToSender, the account it came from.
type RefundDestination struct {
	Address  *string `json:"address"`
	MemoType *string `json:"memo_type"`
	Memo     *string `json:"memo"`
	ToSender bool    `json:"to_sender"`
}

// Refund is money an order owes back.
type Refund struct {
	ID              string             `json:"id"`
	OrderID         *string            `json:"order_id"`
	PaymentIDs      []string           `json:"payment_ids"`
	Reason          string             `json:"reason"`
	Amount          decimal.Decimal    `json:"amount"`
	Asset           string             `json:"asset"`
	Status          RefundStatus       `json:"status"`
	Destination     *RefundDestination `json:"destination"`
	TransactionHash *string            `json:"transaction_hash"`
	FailureReason   *string            `json:"failure_reason"`
	ClaimURL        *string            `json:"claim_url"`
	CreatedAt       time.Time          `json:"created_at"`
	ApprovedAt      *time.Time         `json:"approved_at"`
	SentAt          *time.Time         `json:"sent_at"`
	FailedAt        *time.Time         `json:"failed_at"`
	CancelledAt     *time.Time         `json:"cancelled_at"`
}

// TestPayment is a sandbox payment made by CreateTestPayment.
type TestPayment struct {
	ID      string          `json:"id"`
	OrderID string          `json:"order_id"`
	Asset   string          `json:"asset"`
	Amount  decimal.Decimal `json:"amount"`
	Memo    string          `json:"memo"`
	Outcome string          `json:"outcome"`
}

// WebhookEndpoint is a URL the account's events are delivered to.
type WebhookEndpoint struct {
	ID             string      `json:"id"`
	URL            string      `json:"url"`
	Description    string      `json:"description"`
	EnabledEvents  []EventType `json:"enabled_events"`
	Mode           string      `json:"mode"`
	Status         string      `json:"status"`
	DisabledAt     *time.Time  `json:"disabled_at"`
	DisabledReason *string     `json:"disabled_reason"`
	LastSuccessAt  *time.Time  `json:"last_success_at"`
	CreatedAt      time.Time   `json:"created_at"`
	// Secret signs the deliveries; it is given once, by
	// CreateWebhookEndpoint.
	Secret string `json:"secret,omitempty"`
}

// WebhookDelivery is one attempt to deliver an event to an endpoint.
type WebhookDelivery struct {
	DeliveryID     string     `json:"delivery_id"`
	EventID        string     `json:"event_id"`
	EventType      EventType  `json:"event_type"`
	Attempt        int        `json:"attempt"`
	Resend         bool       `json:"resend"`
	AttemptedAt    time.Time  `json:"attempted_at"`
	Status         string     `json:"status"`
	ResponseStatus *int       `json:"response_status"`
	Error          *string    `json:"error"`
	DurationMS     int        `json:"duration_ms"`
	NextRetryAt    *time.Time `json:"next_retry_at"`
}

// Resend is the new delivery ResendWebhookEvent queued.
type Resend struct {
	ID         string `json:"id"`
	EventID    string `json:"event_id"`
	EndpointID string `json:"endpoint_id"`
	Resend     bool   `json:"resend"`
}

// Event is a fact about one of the account's orders, as GET /v1/events
// lists it and as a webhook delivers it (the WebhookEvent schema).
type Event struct {
	ID        string    `json:"id"`
	Type      EventType `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Mode      string    `json:"mode"`
	Data      EventData `json:"data"`
}

// EventData is what an event is about: always the order (without its
// refunds), the payment in payment events, the refund in refund events.
type EventData struct {
	Order   Order         `json:"order"`
	Payment *EventPayment `json:"payment,omitempty"`
	Refund  *Refund       `json:"refund,omitempty"`
}

// EventPayment is the payment a payment event is about.
type EventPayment struct {
	ID              string          `json:"id"`
	Asset           string          `json:"asset"`
	Amount          decimal.Decimal `json:"amount"`
	Memo            string          `json:"memo"`
	TransactionHash *string         `json:"transaction_hash"`
	ReceivedAt      time.Time       `json:"received_at"`
	Outcome         string          `json:"outcome"`
}

// Page is one page of a list, newest first; HasMore says another follows.
type Page[T any] struct {
	Data    []T  `json:"data"`
	HasMore bool `json:"has_more"`
}

// OrderList is one page of ListOrders.
type OrderList = Page[Order]

// RefundList is one page of ListRefunds.
type RefundList = Page[Refund]

// EventList is one page of ListEvents.
type EventList = Page[Event]

// The envelopes the API wraps single resources in; each method returns
// the resource inside.
type (
	productEnvelope struct {
		Product ProductPreview `json:"product"`
	}
	cartEnvelope struct {
		Cart Cart `json:"cart"`
	}
	createdOrderEnvelope struct {
		Order CreatedOrder `json:"order"`
	}
	orderEnvelope struct {
		Order Order `json:"order"`
	}
	refundEnvelope struct {
		Refund Refund `json:"refund"`
	}
	testPaymentEnvelope struct {
		Payment TestPayment `json:"payment"`
	}
	webhookEndpointEnvelope struct {
		WebhookEndpoint WebhookEndpoint `json:"webhook_endpoint"`
	}
	webhookEndpointsEnvelope struct {
		WebhookEndpoints []WebhookEndpoint `json:"webhook_endpoints"`
	}
	deliveriesEnvelope struct {
		Deliveries []WebhookDelivery `json:"deliveries"`
	}
	resendEnvelope struct {
		Delivery Resend `json:"delivery"`
	}
)
