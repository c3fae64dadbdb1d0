package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// One method per operation of api/openapi.json under /v1, named after its
// operationId (contract_test.go holds the list to the document). Path
// arguments are escaped; an id of a shape the API has no ids of is its
// 404, not a client-side error.

// PreviewProduct reads a product from its marketplace link
// (previewProduct).
func (c *Client) PreviewProduct(ctx context.Context, p *PreviewProductParams) (*ProductPreview, error) {
	return call(ctx, c, http.MethodPost, "/v1/products/preview", p, func(e *productEnvelope) *ProductPreview { return &e.Product })
}

// CreateCart prices a cart (createCart).
func (c *Client) CreateCart(ctx context.Context, p *CreateCartParams) (*Cart, error) {
	return call(ctx, c, http.MethodPost, "/v1/carts", p, func(e *cartEnvelope) *Cart { return &e.Cart })
}

// GetCart reads a cart by its id (getCart).
func (c *Client) GetCart(ctx context.Context, id string) (*Cart, error) {
	return call(ctx, c, http.MethodGet, "/v1/carts/"+url.PathEscape(id), nil, func(e *cartEnvelope) *Cart { return &e.Cart })
}

// CreateOrder orders a cart (createOrder). One cart makes one order: the
// same request again returns the same order.
func (c *Client) CreateOrder(ctx context.Context, p *CreateOrderParams) (*CreatedOrder, error) {
	return call(ctx, c, http.MethodPost, "/v1/orders", p, func(e *createdOrderEnvelope) *CreatedOrder { return &e.Order })
}

// GetOrder reads an order by its id or number (getOrder).
func (c *Client) GetOrder(ctx context.Context, ref string) (*Order, error) {
	return call(ctx, c, http.MethodGet, "/v1/orders/"+url.PathEscape(ref), nil, func(e *orderEnvelope) *Order { return &e.Order })
}

// ListOrders reads one page of the account's orders, newest first
// (listOrders). Orders iterates over every page.
func (c *Client) ListOrders(ctx context.Context, p *ListOrdersParams) (*OrderList, error) {
	return call(ctx, c, http.MethodGet, "/v1/orders"+encodeQuery(p), nil, itself[OrderList])
}

// CancelOrder cancels an order still waiting for payment (cancelOrder);
// p may be nil. Cancelling a cancelled order returns it as it is.
func (c *Client) CancelOrder(ctx context.Context, ref string, p *CancelOrderParams) (*Order, error) {
	if p == nil {
		p = &CancelOrderParams{}
	}
	return call(ctx, c, http.MethodPost, "/v1/orders/"+url.PathEscape(ref)+"/cancel", p, func(e *orderEnvelope) *Order { return &e.Order })
}

// SetOrderRefundDestination says where the money an order owes back goes
// (setOrderRefundDestination).
func (c *Client) SetOrderRefundDestination(ctx context.Context, ref string, p *RefundDestinationParams) (*Order, error) {
	return call(ctx, c, http.MethodPost, "/v1/orders/"+url.PathEscape(ref)+"/refund_destination", p, func(e *orderEnvelope) *Order { return &e.Order })
}

// ListRefunds reads one page of the account's refunds, newest first
// (listRefunds). Refunds iterates over every page.
func (c *Client) ListRefunds(ctx context.Context, p *ListRefundsParams) (*RefundList, error) {
	return call(ctx, c, http.MethodGet, "/v1/refunds"+encodeQuery(p), nil, itself[RefundList])
}

// GetRefund reads a refund by its id (getRefund).
func (c *Client) GetRefund(ctx context.Context, id string) (*Refund, error) {
	return call(ctx, c, http.MethodGet, "/v1/refunds/"+url.PathEscape(id), nil, func(e *refundEnvelope) *Refund { return &e.Refund })
}

