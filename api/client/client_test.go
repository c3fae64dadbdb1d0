package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeAPI is an httptest server whose handler answers each request with
// the next of its answers (the last one repeated), recording what came.
type fakeAPI struct {
	mu       sync.Mutex
	answers  []answer
	requests []recorded
}

// answer is one canned answer; hangUp drops the connection instead.
type answer struct {
	status  int
	body    string
	headers map[string]string
	hangUp  bool
}

type recorded struct {
	method, path, query, idemKey, auth, body string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery,
		r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"), string(body)})
	a := f.answers[min(len(f.requests), len(f.answers))-1]
	f.mu.Unlock()
	if a.hangUp {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range a.headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *fakeAPI) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

// newFake starts a fake API answering answers in turn and a client of it
// with fast backoff; opts come after the defaults.
func newFake(t *testing.T, answers []answer, opts ...Option) (*fakeAPI, *Client) {
	t.Helper()
	f := &fakeAPI{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	opts = append([]Option{WithBaseURL(srv.URL), WithBackoff(time.Millisecond, 4*time.Millisecond)}, opts...)
	return f, New("mc_test_key", opts...)
}

const cartBody = `{"cart":{"id":"crt_AAAAAAAAAAAAAAAAAAAAAAAA","status":"ready","currency":"USD",
 "subtotal":10.00,"shipping":5.00,"tax":0.80,"service_fee":0.50,"total":16.30,"ship_to_country":"US",
 "created_at":"2026-11-22T00:20:17Z","expires_at":"2026-11-22T00:50:17Z","metadata":{},
 "items":[{"product_url":"https://www.amazon.com/dp/B08N5WRWNW","marketplace":"amazon","product_id":"B08N5WRWNW",
  "title":"A thing","image_url":"https://example.com/a.jpg","quantity":1,"unit_price":"10.00","line_total":10.00}]}}`

var cartParams = &CreateCartParams{
	Items:         []CartItemParams{{ProductURL: "https://www.amazon.com/dp/B08N5WRWNW", Quantity: 1}},
	ShipToCountry: "US",
}

func unavailable(retryAfter string) answer {
	a := answer{status: 503, body: `{"error":{"code":"service_unavailable","message":"Try again."}}`}
	if retryAfter != "" {
		a.headers = map[string]string{"Retry-After": retryAfter}
	}
	return a
}

// TestRetriesReuseTheIdempotencyKey: a POST failed by a 5xx, a 429 and a
// dropped connection is sent again with the same key and body, and the
// next POST draws another key.
func TestRetriesReuseTheIdempotencyKey(t *testing.T) {
	f, c := newFake(t, []answer{
		unavailable(""),
		{status: 429, body: `{"error":{"code":"rate_limited","message":"Slow down."}}`, headers: map[string]string{"Retry-After": "0"}},
		{hangUp: true},
		{status: 201, body: cartBody},
	}, WithRetryBudget(5, time.Minute))
	cart, err := c.CreateCart(context.Background(), cartParams)
	if err != nil {
		t.Fatal(err)
	}
	if cart.ID != "crt_AAAAAAAAAAAAAAAAAAAAAAAA" || cart.Total.String() != "16.3" || cart.Items[0].UnitPrice.String() != "10" {
		t.Errorf("cart = %+v", cart)
	}
	reqs := f.recorded()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4 (three retries)", len(reqs))
	}
	key := reqs[0].idemKey
	if len(key) < 20 {
		t.Errorf("Idempotency-Key %q: want a random key of 128 bits", key)
	}
	for i, r := range reqs {
		if r.idemKey != key || r.body != reqs[0].body || r.method != "POST" || r.path != "/v1/carts" {
			t.Errorf("attempt %d: %+v; want the first attempt's key %q and body", i+1, r, key)
		}
		if r.auth != "Bearer mc_test_key" {
			t.Errorf("attempt %d: Authorization %q", i+1, r.auth)
		}
	}

	f.mu.Lock()
	f.answers = []answer{{status: 201, body: cartBody}}
	f.mu.Unlock()
	if _, err := c.CreateCart(context.Background(), cartParams); err != nil {
		t.Fatal(err)
	}
	if next := f.recorded()[4].idemKey; next == "" || next == key {
		t.Errorf("the next POST's key is %q; want a new one (the first was %q)", next, key)
	}
}

// TestGetsSendNoIdempotencyKey: the key is for POSTs; GETs are retried
// without one.
func TestGetsSendNoIdempotencyKey(t *testing.T) {
	f, c := newFake(t, []answer{unavailable(""), {status: 200, body: cartBody}})
	if _, err := c.GetCart(context.Background(), "crt_AAAAAAAAAAAAAAAAAAAAAAAA"); err != nil {
		t.Fatal(err)
	}
	reqs := f.recorded()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.idemKey != "" || r.method != "GET" || r.path != "/v1/carts/crt_AAAAAAAAAAAAAAAAAAAAAAAA" {
			t.Errorf("request %+v", r)
		}
	}
}

