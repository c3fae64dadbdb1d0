package zinc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/activities/upstream"
)

// DefaultBaseURL is Zinc's API. Test keys (zn_test_...) reach Zinc's own
// sandbox at the same URL: the key prefix alone decides.
const DefaultBaseURL = "https://api.zinc.com"

// DefaultTimeout bounds each call when ClientConfig.Timeout is zero.
const DefaultTimeout = 15 * time.Second

// maxBodySize caps what is read of an answer. An order with many parcels
// and checkpoints is a few tens of kilobytes.
const maxBodySize = 8 << 20

// ClientConfig configures a Client.
type ClientConfig struct {
	// BaseURL is the API's base URL: DefaultBaseURL or a test server's.
	BaseURL string
	// APIKey is the bearer key, zn_live_... or zn_test_.... Required.
	APIKey string
	// HTTPClient makes every request. Default a fresh client.
	HTTPClient *http.Client
	// Timeout bounds each call. The client retries nothing: the order
	// workflow's activities retry, so a call must never outlive its
	// share of the activity's time. Default DefaultTimeout.
	Timeout time.Duration
}

// Client speaks Zinc's order API (the current version, bearer keys). It
// retries nothing and is safe for concurrent use.
type Client struct {
	baseURL string
	apiKey  string
	http    *http.Client
	timeout time.Duration
}

// NewClient returns a client for cfg, or an error if cfg is incomplete.
func NewClient(cfg ClientConfig) (*Client, error) {
	var err error
	if cfg.BaseURL, err = upstream.BaseURL("zinc", "BaseURL", cfg.BaseURL, DefaultBaseURL); err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("zinc: APIKey is required")
	}
	if cfg.Timeout, err = upstream.OrDefault("zinc", "Timeout", cfg.Timeout, DefaultTimeout); err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &Client{
		baseURL: strings.TrimSuffix(cfg.BaseURL, "/"),
		apiKey:  cfg.APIKey,
		http:    cfg.HTTPClient,
		timeout: cfg.Timeout,
	}, nil
}

// CreateOrderRequest is the body of POST /orders.
type CreateOrderRequest struct {
	Products []Product `json:"products"`
	// MaxPrice is the ceiling in US cents for the whole order: items,
	// shipping and tax. Zinc refuses rather than finalise above it.
	MaxPrice        int64   `json:"max_price"`
	ShippingAddress Address `json:"shipping_address"`
	// IdempotencyKey (at most MaxIdempotencyKey characters) makes Zinc
	// create at most one order for it, ever.
	IdempotencyKey  string         `json:"idempotency_key,omitempty"`
	Metadata        map[string]any `json:"metadata,omitempty"`
	PONumber        string         `json:"po_number,omitempty"`
	HandlingDaysMax *int           `json:"handling_days_max,omitempty"`
	IsGift          bool           `json:"is_gift,omitempty"`
	GiftMessage     string         `json:"gift_message,omitempty"`
}

// MaxIdempotencyKey is the longest idempotency key Zinc accepts.
const MaxIdempotencyKey = 36

// Product is one line of an order: a product page and how many.
type Product struct {
	URL      string    `json:"url"`
	Quantity int       `json:"quantity"`
	Variant  []Variant `json:"variant,omitempty"`
	// ConditionIn restricts the offers Zinc may buy: New, Refurbished,
	// UsedLikeNew, UsedVeryGood, UsedGood, UsedAcceptable.
	ConditionIn []string `json:"condition_in,omitempty"`
}

// Variant picks an option of a product as the retailer's page labels it
// ("Size": "M").
type Variant struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Address is a shipping address as Zinc takes it.
type Address struct {
	FirstName    string `json:"first_name"`
	LastName     string `json:"last_name"`
	AddressLine1 string `json:"address_line1"`
	AddressLine2 string `json:"address_line2,omitempty"`
	City         string `json:"city"`
	State        string `json:"state,omitempty"`
	PostalCode   string `json:"postal_code"`
	PhoneNumber  string `json:"phone_number"`
	Country      string `json:"country,omitempty"`
}

