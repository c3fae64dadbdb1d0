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
	var out productEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/products/preview", p, &out); err != nil {
		return nil, err
	}
	return &out.Product, nil
}

// CreateCart prices a cart (createCart).
func (c *Client) CreateCart(ctx context.Context, p *CreateCartParams) (*Cart, error) {
	var out cartEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/carts", p, &out); err != nil {
		return nil, err
	}
	return &out.Cart, nil
}

// GetCart reads a cart by its id (getCart).
func (c *Client) GetCart(ctx context.Context, id string) (*Cart, error) {
	var out cartEnvelope
	if err := c.do(ctx, http.MethodGet, "/v1/carts/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out.Cart, nil
}

// CreateOrder orders a cart (createOrder). One cart makes one order: the
// same request again returns the same order.
func (c *Client) CreateOrder(ctx context.Context, p *CreateOrderParams) (*CreatedOrder, error) {
	var out createdOrderEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/orders", p, &out); err != nil {
		return nil, err
	}
	return &out.Order, nil
}

// GetOrder reads an order by its id or number (getOrder).
func (c *Client) GetOrder(ctx context.Context, ref string) (*Order, error) {
	var out orderEnvelope
	if err := c.do(ctx, http.MethodGet, "/v1/orders/"+url.PathEscape(ref), nil, &out); err != nil {
		return nil, err
	}
	return &out.Order, nil
}

// ListOrders reads one page of the account's orders, newest first
// (listOrders). Orders iterates over every page.
func (c *Client) ListOrders(ctx context.Context, p *ListOrdersParams) (*OrderList, error) {
	var out OrderList
	if err := c.do(ctx, http.MethodGet, "/v1/orders"+encodeQuery(p), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelOrder cancels an order still waiting for payment (cancelOrder);
// p may be nil. Cancelling a cancelled order returns it as it is.
func (c *Client) CancelOrder(ctx context.Context, ref string, p *CancelOrderParams) (*Order, error) {
	if p == nil {
		p = &CancelOrderParams{}
	}
	var out orderEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/orders/"+url.PathEscape(ref)+"/cancel", p, &out); err != nil {
		return nil, err
	}
	return &out.Order, nil
}

// SetOrderRefundDestination says where the money an order owes back goes
// (setOrderRefundDestination).
func (c *Client) SetOrderRefundDestination(ctx context.Context, ref string, p *RefundDestinationParams) (*Order, error) {
	var out orderEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/orders/"+url.PathEscape(ref)+"/refund_destination", p, &out); err != nil {
		return nil, err
	}
	return &out.Order, nil
}

// ListRefunds reads one page of the account's refunds, newest first
// (listRefunds). Refunds iterates over every page.
func (c *Client) ListRefunds(ctx context.Context, p *ListRefundsParams) (*RefundList, error) {
	var out RefundList
	if err := c.do(ctx, http.MethodGet, "/v1/refunds"+encodeQuery(p), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetRefund reads a refund by its id (getRefund).
func (c *Client) GetRefund(ctx context.Context, id string) (*Refund, error) {
	var out refundEnvelope
	if err := c.do(ctx, http.MethodGet, "/v1/refunds/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out.Refund, nil
}

// CreateTestPayment pays a test-mode order in the sandbox
// (createTestPayment); p may be nil for the full amount. Its retries
// reuse one Idempotency-Key, so they are the same payment, never a
// second one.
func (c *Client) CreateTestPayment(ctx context.Context, ref string, p *CreateTestPaymentParams) (*TestPayment, error) {
	if p == nil {
		p = &CreateTestPaymentParams{}
	}
	var out testPaymentEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/payments", p, &out); err != nil {
		return nil, err
	}
	return &out.Payment, nil
}

// ExpireTestOrder makes a test-mode order's payment deadline pass now
// (expireTestOrder): the order comes back cancelled as its deadline would
// cancel it; one no longer awaiting payment is an *Error of code
// CodeInvalidOrderState.
func (c *Client) ExpireTestOrder(ctx context.Context, ref string) (*Order, error) {
	var out orderEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/expire", nil, &out); err != nil {
		return nil, err
	}
	return &out.Order, nil
}

// AdvanceTestOrder makes the sandbox provider's next fulfilment step of
// a test-mode order happen now (advanceTestOrder): paid becomes ordered,
// ordered shipped, shipped delivered. An order with no next step
// (awaiting payment, or ended) is an *Error of code CodeInvalidOrderState.
func (c *Client) AdvanceTestOrder(ctx context.Context, ref string) (*Order, error) {
	var out orderEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/advance", nil, &out); err != nil {
		return nil, err
	}
	return &out.Order, nil
}

