package loadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Client speaks Memocart's HTTP API with one key, over a pool of
// keep-alive connections sized for the load, to one API replica or
// several.
type Client struct {
	bases []string
	next  atomic.Uint64
	auth  string
	hc    *http.Client
}

// NewClient returns a client of the API replicas at bases (http://host:port
// each; at least one) that keeps up to conns connections open to each.
// Requests go to the replicas in turn, one request each (round robin per
// request, not per connection), so the load is spread evenly whatever the
// callers do: a closed loop of conns goroutines, an open loop, or an order
// created through one replica and paid through the next, as behind a load
// balancer.
func NewClient(bases []string, key string, conns int) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns * len(bases),
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     time.Minute,
	}
	c := &Client{auth: "Bearer " + key, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	for _, b := range bases {
		c.bases = append(c.bases, strings.TrimRight(b, "/"))
	}
	return c
}

// base returns the replica the next request goes to.
func (c *Client) base() string {
	if len(c.bases) == 1 {
		return c.bases[0]
	}
	return c.bases[(c.next.Add(1)-1)%uint64(len(c.bases))]
}

// Close closes idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// do sends one request and decodes a JSON answer of status want into out
// (nil: the body is read and dropped).
func (c *Client) do(ctx context.Context, method, path string, body []byte, header map[string]string, want int, out any) error {
	return c.doAt(ctx, c.base(), method, path, body, header, want, out)
}

// doAt is do at one replica.
func (c *Client) doAt(ctx context.Context, base, method, path string, body []byte, header map[string]string, want int, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", c.auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return &StatusError{Request: method + " " + base + path, Status: res.StatusCode, Body: string(bytes.TrimSpace(b))}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// StatusError is an answer of another status than the one expected.
type StatusError struct {
	Request string // e.g. "POST http://127.0.0.1:17081/v1/orders"
	Status  int
	Body    string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %d %s", e.Request, e.Status, e.Body) }

// Unavailable reports whether err is a 503 answer: the API's word for
// "retry the same request" (an order saved whose workflow could not be
// started within the request's time, a dependency down).
func Unavailable(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusServiceUnavailable
}

// NewIdempotencyKey returns a fresh Idempotency-Key, as a client makes one
// per operation and sends it again with each retry of that operation.
func NewIdempotencyKey() string {
	var k [16]byte
	_, _ = rand.Read(k[:])
	return hex.EncodeToString(k[:])
}

// SandboxProductURL is a product the sandbox catalog prices.
const SandboxProductURL = "https://www.amazon.com/dp/B08N5WRWNW"

// CreateCart creates a one-item test cart and returns its id.
func (c *Client) CreateCart(ctx context.Context) (string, error) {
	body := []byte(`{"items":[{"product_url":"` + SandboxProductURL + `","quantity":1}],"ship_to_country":"US","ship_to_postal_code":"94107"}`)
	var out struct {
		Cart struct {
			ID string `json:"id"`
		} `json:"cart"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/carts", body, nil, http.StatusCreated, &out); err != nil {
		return "", err
	}
	return out.Cart.ID, nil
}

// Order is what the load tool keeps of a created order.
type Order struct {
	ID     string
	Number string
}

// CreateOrder turns a cart into an order paid in USDC, with a fresh
// idempotency key as a client would send.
func (c *Client) CreateOrder(ctx context.Context, cartID string) (Order, error) {
	return c.CreateOrderWithKey(ctx, cartID, NewIdempotencyKey())
}

// CreateOrderWithKey is CreateOrder under the Idempotency-Key idemKey: a
// retry with the same key is the same order.
func (c *Client) CreateOrderWithKey(ctx context.Context, cartID, idemKey string) (Order, error) {
	body := []byte(`{"cart_id":"` + cartID + `","customer_email":"load@example.com","payment_asset":"USDC",` +
		`"shipping_address":{"name":"Load Test","phone":"+1 415 555 0100","line1":"1 Market St",` +
		`"city":"San Francisco","region":"CA","postal_code":"94107","country":"US"}}`)
	var out struct {
		Order struct {
			ID     string `json:"id"`
			Number string `json:"number"`
		} `json:"order"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/orders", body, map[string]string{"Idempotency-Key": idemKey}, http.StatusCreated, &out)
	if err != nil {
		return Order{}, err
	}
	return Order{ID: out.Order.ID, Number: out.Order.Number}, nil
}

// GetOrder reads an order and drops the answer.
func (c *Client) GetOrder(ctx context.Context, ref string) error {
	return c.do(ctx, http.MethodGet, "/v1/orders/"+ref, nil, nil, http.StatusOK, nil)
}

// OrderStatus reads an order's status.
func (c *Client) OrderStatus(ctx context.Context, ref string) (string, error) {
	var out struct {
		Order struct {
			Status string `json:"status"`
		} `json:"order"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/orders/"+ref, nil, nil, http.StatusOK, &out)
	return out.Order.Status, err
}

// Pay pays an order in full through the sandbox's test helper (POST
// /v1/test_helpers/orders/{id}/payments, test keys only) under the
// Idempotency-Key idemKey, so that a retry is the same payment and never a
// second one, and returns the outcome the helper reports: "matched" when
// the payment reached the order's workflow.
func (c *Client) Pay(ctx context.Context, ref, idemKey string) (string, error) {
	var out struct {
		Payment struct {
			Outcome string `json:"outcome"`
		} `json:"payment"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/test_helpers/orders/"+ref+"/payments", nil, map[string]string{"Idempotency-Key": idemKey}, http.StatusCreated, &out)
	return out.Payment.Outcome, err
}

// Health is GET /healthz: no authentication, no database, the same HTTP
// stack. Its rate is the most any endpoint of the service can serve.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, http.StatusOK, nil)
}

// WaitReady polls each replica's GET /readyz until it answers 200 or ctx
// ends.
func (c *Client) WaitReady(ctx context.Context) error {
	for _, base := range c.bases {
		for {
			err := c.doAt(ctx, base, http.MethodGet, "/readyz", nil, nil, http.StatusOK, nil)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("API at %s not ready: %w", base, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