// Order statuses. The last four are final.
const (
	StatusPending             = "pending"
	StatusInProgress          = "in_progress"
	StatusOrderPlaced         = "order_placed"
	StatusOrderFailed         = "order_failed"
	StatusCancelled           = "cancelled"
	StatusCancelledByRetailer = "cancelled_by_retailer"
)

// Order is Zinc's order object. Times are kept as sent: Zinc's own
// serialisation of them is not pinned down by its documentation, and an
// unparseable time must not make a whole order unreadable.
type Order struct {
	ID              string         `json:"id"`
	Status          string         `json:"status"`
	MaxPrice        int64          `json:"max_price"`
	Attempts        int            `json:"attempts"`
	Items           []OrderItem    `json:"items"`
	ShippingAddress Address        `json:"shipping_address"`
	Metadata        map[string]any `json:"metadata,omitempty"`
	PONumber        string         `json:"po_number,omitempty"`
	// MerchantOrderIDs are the retailer's own order numbers: strings in
	// the current API; see merchantOrderIDs for the older shapes.
	MerchantOrderIDs json.RawMessage  `json:"merchant_order_ids,omitempty"`
	JobResult        *JobResult       `json:"job_result,omitempty"`
	TrackingNumbers  []TrackingNumber `json:"tracking_numbers,omitempty"`
	CreatedAt        string           `json:"created_at"`
	UpdatedAt        string           `json:"updated_at"`
}

// OrderItem is one product line of an order as Zinc records it.
type OrderItem struct {
	ID          string    `json:"id"`
	URL         string    `json:"url"`
	Quantity    int       `json:"quantity"`
	Variant     []Variant `json:"variant,omitempty"`
	ConditionIn []string  `json:"condition_in,omitempty"`
	Status      string    `json:"status"`
	CreatedAt   string    `json:"created_at"`
	UpdatedAt   string    `json:"updated_at"`
}

// JobResult is the outcome of Zinc's purchase: null while the order is
// being processed.
type JobResult struct {
	Success           *bool            `json:"success,omitempty"`
	Error             string           `json:"error,omitempty"`
	ErrorType         string           `json:"error_type,omitempty"`
	EstimatedDelivery string           `json:"estimated_delivery,omitempty"`
	PriceComponents   *PriceComponents `json:"price_components,omitempty"`
	// MerchantOrderIDs is the older home of the retailer's order numbers,
	// as objects.
	MerchantOrderIDs json.RawMessage `json:"merchant_order_ids,omitempty"`
}

// PriceComponents is what the retailer charged, every amount in US cents
// (a JSON number; null when not recorded).
type PriceComponents struct {
	Subtotal              *decimal.Decimal `json:"subtotal,omitempty"`
	Tax                   *decimal.Decimal `json:"tax,omitempty"`
	Shipping              *decimal.Decimal `json:"shipping,omitempty"`
	Discount              *decimal.Decimal `json:"discount,omitempty"`
	Fees                  *decimal.Decimal `json:"fees,omitempty"`
	Total                 *decimal.Decimal `json:"total,omitempty"`
	Currency              string           `json:"currency,omitempty"`
	PaymentCurrency       string           `json:"payment_currency,omitempty"`
	ConvertedPaymentTotal *decimal.Decimal `json:"converted_payment_total,omitempty"`
	// BreakdownRecorded false means only Total is meaningful; null (orders
	// from before the flag existed) means true, as the SDK documents.
	BreakdownRecorded *bool `json:"breakdown_recorded,omitempty"`
}

// TrackingNumber is one shipment of an order.
type TrackingNumber struct {
	ID             string `json:"id"`
	Carrier        string `json:"carrier"`
	TrackingNumber string `json:"tracking_number"`
	// ZincTrackingNumber is Zinc's stable alias of the shipment.
	ZincTrackingNumber string `json:"zinc_tracking_number,omitempty"`
	ZincTrackingURL    string `json:"zinc_tracking_url,omitempty"`
	// Status is pending, in_transit, delivered or undeliverable.
	Status string `json:"status,omitempty"`
	// EstimatedDeliveryDate is the carrier's destination-local date,
	// YYYY-MM-DD, empty until known.
	EstimatedDeliveryDate string       `json:"estimated_delivery_date,omitempty"`
	Checkpoints           []Checkpoint `json:"checkpoints,omitempty"`
	OrderItemIDs          []string     `json:"order_item_ids,omitempty"`
	CreatedAt             string       `json:"created_at"`
}