// FailTestOrder makes a test-mode order's sourcing fail now
// (failTestOrder), for p's reason (nil p: the service's default): the
// order comes back failed, its payment due back. An order not paid, or
// shipped or ended, is an *Error of code CodeInvalidOrderState.
func (c *Client) FailTestOrder(ctx context.Context, ref string, p *FailTestOrderParams) (*Order, error) {
	if p == nil {
		p = &FailTestOrderParams{}
	}
	var out orderEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/test_helpers/orders/"+url.PathEscape(ref)+"/fail", p, &out); err != nil {
		return nil, err
	}
	return &out.Order, nil
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
	var out refundEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/test_helpers/refunds/"+url.PathEscape(id)+"/fail", p, &out); err != nil {
		return nil, err
	}
	return &out.Refund, nil
}

// ListEvents reads one page of the account's events, newest first
// (listEvents). Events and EventsAfter iterate over every page.
func (c *Client) ListEvents(ctx context.Context, p *ListEventsParams) (*EventList, error) {
	var out EventList
	if err := c.do(ctx, http.MethodGet, "/v1/events"+encodeQuery(p), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetEvent reads an event by its id (getEvent): the body its webhook
// delivery sends.
func (c *Client) GetEvent(ctx context.Context, id string) (*Event, error) {
	var out Event
	if err := c.do(ctx, http.MethodGet, "/v1/events/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListWebhookEndpoints reads the account's webhook endpoints in the key's
// mode, without their secrets (listWebhookEndpoints).
func (c *Client) ListWebhookEndpoints(ctx context.Context) ([]WebhookEndpoint, error) {
	var out webhookEndpointsEnvelope
	if err := c.do(ctx, http.MethodGet, "/v1/webhook_endpoints", nil, &out); err != nil {
		return nil, err
	}
	return out.WebhookEndpoints, nil
}

// CreateWebhookEndpoint registers a webhook endpoint
// (createWebhookEndpoint). The answer's Secret is shown this once.
func (c *Client) CreateWebhookEndpoint(ctx context.Context, p *CreateWebhookEndpointParams) (*WebhookEndpoint, error) {
	var out webhookEndpointEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/webhook_endpoints", p, &out); err != nil {
		return nil, err
	}
	return &out.WebhookEndpoint, nil
}

// GetWebhookEndpoint reads a webhook endpoint (getWebhookEndpoint).
func (c *Client) GetWebhookEndpoint(ctx context.Context, id string) (*WebhookEndpoint, error) {
	var out webhookEndpointEnvelope
	if err := c.do(ctx, http.MethodGet, "/v1/webhook_endpoints/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out.WebhookEndpoint, nil
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
	var out deliveriesEnvelope
	path := "/v1/webhook_endpoints/" + url.PathEscape(endpointID) + "/deliveries" + encodeQuery(p)
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return out.Deliveries, nil
}

// ResendWebhookEvent delivers an event to an endpoint again, as a new
// delivery (resendWebhookEvent).
func (c *Client) ResendWebhookEvent(ctx context.Context, endpointID, eventID string) (*Resend, error) {
	var out resendEnvelope
	path := "/v1/webhook_endpoints/" + url.PathEscape(endpointID) + "/deliveries/" + url.PathEscape(eventID) + "/resend"
	if err := c.do(ctx, http.MethodPost, path, nil, &out); err != nil {
		return nil, err
	}
	return &out.Delivery, nil
}

// GetOpenAPIDocument reads the OpenAPI document the service serves
// (getOpenAPIDocument), as it is.
func (c *Client) GetOpenAPIDocument(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/v1/openapi.json", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}
