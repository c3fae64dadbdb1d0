package client

import (
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Request bodies. Optional fields are omitted when zero, so a zero value
// leaves the service's default in place.

// PreviewProductParams is the body of PreviewProduct.
type PreviewProductParams struct {
	// URL is a product link of a supported marketplace.
	URL string `json:"url"`
}

// CreateCartParams is the body of CreateCart.
type CreateCartParams struct {
	Items            []CartItemParams  `json:"items"`
	ShipToCountry    string            `json:"ship_to_country"`
	ShipToPostalCode string            `json:"ship_to_postal_code,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
}

// CartItemParams is one line of CreateCartParams.
type CartItemParams struct {
	ProductURL string `json:"product_url"`
	Quantity   int    `json:"quantity"`
}

// CreateOrderParams is the body of CreateOrder.
type CreateOrderParams struct {
	CartID          string          `json:"cart_id"`
	CustomerEmail   string          `json:"customer_email"`
	PaymentAsset    string          `json:"payment_asset"`
	ShippingAddress ShippingAddress `json:"shipping_address"`
	// Metadata is merged over the cart's; a key with an empty value
	// removes the cart's key.
	Metadata          map[string]string        `json:"metadata,omitempty"`
	RefundDestination *RefundDestinationParams `json:"refund_destination,omitempty"`
}

// ShippingAddress is where an order is shipped.
type ShippingAddress struct {
	Name       string `json:"name"`
	Phone      string `json:"phone,omitempty"`
	Line1      string `json:"line1"`
	Line2      string `json:"line2,omitempty"`
	City       string `json:"city"`
	Region     string `json:"region,omitempty"`
	PostalCode string `json:"postal_code,omitempty"`
	Country    string `json:"country"`
}

// RefundDestinationParams says where money owed back goes: an Address
// (with the MemoType and Memo its owner needs), or ToSender.
type RefundDestinationParams struct {
	Address  string `json:"address,omitempty"`
	MemoType string `json:"memo_type,omitempty"`
	Memo     string `json:"memo,omitempty"`
	ToSender bool   `json:"to_sender,omitempty"`
}

// CancelOrderParams is the optional body of CancelOrder.
type CancelOrderParams struct {
	// Reason is kept for operators, not returned.
	Reason string `json:"reason,omitempty"`
}

// FailTestOrderParams is the optional body of FailTestOrder.
type FailTestOrderParams struct {
	// Reason is the failure code (see docs/api.md's sandbox table, e.g.
	// "product_out_of_stock"); the order's failure_reason is its sentence.
	Reason string `json:"reason,omitempty"`
}

// FailTestRefundParams is the optional body of FailTestRefund.
type FailTestRefundParams struct {
	// Reason is how the network refuses the payout: "no_account" or
	// "no_trust".
	Reason string `json:"reason,omitempty"`
}

// CreateTestPaymentParams is the optional body of CreateTestPayment:
// by default the order's full amount in its asset.
type CreateTestPaymentParams struct {
	Amount *decimal.Decimal `json:"amount,omitempty"`
	Asset  string           `json:"asset,omitempty"`
}

// CreateWebhookEndpointParams is the body of CreateWebhookEndpoint.
type CreateWebhookEndpointParams struct {
	URL           string      `json:"url"`
	EnabledEvents []EventType `json:"enabled_events"`
	Description   string      `json:"description,omitempty"`
}

// Query parameters. The query tag is the parameter's name in the
// contract; a zero field is not sent.

// ListOrdersParams filters and pages ListOrders.
type ListOrdersParams struct {
	Status        OrderStatus `query:"status"`
	CreatedGTE    time.Time   `query:"created[gte]"`
	CreatedLTE    time.Time   `query:"created[lte]"`
	Limit         int         `query:"limit"`
	StartingAfter string      `query:"starting_after"`
}

// ListRefundsParams filters and pages ListRefunds.
type ListRefundsParams struct {
	OrderID       string       `query:"order_id"`
	Status        RefundStatus `query:"status"`
	CreatedGTE    time.Time    `query:"created[gte]"`
	CreatedLTE    time.Time    `query:"created[lte]"`
	Limit         int          `query:"limit"`
	StartingAfter string       `query:"starting_after"`
}

// ListEventsParams filters and pages ListEvents.
type ListEventsParams struct {
	// Types keeps events of these types (any of them).
	Types []EventType `query:"type"`
	// Order is an order id or number.
	Order         string    `query:"order"`
	CreatedGTE    time.Time `query:"created[gte]"`
	CreatedLTE    time.Time `query:"created[lte]"`
	Limit         int       `query:"limit"`
	StartingAfter string    `query:"starting_after"`
	EndingBefore  string    `query:"ending_before"`
}

// ListWebhookDeliveriesParams filters ListWebhookDeliveries.
type ListWebhookDeliveriesParams struct {
	Limit   int    `query:"limit"`
	EventID string `query:"event_id"`
}

// encodeQuery writes the query-tagged fields of a *XxxParams struct that
// are not zero. One encoder for every list keeps the parameter names in
// tags, where contract_test.go checks them against the contract.
func encodeQuery(params any) string {
	v := reflect.ValueOf(params)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	q := url.Values{}
	for i := range v.NumField() {
		name := v.Type().Field(i).Tag.Get("query")
		f := v.Field(i)
		if name == "" || f.IsZero() {
			continue
		}
		switch x := f.Interface().(type) {
		case time.Time:
			q.Set(name, x.UTC().Format(time.RFC3339))
		case []EventType:
			s := make([]string, len(x))
			for i, t := range x {
				s[i] = string(t)
			}
			q.Set(name, strings.Join(s, ","))
		case int:
			q.Set(name, strconv.Itoa(x))
		default:
			q.Set(name, f.String())
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
