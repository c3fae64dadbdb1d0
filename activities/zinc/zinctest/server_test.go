package zinctest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/zinc"
	"github.com/memocart/memocart/activities/zinc/zinctest"
)

func newServer(t *testing.T, opts ...zinctest.Option) *zinctest.Server {
	t.Helper()
	s := zinctest.New(opts...)
	t.Cleanup(s.Close)
	return s
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (a answer) errorCode() string {
	e, _ := a.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (a answer) errorDetails() map[string]any {
	e, _ := a.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

// call sends body (JSON, or a string as it is) with the bearer key, as
// Zinc's clients do.
func call(t *testing.T, s *zinctest.Server, method, path, key string, body any) answer {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	return callWith(t, s, method, path, h, body)
}

// callWith sends body with exactly the headers h.
func callWith(t *testing.T, s *zinctest.Server, method, path string, h http.Header, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, ok := body.(string)
		if !ok {
			b, err := json.Marshal(body)
			require.NoError(t, err)
			raw = string(b)
		}
		rd = strings.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, rd)
	require.NoError(t, err)
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if len(data) > 0 {
		require.NoError(t, json.Unmarshal(data, &a.body), string(data))
	}
	return a
}

// validOrder is a POST /orders body the server accepts.
func validOrder() map[string]any {
	return map[string]any{
		"products":  []any{map[string]any{"url": "https://www.amazon.com/dp/B07JGBW826", "quantity": 1}},
		"max_price": 3125,
		"shipping_address": map[string]any{
			"first_name": "Ada", "last_name": "Lovelace", "address_line1": "12 St James's Square",
			"city": "New York", "state": "NY", "postal_code": "10001", "phone_number": "+1 212 555 0100", "country": "US",
		},
		"idempotency_key": "ord_0123456789abcdefghijklmn",
		"metadata":        map[string]any{"memocart_order_id": "ord_0123456789abcdefghijklmn", "attempt": 1},
	}
}

func TestAuthentication(t *testing.T) {
	s := newServer(t)
	tests := []struct {
		name, key string
		status    int
		code      string
	}{
		{"no key", "", http.StatusUnauthorized, "unauthorized"},
		{"wrong key", "zn_live_nope", http.StatusUnauthorized, "invalid_token"},
		{"the server's key", zinctest.DefaultAPIKey, http.StatusNotFound, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, s, http.MethodGet, "/orders/unknown", tt.key, nil)
			assert.Equal(t, tt.status, a.status)
			assert.Equal(t, tt.code, a.errorCode())
		})
	}
	// The key in another scheme: the legacy v1 API's HTTP Basic with the
	// key as user name, or no scheme at all.
	basic, _ := http.NewRequest(http.MethodGet, "/", nil)
	basic.SetBasicAuth(zinctest.DefaultAPIKey, "")
	for name, auth := range map[string]string{
		"HTTP Basic": basic.Header.Get("Authorization"),
		"no scheme":  zinctest.DefaultAPIKey,
		"Token":      "Token " + zinctest.DefaultAPIKey,
	} {
		t.Run(name, func(t *testing.T) {
			a := callWith(t, s, http.MethodGet, "/orders/unknown", http.Header{"Authorization": {auth}}, nil)
			assert.Equal(t, http.StatusUnauthorized, a.status)
			assert.Equal(t, "invalid_token", a.errorCode())
			assert.Nil(t, a.body["error"].(map[string]any)["details"], "details are null without field context")
		})
	}

	custom := newServer(t, zinctest.WithAPIKey("zn_live_custom"))
	assert.Equal(t, "zn_live_custom", custom.APIKey())
	assert.Equal(t, http.StatusUnauthorized, call(t, custom, http.MethodGet, "/orders", zinctest.DefaultAPIKey, nil).status)
	assert.Equal(t, http.StatusOK, call(t, custom, http.MethodGet, "/orders", "zn_live_custom", nil).status)
}