// Checkpoint is one carrier scan; Zinc lists the most recent first.
type Checkpoint struct {
	CheckpointTime string `json:"checkpoint_time"`
	Status         string `json:"status"`
	Message        string `json:"message"`
	City           string `json:"city,omitempty"`
	State          string `json:"state,omitempty"`
	Country        string `json:"country,omitempty"`
	Zip            string `json:"zip,omitempty"`
	Location       string `json:"location,omitempty"`
}

// OrderList is the answer of GET /orders.
type OrderList struct {
	Orders []Order `json:"orders"`
	Total  int     `json:"total"`
	Limit  int     `json:"limit"`
	Offset int     `json:"offset"`
}

// Error codes the client and the fulfiller act on. Zinc's full list is in
// shared/reference/marketplaces.md.
const (
	CodeAlreadyExists       = "already_exists"
	CodeNotFound            = "not_found"
	CodeValidationError     = "validation_error"
	CodeBadRequest          = "bad_request"
	CodeOrderNotCancellable = "order_not_cancellable"
)

// APIError is an error answer of Zinc's API.
type APIError struct {
	HTTPStatus int
	Code       string
	Message    string
	// Details is Zinc's field context, null when there is none.
	Details json.RawMessage
}

func (e *APIError) Error() string {
	// Details stay out: they can echo parts of a shipping address.
	if e.Message == "" {
		return fmt.Sprintf("zinc: HTTP %d %s", e.HTTPStatus, e.Code)
	}
	return fmt.Sprintf("zinc: HTTP %d %s: %s", e.HTTPStatus, e.Code, e.Message)
}

// transientCodes are the error codes of Zinc-side trouble: the same
// request may succeed later.
var transientCodes = map[string]bool{
	"rate_limit_exceeded":    true,
	"service_unavailable":    true,
	"external_service_error": true,
	"internal_error":         true,
}

// accountCodes are the error codes of a problem with Memocart's Zinc
// account (key, permissions, wallet) rather than with the order.
var accountCodes = map[string]bool{
	"unauthorized":            true,
	"forbidden":               true,
	"invalid_token":           true,
	"token_expired":           true,
	"insufficient_funds":      true,
	"payment_required":        true,
	"payment_failed":          true,
	"payment_method_required": true,
	"invalid_payment_method":  true,
}

// Transient reports whether the error is Zinc's momentary trouble
// (throttling, an outage, a failing dependency): the same request may
// succeed later.
func (e *APIError) Transient() bool {
	return e.HTTPStatus == http.StatusTooManyRequests || e.HTTPStatus >= 500 || transientCodes[e.Code]
}

// Account reports whether the error is about Memocart's own Zinc account:
// a rejected key, missing permission, an empty wallet. An operator fixes
// those; the order itself is not at fault.
func (e *APIError) Account() bool {
	switch e.HTTPStatus {
	case http.StatusUnauthorized, http.StatusPaymentRequired, http.StatusForbidden:
		return true
	}
	return accountCodes[e.Code]
}

// Transient reports whether err, from a Client method, is worth retrying
// as it is: Zinc's transient errors, and every failure to get an answer at
// all (network errors, timeouts, a garbled body). Business answers (a
// refused order, an unknown id) and account problems are not.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Transient()
	}
	return true
}

// CreateOrder places an order: 201 with the new order, status pending. A
// repeated idempotency key is refused with an *APIError whose Code is
// already_exists (see OrdersByMetadata to find the existing order).
func (c *Client) CreateOrder(ctx context.Context, req CreateOrderRequest) (Order, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Order{}, fmt.Errorf("zinc: encoding order: %w", err)
	}
	var o Order
	if err := c.do(ctx, http.MethodPost, "/orders", body, &o); err != nil {
		return Order{}, err
	}
	return o, nil
}

// Order returns the order with Zinc id id.
func (c *Client) Order(ctx context.Context, id string) (Order, error) {
	if id == "" {
		return Order{}, errors.New("zinc: empty order id")
	}
	var o Order
	if err := c.do(ctx, http.MethodGet, "/orders/"+url.PathEscape(id), nil, &o); err != nil {
		return Order{}, err
	}
	return o, nil
}