// TestRetryAfterIsHonoured: the wait after a 429 is its Retry-After, not
// the (here 1 ms) backoff.
func TestRetryAfterIsHonoured(t *testing.T) {
	f, c := newFake(t, []answer{
		{status: 429, body: `{"error":{"code":"rate_limited","message":"Slow down."}}`, headers: map[string]string{"Retry-After": "1"}},
		{status: 200, body: cartBody},
	})
	start := time.Now()
	if _, err := c.GetCart(context.Background(), "crt_AAAAAAAAAAAAAAAAAAAAAAAA"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("retried after %v; Retry-After said 1 s", d)
	}
	if n := len(f.recorded()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestRetryBudget: retries stop at the attempts budget, and before a wait
// that would end past the time budget; the last answer is the error.
func TestRetryBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   answer
		attempts int
		elapsed  time.Duration
		want     int
		maxTime  time.Duration
	}{
		{"attempts", unavailable(""), 3, time.Minute, 3, 5 * time.Second},
		{"time", unavailable("1"), 10, 1500 * time.Millisecond, 2, 1500 * time.Millisecond},
		{"one attempt", unavailable(""), 1, time.Minute, 1, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t, []answer{tc.answer}, WithRetryBudget(tc.attempts, tc.elapsed))
			start := time.Now()
			_, err := c.GetCart(context.Background(), "crt_AAAAAAAAAAAAAAAAAAAAAAAA")
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != CodeServiceUnavailable {
				t.Fatalf("err = %v; want the last 503", err)
			}
			if n := len(f.recorded()); n != tc.want {
				t.Errorf("%d requests, want %d", n, tc.want)
			}
			if d := time.Since(start); d > tc.maxTime {
				t.Errorf("took %v, over the budget of %v", d, tc.maxTime)
			}
		})
	}
}

// TestRetryWhileTheKeyIsInUse: a 409 idempotency_key_in_use (an earlier
// attempt still being processed) is retried after its Retry-After, under
// the same key.
func TestRetryWhileTheKeyIsInUse(t *testing.T) {
	f, c := newFake(t, []answer{
		{status: 409, body: `{"error":{"code":"idempotency_key_in_use","message":"In use."}}`, headers: map[string]string{"Retry-After": "0"}},
		{status: 201, body: cartBody},
	})
	if _, err := c.CreateCart(context.Background(), cartParams); err != nil {
		t.Fatal(err)
	}
	reqs := f.recorded()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; want the 409 retried once", len(reqs))
	}
	if k0, k1 := reqs[0].idemKey, reqs[1].idemKey; k0 == "" || k0 != k1 {
		t.Errorf("keys %q and %q: the retry must reuse the key", k0, k1)
	}
}

// TestNoRetryOn4xx: a 4xx other than 429 (and a key in use) is final,
// whatever it carries.
func TestNoRetryOn4xx(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 405, 409, 415, 422} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f, c := newFake(t, []answer{
				{status: status, body: `{"error":{"code":"invalid_request","message":"No."}}`, headers: map[string]string{"Retry-After": "1"}},
				{status: 201, body: cartBody},
			})
			_, err := c.CreateCart(context.Background(), cartParams)
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != status {
				t.Fatalf("err = %v; want the %d", err, status)
			}
			if n := len(f.recorded()); n != 1 {
				t.Errorf("%d requests; a %d must not be retried", n, status)
			}
		})
	}
}