func TestCreateValidation(t *testing.T) {
	addr := func(o map[string]any) map[string]any { return o["shipping_address"].(map[string]any) }
	rename := func(m map[string]any, from, to string) { m[to] = m[from]; delete(m, from) }
	tests := []struct {
		name   string
		change func(o map[string]any)
		code   string
		field  string
	}{
		{"no products", func(o map[string]any) { o["products"] = []any{} }, "validation_error", "products"},
		{"quantity 0", func(o map[string]any) {
			o["products"] = []any{map[string]any{"url": "https://x.test/p", "quantity": 0}}
		}, "validation_error", "products[0].quantity"},
		{"max_price 0", func(o map[string]any) { o["max_price"] = 0 }, "validation_error", "max_price"},
		{"max_price negative", func(o map[string]any) { o["max_price"] = -5 }, "validation_error", "max_price"},
		{"max_price in dollars", func(o map[string]any) { o["max_price"] = 31.25 }, "validation_error", "max_price"},
		{"max_price a string", func(o map[string]any) { o["max_price"] = "3125" }, "validation_error", "max_price"},
		{"max_price missing", func(o map[string]any) { delete(o, "max_price") }, "validation_error", "max_price"},
		{"idempotency key too long", func(o map[string]any) { o["idempotency_key"] = strings.Repeat("k", 37) }, "validation_error", "idempotency_key"},
		{"no address", func(o map[string]any) { delete(o, "shipping_address") }, "validation_error", "shipping_address"},
		{"line1 over 60", func(o map[string]any) { addr(o)["address_line1"] = strings.Repeat("a", 61) }, "invalid_shipping_address", "shipping_address.address_line1"},
		{"line2 over 60", func(o map[string]any) { addr(o)["address_line2"] = strings.Repeat("ü", 61) }, "invalid_shipping_address", "shipping_address.address_line2"},
		{"ZIP too short", func(o map[string]any) { addr(o)["postal_code"] = "1000" }, "invalid_shipping_address", "shipping_address.postal_code"},
		{"ZIP+4 malformed", func(o map[string]any) { addr(o)["postal_code"] = "10001-12" }, "invalid_shipping_address", "shipping_address.postal_code"},
		{"country USA", func(o map[string]any) { addr(o)["country"] = "USA" }, "invalid_shipping_address", "shipping_address.country"},
		{"no first name", func(o map[string]any) { addr(o)["first_name"] = " " }, "invalid_shipping_address", "shipping_address.first_name"},
		{"no last name", func(o map[string]any) { delete(addr(o), "last_name") }, "invalid_shipping_address", "shipping_address.last_name"},
		{"no phone", func(o map[string]any) { delete(addr(o), "phone_number") }, "invalid_shipping_address", "shipping_address.phone_number"},
		{"no US state", func(o map[string]any) { delete(addr(o), "state") }, "invalid_shipping_address", "shipping_address.state"},
		// Names are matched exactly: a name in another case is not the
		// field, which is then missing.
		{"Max_Price", func(o map[string]any) { rename(o, "max_price", "Max_Price") }, "validation_error", "max_price"},
		{"a product's URL", func(o map[string]any) {
			o["products"] = []any{map[string]any{"URL": "https://www.amazon.com/dp/B07JGBW826", "quantity": 1}}
		}, "validation_error", "products[0].url"},
		{"Postal_Code", func(o map[string]any) { rename(addr(o), "postal_code", "Postal_Code") },
			"invalid_shipping_address", "shipping_address.postal_code"},
		// The legacy v1 API's name for it.
		{"zip_code", func(o map[string]any) { rename(addr(o), "postal_code", "zip_code") },
			"invalid_shipping_address", "shipping_address.postal_code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			o := validOrder()
			tt.change(o)
			a := call(t, s, http.MethodPost, "/orders", s.APIKey(), o)
			assert.Equal(t, http.StatusUnprocessableEntity, a.status)
			assert.Equal(t, tt.code, a.errorCode())
			assert.Contains(t, slices.Collect(maps.Keys(a.errorDetails())), tt.field)
			assert.Empty(t, s.Orders())
		})
	}
	t.Run("accepted", func(t *testing.T) {
		s := newServer(t)
		o := validOrder()
		addr(o)["postal_code"] = "10001-1234"
		addr(o)["country"] = "us"
		a := call(t, s, http.MethodPost, "/orders", s.APIKey(), o)
		require.Equal(t, http.StatusCreated, a.status, a.body)
		assert.Equal(t, "pending", a.body["status"])
	})
	t.Run("not JSON", func(t *testing.T) {
		s := newServer(t)
		a := call(t, s, http.MethodPost, "/orders", s.APIKey(), "{")
		assert.Equal(t, http.StatusBadRequest, a.status)
		assert.Equal(t, "bad_request", a.errorCode())
	})
}

