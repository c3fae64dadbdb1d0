// Package client is the Go client of the Memocart API: a typed method for
// every operation under /v1 of api/openapi.json, retries that are safe
// (an Idempotency-Key per POST, reused by its retries), iterators over the
// paginated lists, a wait for an order's status, and the verification of
// webhook deliveries.
//
// It is its own module and imports nothing of the service: the standard
// library and shopspring/decimal only, so an application can depend on it
// without the service's dependencies. contract_test.go keeps it in step
// with api/openapi.json.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultBaseURL is the address `make run` serves the API on.
const DefaultBaseURL = "http://127.0.0.1:8080"

// TestKeyPrefix starts every test-mode API key (the sandbox); live keys
// start with "mc_live_".
const TestKeyPrefix = "mc_test_"

// The default retry budget: a request is sent at most DefaultMaxAttempts
// times, and no retry starts more than DefaultMaxElapsed after the first
// attempt. Between attempts the client waits the answer's Retry-After, or
// else an exponential backoff from 500 ms doubling to 8 s, jittered.
const (
	DefaultMaxAttempts = 4
	DefaultMaxElapsed  = 30 * time.Second
)

const (
	defaultBackoffMin = 500 * time.Millisecond
	defaultBackoffMax = 8 * time.Second
)

// The default polling interval of WaitForOrderStatus: in live mode a
// random wait between 30 and 60 s (orders move in minutes to days, and
// many waiting clients should not poll in step); in test mode about 2 s,
// as the sandbox moves an order along in seconds.
const (
	DefaultLivePollMin = 30 * time.Second
	DefaultLivePollMax = 60 * time.Second
	DefaultTestPollMin = 1500 * time.Millisecond
	DefaultTestPollMax = 2500 * time.Millisecond
)

// DefaultTimeout bounds each attempt of the default HTTP client, so a
// connection that hangs is retried rather than waited on for good. The
// service answers within its own request deadline (10 s by default).
const DefaultTimeout = 30 * time.Second

// Client calls the Memocart API with one API key. It is safe for
// concurrent use.
type Client struct {
	apiKey      string
	baseURL     string
	http        *http.Client
	maxAttempts int
	maxElapsed  time.Duration
	backoffMin  time.Duration
	backoffMax  time.Duration
	pollMin     time.Duration
	pollMax     time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithBaseURL sets the API's address, e.g. "https://api.example.com"
// (DefaultBaseURL otherwise).
func WithBaseURL(u string) Option {
	return func(c *Client) { c.baseURL = strings.TrimRight(u, "/") }
}

// WithHTTPClient sets the HTTP client requests go through (one with
// DefaultTimeout otherwise). Its Timeout, if any, bounds each attempt; the
// context bounds the whole call.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) { c.http = h }
}

// WithRetryBudget bounds retries: at most attempts sends of a request
// (1: never retry), and no retry begun later than maxElapsed after the
// first attempt, nor one whose wait would end past it.
func WithRetryBudget(attempts int, maxElapsed time.Duration) Option {
	return func(c *Client) {
		c.maxAttempts = max(attempts, 1)
		c.maxElapsed = maxElapsed
	}
}

// WithBackoff sets the wait between attempts when the answer has no
// Retry-After: first before the first retry, doubling up to limit.
func WithBackoff(first, limit time.Duration) Option {
	return func(c *Client) { c.backoffMin, c.backoffMax = first, max(first, limit) }
}

// WithPollInterval sets how long WaitForOrderStatus waits between reads
// of the order: a random duration between lo and hi.
func WithPollInterval(lo, hi time.Duration) Option {
	return func(c *Client) { c.pollMin, c.pollMax = lo, max(lo, hi) }
}

// New returns a client that authenticates with apiKey. The polling
// default depends on the key's mode: see DefaultTestPollMin.
func New(apiKey string, opts ...Option) *Client {
	c := &Client{
		apiKey:      apiKey,
		baseURL:     DefaultBaseURL,
		http:        &http.Client{Timeout: DefaultTimeout},
		maxAttempts: DefaultMaxAttempts,
		maxElapsed:  DefaultMaxElapsed,
		backoffMin:  defaultBackoffMin,
		backoffMax:  defaultBackoffMax,
		pollMin:     DefaultLivePollMin,
		pollMax:     DefaultLivePollMax,
	}
	if strings.HasPrefix(apiKey, TestKeyPrefix) {
		c.pollMin, c.pollMax = DefaultTestPollMin, DefaultTestPollMax
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// newIdempotencyKey draws a key for one POST: 26 characters of base32,
// 128 random bits.
func newIdempotencyKey() string {
	return rand.Text()
}

// do sends a request and decodes a 2xx answer's body into out (when out
// is not nil). A POST gets one Idempotency-Key, sent again with each of
// its retries, so the service runs it at most once. body nil sends none.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("memocart: encoding the request: %w", err)
		}
	}
	var idemKey string
	if method == http.MethodPost {
		idemKey = newIdempotencyKey()
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		resp, err := c.send(ctx, method, path, payload, idemKey)
		var retryAfter time.Duration
		if err == nil {
			var apiErr *Error
			apiErr, retryAfter, err = c.read(resp, out)
			if apiErr != nil {
				err = apiErr
				if !apiErr.retryable() {
					return err
				}
			} else if _, bad := err.(*decodeError); bad || err == nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := retryAfter
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		if attempt >= c.maxAttempts || time.Since(start)+wait > c.maxElapsed {
			return err
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// send makes one attempt. Errors are the transport's (retryable).
func (c *Client) send(ctx context.Context, method, path string, payload []byte, idemKey string) (*http.Response, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "memocart-go")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	return c.http.Do(req)
}

// read consumes an answer: a 2xx is decoded into out; any other status is
// an *Error, with the Retry-After it carried (seconds). A body cut short
// is a plain error, retried like a dropped connection.
func (c *Client) read(resp *http.Response, out any) (*Error, time.Duration, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("memocart: reading the answer: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil || resp.StatusCode == http.StatusNoContent {
			return nil, 0, nil
		}
		if err := json.Unmarshal(b, out); err != nil {
			return nil, 0, &decodeError{err}
		}
		return nil, 0, nil
	}
	apiErr := &Error{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	var env errorEnvelope
	if json.Unmarshal(b, &env) == nil && env.Error.Code != "" {
		apiErr.Code, apiErr.Message, apiErr.Field = env.Error.Code, env.Error.Message, env.Error.Field
	} else {
		apiErr.Message = http.StatusText(resp.StatusCode)
	}
	var retryAfter time.Duration
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s >= 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return apiErr, retryAfter, nil
}

// decodeError is a 2xx answer whose body is not what the contract says.
// It is not retried: the same answer would come back.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return "memocart: decoding the answer: " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// backoff is the wait before retry n (1-based) without a Retry-After:
// backoffMin doubling per retry up to backoffMax, of which a random half
// is dropped so that clients failed by one outage do not retry in step.
func (c *Client) backoff(n int) time.Duration {
	d := c.backoffMin
	for i := 1; i < n && d < c.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.backoffMax)
	if d <= 1 {
		return d
	}
	return d/2 + mrand.N(d/2)
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