// TestErrorIsTyped: an error answer is an *Error with the envelope's
// code, message and field, and the request id.
func TestErrorIsTyped(t *testing.T) {
	field := "shipping_address.postal_code"
	for _, tc := range []struct {
		name string
		a    answer
		want Error
	}{
		{"with field", answer{status: 422, body: `{"error":{"code":"invalid_address","message":"Bad ZIP.","field":"shipping_address.postal_code"}}` + "\n",
			headers: map[string]string{"X-Request-Id": "req-1"}},
			Error{StatusCode: 422, Code: CodeInvalidAddress, Message: "Bad ZIP.", Field: &field, RequestID: "req-1"}},
		{"without field", answer{status: 404, body: `{"error":{"code":"order_not_found","message":"No such order."}}`,
			headers: map[string]string{"X-Request-Id": "req-2"}},
			Error{StatusCode: 404, Code: CodeOrderNotFound, Message: "No such order.", RequestID: "req-2"}},
		{"outside the envelope", answer{status: 431, body: "431 Request Header Fields Too Large"},
			Error{StatusCode: 431, Message: "Request Header Fields Too Large"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := newFake(t, []answer{tc.a})
			_, err := c.GetOrder(context.Background(), "32205377465")
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("err = %#v; want an *Error", err)
			}
			if got.StatusCode != tc.want.StatusCode || got.Code != tc.want.Code || got.Message != tc.want.Message ||
				got.RequestID != tc.want.RequestID || (got.Field == nil) != (tc.want.Field == nil) ||
				(got.Field != nil && *got.Field != *tc.want.Field) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got.Error() == "" {
				t.Error("empty message")
			}
		})
	}
}

// TestCancelStopsTheWait: a cancelled context ends a retry's wait at
// once, not after the Retry-After.
func TestCancelStopsTheWait(t *testing.T) {
	_, c := newFake(t, []answer{unavailable("30")}, WithRetryBudget(5, time.Hour))
	stopsAtDeadline(t, func(ctx context.Context) error {
		_, err := c.GetCart(ctx, "crt_AAAAAAAAAAAAAAAAAAAAAAAA")
		return err
	})
}

// stopsAtDeadline checks that call, given a context ending in 50 ms,
// returns the context's error at once rather than after its waits.
func stopsAtDeadline(t *testing.T, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := call(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v; want the context's", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v; the context ended at 50 ms", d)
	}
}

// TestBadAnswerIsNotRetried: a 2xx that does not decode would come back
// the same.
func TestBadAnswerIsNotRetried(t *testing.T) {
	f, c := newFake(t, []answer{{status: 200, body: `{"cart":{"total":"lots"}}`}})
	if _, err := c.GetCart(context.Background(), "crt_AAAAAAAAAAAAAAAAAAAAAAAA"); err == nil {
		t.Fatal("no error for an undecodable answer")
	}
	if n := len(f.recorded()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestBackoffGrowsAndIsBounded: the wait without Retry-After doubles from
// the first to the limit, within its jitter.
func TestBackoffGrowsAndIsBounded(t *testing.T) {
	c := New("mc_live_key", WithBackoff(100*time.Millisecond, time.Second))
	for n, ceiling := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		4: 800 * time.Millisecond, 5: time.Second, 30: time.Second} {
		for range 20 {
			if d := c.backoff(n); d < ceiling/2 || d > ceiling {
				t.Errorf("backoff(%d) = %v, want between %v and %v", n, d, ceiling/2, ceiling)
			}
		}
	}
}

// TestQueryParameters: list filters are sent under the contract's names,
// times in UTC, zero fields not at all.
func TestQueryParameters(t *testing.T) {
	at := time.Date(2026, 11, 21, 23, 27, 27, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		params any
		want   string
	}{
		{nil, ""},
		{&ListOrdersParams{}, ""},
		{&ListOrdersParams{Status: OrderPaid, CreatedGTE: at, Limit: 5},
			"?created%5Bgte%5D=2026-11-21T22%3A27%3A27Z&limit=5&status=paid"},
		{&ListEventsParams{Types: []EventType{EventOrderPaid, EventRefundSent}, Order: "32205377465", EndingBefore: "evt_1"},
			"?ending_before=evt_1&order=32205377465&type=order.paid%2Crefund.sent"},
	} {
		var got string
		if tc.params == nil {
			got = encodeQuery((*ListOrdersParams)(nil))
		} else {
			got = encodeQuery(tc.params)
		}
		if got != tc.want {
			t.Errorf("encodeQuery(%+v) = %q, want %q", tc.params, got, tc.want)
		}
	}
}