// POST /orders takes a JSON body declared as such.
func TestCreateContentType(t *testing.T) {
	body, err := json.Marshal(validOrder())
	require.NoError(t, err)
	tests := []struct {
		name, contentType string
		status            int
		code              string
	}{
		{"JSON", "application/json", http.StatusCreated, ""},
		{"JSON in UTF-8", "application/json; charset=utf-8", http.StatusCreated, ""},
		{"none", "", http.StatusBadRequest, "bad_request"},
		{"a form", "application/x-www-form-urlencoded", http.StatusBadRequest, "bad_request"},
		{"text", "text/plain", http.StatusBadRequest, "bad_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			h := http.Header{"Authorization": {"Bearer " + s.APIKey()}}
			if tt.contentType != "" {
				h.Set("Content-Type", tt.contentType)
			}
			a := callWith(t, s, http.MethodPost, "/orders", h, string(body))
			assert.Equal(t, tt.status, a.status, a.body)
			assert.Equal(t, tt.code, a.errorCode())
			if tt.status != http.StatusCreated {
				assert.Empty(t, s.Orders())
			}
		})
	}
}

func TestRepeatedIdempotencyKey(t *testing.T) {
	s := newServer(t)
	first := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder())
	require.Equal(t, http.StatusCreated, first.status)
	again := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder())
	assert.Equal(t, http.StatusConflict, again.status)
	assert.Equal(t, "already_exists", again.errorCode())
	assert.Equal(t, map[string]any{"resource": "Order", "identifier": "ord_0123456789abcdefghijklmn"}, again.errorDetails())
	assert.Equal(t, 1, s.OrdersCreated("ord_0123456789abcdefghijklmn"))
	assert.Equal(t, 2, s.CreateRequests("ord_0123456789abcdefghijklmn"))

	// Found again by its metadata, as a client recovering after a crash does.
	list := call(t, s, http.MethodGet, "/orders?metadata_key=memocart_order_id&metadata_value=ord_0123456789abcdefghijklmn", s.APIKey(), nil)
	require.Equal(t, http.StatusOK, list.status)
	orders := list.body["orders"].([]any)
	require.Len(t, orders, 1)
	assert.Equal(t, first.body["id"], orders[0].(map[string]any)["id"])
	none := call(t, s, http.MethodGet, "/orders?metadata_key=memocart_order_id&metadata_value=ord_other", s.APIKey(), nil)
	assert.Empty(t, none.body["orders"])
	half := call(t, s, http.MethodGet, "/orders?metadata_key=memocart_order_id", s.APIKey(), nil)
	assert.Equal(t, http.StatusUnprocessableEntity, half.status)
}

// GET /orders filters by creation time; WithoutMetadataFilter ignores the
// metadata filter, as the API revisions before it do.
func TestListFilters(t *testing.T) {
	for _, ignored := range []bool{false, true} {
		t.Run(fmt.Sprintf("metadata filter ignored: %t", ignored), func(t *testing.T) {
			var opts []zinctest.Option
			if ignored {
				opts = append(opts, zinctest.WithoutMetadataFilter())
			}
			s := newServer(t, opts...)
			start := s.Now()
			require.Equal(t, http.StatusCreated, call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder()).status)
			s.Advance(time.Hour)
			other := validOrder()
			other["idempotency_key"] = "ord_other"
			other["metadata"] = map[string]any{"memocart_order_id": "ord_other"}
			require.Equal(t, http.StatusCreated, call(t, s, http.MethodPost, "/orders", s.APIKey(), other).status)

			count := func(query string) int {
				a := call(t, s, http.MethodGet, "/orders?"+query, s.APIKey(), nil)
				require.Equal(t, http.StatusOK, a.status)
				return len(a.body["orders"].([]any))
			}
			after := url.QueryEscape(start.Add(30 * time.Minute).Format(time.RFC3339))
			assert.Equal(t, 1, count("created_after="+after))
			assert.Equal(t, 1, count("created_before="+after))
			byMeta := count("metadata_key=memocart_order_id&metadata_value=ord_other")
			if ignored {
				assert.Equal(t, 2, byMeta)
			} else {
				assert.Equal(t, 1, byMeta)
			}
			bad := call(t, s, http.MethodGet, "/orders?created_after=yesterday", s.APIKey(), nil)
			assert.Equal(t, http.StatusUnprocessableEntity, bad.status)
		})
	}
}