// CreateTestPayment pays a test-mode order in the sandbox
// (createTestPayment); p may be nil for the full amount. Its retries
// reuse one Idempotency-Key, so they are the same payment, never a
// second one.
func (c *Client) CreateTestPayment(ctx context.Context, ref string, p *CreateTestPaymentParams) (*TestPayment, error) {
	if p == nil {
		p = &CreateTestPaymentParams{}
	}
	return call(ctx, c, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/payments", p, func(e *testPaymentEnvelope) *TestPayment { return &e.Payment })
}

// ExpireTestOrder makes a test-mode order's payment deadline pass now
// (expireTestOrder): the order comes back cancelled as its deadline would
// cancel it; one no longer awaiting payment is an *Error of code
// CodeInvalidOrderState.
func (c *Client) ExpireTestOrder(ctx context.Context, ref string) (*Order, error) {
	return call(ctx, c, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/expire", nil, func(e *orderEnvelope) *Order { return &e.Order })
}

// AdvanceTestOrder makes the sandbox provider's next fulfilment step of
// a test-mode order happen now (advanceTestOrder): paid becomes ordered,
// ordered shipped, shipped delivered. An order with no next step
// (awaiting payment, or ended) is an *Error of code CodeInvalidOrderState.
func (c *Client) AdvanceTestOrder(ctx context.Context, ref string) (*Order, error) {
	return call(ctx, c, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/advance", nil, func(e *orderEnvelope) *Order { return &e.Order })
}

// FailTestOrder makes a test-mode order's sourcing fail now
// (failTestOrder), for p's reason (nil p: the service's default): the
// order comes back failed, its payment due back. An order not paid, or
// shipped or ended, is an *Error of code CodeInvalidOrderState.
func (c *Client) FailTestOrder(ctx context.Context, ref string, p *FailTestOrderParams) (*Order, error) {
	if p == nil {
		p = &FailTestOrderParams{}
	}
	return call(ctx, c, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/fail", p, func(e *orderEnvelope) *Order { return &e.Order })
}

// FailTestRefund has a test refund's next payout refused as the network
// would refuse it (failTestRefund), for p's reason (nil p: the service's
// default): the refund comes back as it stands, and fails when that payout
// is made. A refund sending, sent or cancelled is an *Error of code
// CodeInvalidRefundState.
func (c *Client) FailTestRefund(ctx context.Context, id string, p *FailTestRefundParams) (*Refund, error) {
	if p == nil {
		p = &FailTestRefundParams{}
	}
	return call(ctx, c, http.MethodPost, "/v1/test_helpers/refunds/"+url.PathEscape(id)+"/fail", p, func(e *refundEnvelope) *Refund { return &e.Refund })
}

// ListEvents reads one page of the account's events, newest first
// (listEvents). Events and EventsAfter iterate over every page.
func (c *Client) ListEvents(ctx context.Context, p *ListEventsParams) (*EventList, error) {
	return call(ctx, c, http.MethodGet, "/v1/events"+encodeQuery(p), nil, itself[EventList])
}

// GetEvent reads an event by its id (getEvent): the body its webhook
// delivery sends.
func (c *Client) GetEvent(ctx context.Context, id string) (*Event, error) {
	return call(ctx, c, http.MethodGet, "/v1/events/"+url.PathEscape(id), nil, itself[Event])
}

// ListWebhookEndpoints reads the account's webhook endpoints in the key's
// mode, without their secrets (listWebhookEndpoints).
func (c *Client) ListWebhookEndpoints(ctx context.Context) ([]WebhookEndpoint, error) {
	return call(ctx, c, http.MethodGet, "/v1/webhook_endpoints", nil, func(e *webhookEndpointsEnvelope) []WebhookEndpoint { return e.WebhookEndpoints })
}

// CreateWebhookEndpoint registers a webhook endpoint
// (createWebhookEndpoint). The answer's Secret is shown this once.
func (c *Client) CreateWebhookEndpoint(ctx context.Context, p *CreateWebhookEndpointParams) (*WebhookEndpoint, error) {
	return call(ctx, c, http.MethodPost, "/v1/webhook_endpoints", p, func(e *webhookEndpointEnvelope) *WebhookEndpoint { return &e.WebhookEndpoint })
}

// GetWebhookEndpoint reads a webhook endpoint (getWebhookEndpoint).
func (c *Client) GetWebhookEndpoint(ctx context.Context, id string) (*WebhookEndpoint, error) {
	return call(ctx, c, http.MethodGet, "/v1/webhook_endpoints/"+url.PathEscape(id), nil, func(e *webhookEndpointEnvelope) *WebhookEndpoint { return &e.WebhookEndpoint })
}

// DeleteWebhookEndpoint deletes a webhook endpoint
// (deleteWebhookEndpoint). It is retried like every call, so when a
// first attempt deleted the endpoint but its answer was lost, the answer
// is the retry's 404 webhook_endpoint_not_found.
func (c *Client) DeleteWebhookEndpoint(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/webhook_endpoints/"+url.PathEscape(id), nil, nil)
}

// ListWebhookDeliveries reads an endpoint's delivery attempts, newest
// first (listWebhookDeliveries); p may be nil.
func (c *Client) ListWebhookDeliveries(ctx context.Context, endpointID string, p *ListWebhookDeliveriesParams) ([]WebhookDelivery, error) {
	path := "/v1/webhook_endpoints/" + url.PathEscape(endpointID) + "/deliveries" + encodeQuery(p)
	return call(ctx, c, http.MethodGet, path, nil, func(e *deliveriesEnvelope) []WebhookDelivery { return e.Deliveries })
}

// ResendWebhookEvent delivers an event to an endpoint again, as a new
// delivery (resendWebhookEvent).
func (c *Client) ResendWebhookEvent(ctx context.Context, endpointID, eventID string) (*Resend, error) {
	path := "/v1/webhook_endpoints/" + url.PathEscape(endpointID) + "/deliveries/" + url.PathEscape(eventID) + "/resend"
	return call(ctx, c, http.MethodPost, path, nil, func(e *resendEnvelope) *Resend { return &e.Delivery })
}

// GetOpenAPIDocument reads the OpenAPI document the service serves
// (getOpenAPIDocument), as it is.
func (c *Client) GetOpenAPIDocument(ctx context.Context) (json.RawMessage, error) {
	return call(ctx, c, http.MethodGet, "/v1/openapi.json", nil, func(e *json.RawMessage) json.RawMessage { return *e })
}

// call does an operation whose answer decodes into an E and returns what
// pick takes out of it: the resource inside its envelope, or the E itself.
func call[E, T any](ctx context.Context, c *Client, method, path string, body any, pick func(*E) T) (T, error) {
	var out E
	if err := c.do(ctx, method, path, body, &out); err != nil {
		var zero T
		return zero, err
	}
	return pick(&out), nil
}

// itself is the pick of call for an answer that is the resource.
func itself[T any](t *T) *T { return t }
