package zinc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewClientValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  ClientConfig
		ok   bool
	}{
		{"defaults", ClientConfig{APIKey: "zn_test_x"}, true},
		{"no key", ClientConfig{}, false},
		{"not a URL", ClientConfig{APIKey: "zn_test_x", BaseURL: "api.zinc.com"}, false},
		{"query in base URL", ClientConfig{APIKey: "zn_test_x", BaseURL: "https://api.zinc.com/?a=b"}, false},
		{"negative timeout", ClientConfig{APIKey: "zn_test_x", Timeout: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.cfg)
			if !tt.ok {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, DefaultBaseURL, c.baseURL)
			assert.Equal(t, DefaultTimeout, c.timeout)
		})
	}
}

func TestClientSendsBearerKeyAndJSON(t *testing.T) {
	var got struct {
		method, path, auth, contentType string
		body                            map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.method, got.path = r.Method, r.URL.Path
		got.auth, got.contentType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		_ = json.NewDecoder(r.Body).Decode(&got.body)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"z1","status":"pending","max_price":100,"created_at":"2026-03-02T17:04:05Z"}`)
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{BaseURL: srv.URL + "/", APIKey: "zn_live_secret"})
	require.NoError(t, err)

	o, err := c.CreateOrder(t.Context(), CreateOrderRequest{MaxPrice: 100, IdempotencyKey: "k"})
	require.NoError(t, err)
	assert.Equal(t, "z1", o.ID)
	assert.Equal(t, "pending", o.Status)
	assert.Equal(t, http.MethodPost, got.method)
	assert.Equal(t, "/orders", got.path)
	assert.Equal(t, "Bearer zn_live_secret", got.auth)
	assert.Equal(t, "application/json", got.contentType)
	assert.Equal(t, "k", got.body["idempotency_key"])
	assert.Equal(t, float64(100), got.body["max_price"])
}

func TestClientErrorBodies(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    APIError
		details string
	}{
		{
			name: "nested, as the SDKs have it", status: 422,
			body:    `{"error":{"code":"invalid_shipping_address","message":"The shipping address failed validation","details":{"shipping_address.postal_code":"bad"}}}`,
			want:    APIError{HTTPStatus: 422, Code: "invalid_shipping_address", Message: "The shipping address failed validation"},
			details: `{"shipping_address.postal_code":"bad"}`,
		},
		{
			name: "flat, as the prose documentation shows it", status: 409,
			body:    `{"code":"already_exists","message":"Order with idempotency key 'k' already exists","details":{"resource":"Order","identifier":"k"}}`,
			want:    APIError{HTTPStatus: 409, Code: "already_exists", Message: "Order with idempotency key 'k' already exists"},
			details: `{"resource":"Order","identifier":"k"}`,
		},
		{
			name: "null details", status: 401,
			body: `{"error":{"code":"invalid_token","message":"The provided API token is not valid","details":null}}`,
			want: APIError{HTTPStatus: 401, Code: "invalid_token", Message: "The provided API token is not valid"},
		},
		{
			name: "not JSON, from a proxy", status: 502,
			body: `<html>Bad Gateway</html>`,
			want: APIError{HTTPStatus: 502, Message: "Bad Gateway"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, err := NewClient(ClientConfig{BaseURL: srv.URL, APIKey: "zn_test_x"})
			require.NoError(t, err)
			_, err = c.Order(t.Context(), "z1")
			var ae *APIError
			require.True(t, errors.As(err, &ae), "got %v", err)
			if tt.details == "" {
				assert.Nil(t, ae.Details)
			} else {
				assert.JSONEq(t, tt.details, string(ae.Details))
			}
			ae.Details = nil
			assert.Equal(t, tt.want, *ae)
		})
	}
}

func TestTransientAndAccount(t *testing.T) {
	tests := []struct {
		name               string
		err                error
		transient, account bool
	}{
		{"rate limited", &APIError{HTTPStatus: 429, Code: "rate_limit_exceeded"}, true, false},
		{"internal", &APIError{HTTPStatus: 500, Code: "internal_error"}, true, false},
		{"bad gateway", &APIError{HTTPStatus: 502, Code: "external_service_error"}, true, false},
		{"unavailable", &APIError{HTTPStatus: 503}, true, false},
		{"external code on a 400", &APIError{HTTPStatus: 400, Code: "external_service_error"}, true, false},
		{"unauthorized", &APIError{HTTPStatus: 401, Code: "unauthorized"}, false, true},
		{"forbidden", &APIError{HTTPStatus: 403, Code: "forbidden"}, false, true},
		{"insufficient funds", &APIError{HTTPStatus: 402, Code: "insufficient_funds"}, false, true},
		{"payment required", &APIError{HTTPStatus: 402, Code: "payment_required"}, false, true},
		{"out of stock", &APIError{HTTPStatus: 422, Code: "out_of_stock"}, false, false},
		{"validation", &APIError{HTTPStatus: 422, Code: "validation_error"}, false, false},
		{"not found", &APIError{HTTPStatus: 404, Code: "not_found"}, false, false},
		{"network", errors.New("dial tcp: connection refused"), true, false},
		{"nil", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.transient, Transient(tt.err))
			var ae *APIError
			if errors.As(tt.err, &ae) {
				assert.Equal(t, tt.account, ae.Account())
			}
		})
	}
}

func TestClientBoundsEveryCall(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := NewClient(ClientConfig{BaseURL: srv.URL, APIKey: "zn_test_x", Timeout: 50 * time.Millisecond})
	require.NoError(t, err)

	start := time.Now()
	_, err = c.Order(t.Context(), "z1")
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.True(t, Transient(err), "a timeout is worth retrying")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestClientEscapesIDs(t *testing.T) {
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.EscapedPath()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{BaseURL: srv.URL, APIKey: "zn_test_x"})
	require.NoError(t, err)
	require.NoError(t, c.CancelOrder(t.Context(), "a/b"))
	assert.Equal(t, "/orders/a%2Fb/cancel", path)
	assert.Error(t, c.CancelOrder(t.Context(), ""))
}