func TestRejectedProductCreatesNothing(t *testing.T) {
	s := newServer(t)
	o := validOrder()
	o["products"] = []any{map[string]any{"url": "https://www.ebay.com/itm/" + zinctest.RejectedItem, "quantity": 1}}
	a := call(t, s, http.MethodPost, "/orders", s.APIKey(), o)
	assert.Equal(t, http.StatusUnprocessableEntity, a.status)
	assert.Equal(t, "out_of_stock", a.errorCode())
	assert.Empty(t, s.Orders())
	assert.Zero(t, s.OrdersCreated("ord_0123456789abcdefghijklmn"))
}

func TestInjectedFailures(t *testing.T) {
	tests := []struct {
		name   string
		inject func(s *zinctest.Server)
		status int
		code   string
	}{
		{"500", func(s *zinctest.Server) { s.FailNext(500, 1) }, 500, "internal_error"},
		{"502", func(s *zinctest.Server) { s.FailNext(502, 1) }, 502, "external_service_error"},
		{"402", func(s *zinctest.Server) { s.FailNext(402, 1) }, 402, "insufficient_funds"},
		{"429", func(s *zinctest.Server) { s.RateLimitNext(1) }, 429, "rate_limit_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			tt.inject(s)
			a := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder())
			assert.Equal(t, tt.status, a.status)
			assert.Equal(t, tt.code, a.errorCode())
			assert.Empty(t, s.Orders(), "an injected failure has no side effect")
			assert.Equal(t, 1, s.CreateRequests("ord_0123456789abcdefghijklmn"))
			assert.Equal(t, http.StatusCreated, call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder()).status, "only the next one fails")
		})
	}
	t.Run("retry after", func(t *testing.T) {
		s := newServer(t)
		s.RateLimitNext(1)
		assert.Equal(t, "1", call(t, s, http.MethodGet, "/orders", s.APIKey(), nil).header.Get("Retry-After"))
	})
	t.Run("fail after create", func(t *testing.T) {
		s := newServer(t)
		s.FailAfterCreate(1)
		a := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder())
		assert.Equal(t, http.StatusInternalServerError, a.status)
		assert.Len(t, s.Orders(), 1, "the order exists though the client was told otherwise")
	})
}

func TestCancel(t *testing.T) {
	s := newServer(t)
	s.SetNow(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	a := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder())
	id := a.body["id"].(string)

	assert.Equal(t, http.StatusNoContent, call(t, s, http.MethodPost, "/orders/"+id+"/cancel", s.APIKey(), nil).status)
	assert.Equal(t, "cancelled", call(t, s, http.MethodGet, "/orders/"+id, s.APIKey(), nil).body["status"])
	again := call(t, s, http.MethodPost, "/orders/"+id+"/cancel", s.APIKey(), nil)
	assert.Equal(t, http.StatusConflict, again.status)
	assert.Equal(t, "order_not_cancellable", again.errorCode())
	assert.Equal(t, http.StatusNotFound, call(t, s, http.MethodPost, "/orders/nope/cancel", s.APIKey(), nil).status)
}

func TestOrderObject(t *testing.T) {
	s := newServer(t)
	created := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	s.SetNow(created)
	a := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder())
	id := a.body["id"].(string)
	assert.Nil(t, a.body["job_result"])
	assert.Equal(t, "2026-03-02T12:00:00Z", a.body["created_at"])

	s.SetNow(created.Add(zinctest.DefaultTimings.Delivered))
	c, err := zinc.NewClient(zinc.ClientConfig{BaseURL: s.URL, APIKey: s.APIKey()})
	require.NoError(t, err)
	o, err := c.Order(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, zinc.StatusOrderPlaced, o.Status)
	assert.Equal(t, 1, o.Attempts)
	require.NotNil(t, o.JobResult)
	require.NotNil(t, o.JobResult.PriceComponents)
	assert.Equal(t, "2812", o.JobResult.PriceComponents.Total.String(), "90%% of max_price, in cents")
	require.Len(t, o.TrackingNumbers, 1)
	tn := o.TrackingNumbers[0]
	assert.Equal(t, "delivered", tn.Status)
	assert.Equal(t, "2026-03-05", tn.EstimatedDeliveryDate)
	assert.Regexp(t, `^ZPY\d{12}YQ$`, tn.ZincTrackingNumber)
	require.Len(t, tn.Checkpoints, 4)
	assert.Equal(t, "delivered", tn.Checkpoints[0].Status, "most recent first")
	assert.Equal(t, "2026-03-05T12:00:00Z", tn.Checkpoints[0].CheckpointTime)
	assert.Equal(t, o.Items[0].ID, tn.OrderItemIDs[0])
	assert.Equal(t, "delivered", o.Items[0].Status)

	rec := s.Orders()
	require.Len(t, rec, 1)
	assert.Equal(t, zinctest.Order{
		ID: id, IdempotencyKey: "ord_0123456789abcdefghijklmn", Status: "order_placed", MaxPrice: 3125,
		Metadata:  map[string]any{"memocart_order_id": "ord_0123456789abcdefghijklmn", "attempt": float64(1)},
		Products:  []zinctest.Product{{URL: "https://www.amazon.com/dp/B07JGBW826", Quantity: 1}},
		CreatedAt: created,
	}, rec[0])
}

