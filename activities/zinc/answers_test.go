package zinc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/zinc"
	"github.com/memocart/memocart/models"
)

// scripted is a Zinc API answering every request with one status and
// body, and recording the requests.
type scripted struct {
	status int
	body   string

	mu       sync.Mutex
	requests []string // method and path
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(s.status)
	_, _ = io.WriteString(w, s.body)
}

func (s *scripted) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// scriptedFulfiller is a fulfiller reaching api, logging to the buffer.
func scriptedFulfiller(t *testing.T, api http.Handler) (*zinc.Client, *zinc.Fulfiller, *bytes.Buffer) {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c, err := zinc.NewClient(zinc.ClientConfig{BaseURL: srv.URL, APIKey: "zn_test_scripted", HTTPClient: srv.Client()})
	require.NoError(t, err)
	logs := &bytes.Buffer{}
	f, err := zinc.NewFulfiller(zinc.FulfillerConfig{Client: c, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	return c, f, logs
}

// errorBody is Zinc's error answer in the form the SDKs have it (nested
// under "error") or the one its prose documentation shows (top level);
// details "" is null.
func errorBody(nested bool, code, details string) string {
	if details == "" {
		details = "null"
	}
	fields := `{"code":"` + code + `","message":"A message for people","details":` + details + `}`
	if nested {
		return `{"error":` + fields + `}`
	}
	return fields
}

// Every error code Zinc documents (shared/reference/marketplaces.md,
// "Buying: Zinc API"), answered to POST /orders in both documented forms,
// and what placing an order makes of it: a refusal the customer reads
// (models.ErrSourcingFailed with a sentence), or an error the activity
// retries, transient (Zinc's trouble) or not (our account, for an
// operator).
func TestPlaceDocumentedErrors(t *testing.T) {
	const addressDetails = `{"shipping_address.postal_code":"postal_code must be a 5-digit ZIP code"}`
	type kind int
	const (
		refusal kind = iota
		transient
		account
		unexpected
	)
	tests := []struct {
		status  int
		code    string
		details string
		kind    kind
		reason  string // a refusal's sentence
	}{
		{422, "validation_error", `{"products":"must list a product"}`, refusal, "The retailer's checkout refused the order's details."},
		{422, "validation_error", addressDetails, refusal, models.FulfilmentFailureReason("shipping_address_invalid")},
		{400, "bad_request", "", refusal, "The retailer's checkout refused the order's details."},
		{422, "invalid_shipping_address", addressDetails, refusal, models.FulfilmentFailureReason("shipping_address_invalid")},
		{422, "url_unreachable", "", refusal, models.FulfilmentFailureReason("invalid_product_url")},
		{400, "unsupported_retailer", "", refusal, models.FulfilmentFailureReason("retailer_not_supported")},
		{422, "unsupported_country", "", refusal, models.FulfilmentFailureReason("shipping_unavailable")},
		{422, "invalid_variant", "", refusal, models.FulfilmentFailureReason("product_variant_unavailable")},
		{422, "out_of_stock", "", refusal, models.FulfilmentFailureReason("product_out_of_stock")},
		{422, "shipping_unavailable", "", refusal, models.FulfilmentFailureReason("shipping_unavailable")},
		{401, "unauthorized", "", account, ""},
		{401, "invalid_token", "", account, ""},
		{403, "forbidden", "", account, ""},
		{402, "insufficient_funds", `{"required":3125,"available":1200}`, account, ""},
		{402, "payment_required", "", account, ""},
		{429, "rate_limit_exceeded", "", transient, ""},
		{500, "internal_error", "", transient, ""},
		{502, "external_service_error", "", transient, ""},
		{503, "service_unavailable", "", transient, ""},
		{404, "not_found", "", unexpected, ""},
	}
	for _, tt := range tests {
		for _, nested := range []bool{true, false} {
			form := "top level"
			if nested {
				form = "nested"
			}
			t.Run(tt.code+" "+form, func(t *testing.T) {
				api := &scripted{status: tt.status, body: errorBody(nested, tt.code, tt.details)}
				_, f, logs := scriptedFulfiller(t, api)
				_, err := f.Place(t.Context(), liveOrder("ord_documented000000000000001", normalURL), 1)
				require.Error(t, err)
				assert.Equal(t, []string{"POST /orders"}, api.Requests(), "asked once, never looked up or placed again")

				if tt.kind == refusal {
					require.ErrorIs(t, err, models.ErrSourcingFailed)
					var me *models.Error
					require.True(t, errors.As(err, &me))
					assert.Equal(t, tt.reason, me.Message)
					return
				}
				assert.NotErrorIs(t, err, models.ErrSourcingFailed, "not the customer's failure: the activity retries")
				var ae *zinc.APIError
				require.True(t, errors.As(err, &ae), "got %v", err)
				assert.Equal(t, tt.code, ae.Code)
				assert.Equal(t, tt.kind == transient, zinc.Transient(err))
				assert.Equal(t, tt.kind == account, strings.Contains(logs.String(), "our Zinc account"), logs.String())
			})
		}
	}
}

// A used idempotency key is 409 already_exists naming the key, not the
// order: the order is looked up by its metadata, never placed again.
func TestPlaceDocumentedAlreadyExists(t *testing.T) {
	for _, nested := range []bool{true, false} {
		body := errorBody(nested, "already_exists",
			`{"resource":"Order","identifier":"ord_documented000000000000001"}`)
		api := &scripted{status: http.StatusConflict, body: body}
		_, f, _ := scriptedFulfiller(t, api)
		_, err := f.Place(t.Context(), liveOrder("ord_documented000000000000001", normalURL), 1)
		require.Error(t, err)
		assert.NotErrorIs(t, err, models.ErrSourcingFailed)
		reqs := api.Requests()
		require.Len(t, reqs, 2, "nested %t", nested)
		assert.Equal(t, "POST /orders", reqs[0])
		assert.Equal(t, "GET /orders", reqs[1], "the lookup, not a second order")
	}
}

// Cancelling after Zinc started buying is 409 order_not_cancellable: an
// answer, not an outage.
func TestCancelDocumentedNotCancellable(t *testing.T) {
	api := &scripted{status: http.StatusConflict, body: errorBody(true, "order_not_cancellable", "")}
	c, _, _ := scriptedFulfiller(t, api)
	err := c.CancelOrder(t.Context(), "6f1c2a4e-8b0d-4c3e-9a51-0d2e7b9c4f10")
	var ae *zinc.APIError
	require.True(t, errors.As(err, &ae), "got %v", err)
	assert.Equal(t, http.StatusConflict, ae.HTTPStatus)
	assert.Equal(t, zinc.CodeOrderNotCancellable, ae.Code)
	assert.Nil(t, ae.Details, "null details are none")
	assert.False(t, zinc.Transient(err))
}

// Every job_result.error_type Zinc documents, on an order_failed order:
// the failure is the order's, with its code, and only the retailer's
// momentary trouble is worth another attempt.
func TestCheckDocumentedErrorTypes(t *testing.T) {
	retryable := map[string]bool{"retailer_rate_limited": true, "retailer_unavailable": true}
	for _, errorType := range []string{
		"product_not_found", "product_out_of_stock", "product_unavailable", "invalid_product_url",
		"product_variant_required", "product_variant_unavailable", "product_quantity_unavailable",
		"max_price_exceeded",
		"add_to_cart_failed", "cart_empty", "checkout_blocked", "checkout_failed",
		"shipping_address_invalid", "shipping_unavailable", "shipping_method_unavailable",
		"payment_declined", "payment_method_invalid", "payment_failed",
		"login_failed", "session_expired", "account_locked", "account_verification_required",
		"retailer_unavailable", "retailer_not_supported", "retailer_rate_limited",
		"quantity_limit_exceeded", "order_limit_exceeded",
	} {
		t.Run(errorType, func(t *testing.T) {
			o := liveOrder("ord_documented000000000000001", normalURL)
			order := map[string]any{
				"id": "6f1c2a4e-8b0d-4c3e-9a51-0d2e7b9c4f10", "status": "order_failed", "max_price": 3125, "attempts": 1,
				"metadata": map[string]any{"memocart_order_id": o.ID, "attempt": 1},
				"job_result": map[string]any{
					"success": false, "error": "A message for people", "error_type": errorType,
					"price_components": nil, "merchant_order_ids": nil,
				},
				"merchant_order_ids": []string{}, "tracking_numbers": []any{},
				"created_at": "2026-03-02T17:04:05Z", "updated_at": "2026-03-02T17:12:31Z",
			}
			body, err := json.Marshal(order)
			require.NoError(t, err)
			_, f, _ := scriptedFulfiller(t, &scripted{status: http.StatusOK, body: string(body)})

			got, err := f.Check(t.Context(), o, "6f1c2a4e-8b0d-4c3e-9a51-0d2e7b9c4f10")
			require.NoError(t, err)
			assert.Equal(t, models.FulfilmentFailed, got.Stage)
			assert.Equal(t, errorType, got.FailureCode)
			assert.Equal(t, models.FulfilmentFailureReason(errorType), got.FailureReason)
			assert.Equal(t, retryable[errorType], got.Retryable)
			assert.Equal(t, models.OrderFailed, got.Progress().Status)
		})
	}
}