// CancelOrder cancels an order Zinc has not started buying; Zinc answers
// order_not_cancellable once it has.
func (c *Client) CancelOrder(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("zinc: empty order id")
	}
	return c.do(ctx, http.MethodPost, "/orders/"+url.PathEscape(id)+"/cancel", nil, nil)
}

// maxListLimit is the page size of OrdersByMetadata's listing, the most
// Zinc allows.
const maxListLimit = 100

// maxListPages bounds how far OrdersByMetadata pages back when Zinc
// ignores the metadata filter: 500 orders since the window opened, more
// than a deployment places in the hour or so the window spans.
const maxListPages = 5

// OrdersByMetadata returns the orders created after since (zero: no
// bound) whose top-level metadata key equals value exactly, newest first.
// It asks Zinc to filter (metadata_key/metadata_value, documented only by
// Zinc's newest SDK) and within the window (created_after), and filters
// again on each order's metadata itself, so it stays right where the
// metadata filter is ignored: it then pages back through the window, at
// most maxListPages pages.
func (c *Client) OrdersByMetadata(ctx context.Context, key, value string, since time.Time) ([]Order, error) {
	var found []Order
	for page := range maxListPages {
		q := url.Values{}
		q.Set("metadata_key", key)
		q.Set("metadata_value", value)
		q.Set("limit", strconv.Itoa(maxListLimit))
		q.Set("offset", strconv.Itoa(page*maxListLimit))
		if !since.IsZero() {
			q.Set("created_after", since.UTC().Format(time.RFC3339))
		}
		var l OrderList
		if err := c.do(ctx, http.MethodGet, "/orders?"+q.Encode(), nil, &l); err != nil {
			return nil, err
		}
		for _, o := range l.Orders {
			if metadataEquals(o.Metadata[key], value) {
				found = append(found, o)
			}
		}
		seen := page*maxListLimit + len(l.Orders)
		if len(l.Orders) < maxListLimit || (l.Total > 0 && seen >= l.Total) {
			break
		}
	}
	return found, nil
}

// metadataEquals compares a metadata value as Zinc's exact, case-sensitive
// filter does: strings as they are, numbers by their decimal text.
func metadataEquals(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64) == want
	case json.Number:
		return v.String() == want
	}
	return false
}

// do makes one call bounded by the client's timeout and decodes a 2xx
// answer into out (when not nil); any other answer is an *APIError.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, rd)
	if err != nil {
		return fmt.Errorf("zinc: %s %s: %w", method, redactPath(path), err)
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("zinc: %s %s: %w", method, redactPath(path), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodySize))
	if err != nil {
		return fmt.Errorf("zinc: %s %s: reading answer: %w", method, redactPath(path), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return parseAPIError(resp.StatusCode, data)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("zinc: %s %s: decoding answer: %w", method, redactPath(path), err)
	}
	return nil
}

// redactPath drops the query of a path for error messages: list queries
// carry order ids, which belong in structured log fields, not in texts.
func redactPath(path string) string {
	p, _, _ := strings.Cut(path, "?")
	return p
}

// errorFields is the error object of Zinc's answers.
type errorFields struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details"`
}

// parseAPIError reads an error answer. The SDKs (generated from Zinc's
// API definition) nest the error object under "error"; the prose
// documentation shows it at the top level. Both are read. [verify]
func parseAPIError(status int, body []byte) *APIError {
	e := &APIError{HTTPStatus: status}
	var nested struct {
		Error json.RawMessage `json:"error"`
	}
	var f errorFields
	if json.Unmarshal(body, &nested) == nil && len(nested.Error) > 0 && nested.Error[0] == '{' {
		_ = json.Unmarshal(nested.Error, &f)
	} else {
		_ = json.Unmarshal(body, &f)
	}
	e.Code, e.Message = f.Code, f.Message
	if len(f.Details) > 0 && string(f.Details) != "null" {
		e.Details = f.Details
	}
	if e.Message == "" && e.Code == "" {
		e.Message = http.StatusText(status)
	}
	return e
}