func TestClock(t *testing.T) {
	s := newServer(t)
	start := s.Now()
	assert.WithinDuration(t, time.Now(), start, time.Second)
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, start, s.Now(), "frozen until a test moves it")
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	s.SetNow(t0)
	assert.Equal(t, t0, s.Now())
	s.Advance(time.Hour)
	assert.Equal(t, t0.Add(time.Hour), s.Now())
	s.SetAutoClock(3600)
	time.Sleep(20 * time.Millisecond)
	assert.Greater(t, s.Now().Sub(t0), time.Hour+time.Minute, "an hour a second")

	running := newServer(t, zinctest.WithRealClock())
	before := running.Now()
	time.Sleep(20 * time.Millisecond)
	assert.Greater(t, running.Now().Sub(before), 10*time.Millisecond, "WithRealClock runs at wall time")
}

func TestTimingsDefaults(t *testing.T) {
	s := newServer(t, zinctest.WithTimings(zinctest.Timings{Placed: 5 * time.Second, Shipped: 10 * time.Second, InTransit: 15 * time.Second, Delivered: 20 * time.Second}))
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	s.SetNow(t0)
	id := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder()).body["id"].(string)
	status := func(at time.Duration) string {
		s.SetNow(t0.Add(at))
		return call(t, s, http.MethodGet, "/orders/"+id, s.APIKey(), nil).body["status"].(string)
	}
	assert.Equal(t, "pending", status(0))
	assert.Equal(t, "in_progress", status(time.Second), "Processing defaults to a fifth of Placed")
	assert.Equal(t, "order_placed", status(5*time.Second))
}

// The dev path: fast timings and a running clock walk an order to
// delivered on their own, and webhooks follow.
func TestDevTimingsWithRunningClock(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := newServer(t, zinctest.WithTimings(zinctest.DevTimings), zinctest.WithListener(l), zinctest.WithRealClock())
	assert.Equal(t, "http://"+l.Addr().String(), s.URL)

	var mu sync.Mutex
	var events []string
	hooks := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if zinc.VerifyWebhook("zn_whsec_dev", r.Header, body) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		e, err := zinc.ParseWebhook(body)
		if err == nil {
			mu.Lock()
			events = append(events, e.Type)
			mu.Unlock()
		}
	})}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = hooks.Serve(hl) }()
	t.Cleanup(func() { _ = hooks.Close() })
	s.SetWebhook("http://"+hl.Addr().String(), "zn_whsec_dev")
	s.SetAutoClock(20) // DevTimings' 15 s in under a second

	a := call(t, s, http.MethodPost, "/orders", s.APIKey(), validOrder())
	require.Equal(t, http.StatusCreated, a.status)
	id := a.body["id"].(string)
	require.Eventually(t, func() bool {
		o := call(t, s, http.MethodGet, "/orders/"+id, s.APIKey(), nil)
		tn, _ := o.body["tracking_numbers"].([]any)
		return len(tn) == 1 && tn[0].(map[string]any)["status"] == "delivered"
	}, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(events, "order.delivered")
	}, 5*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"order.started", "order.placed", "order.tracking_received", "order.tracking_updated", "order.delivered"} {
		assert.Contains(t, events, want)
	}
}

func TestUnknownRoute(t *testing.T) {
	s := newServer(t)
	a := call(t, s, http.MethodGet, "/products/B07JGBW826", s.APIKey(), nil)
	assert.Equal(t, http.StatusNotFound, a.status)
	assert.Equal(t, "not_found", a.errorCode())
}
