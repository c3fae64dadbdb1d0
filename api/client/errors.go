package client

import (
	"fmt"
	"net/http"
	"strings"
)

// Error is an answer of the API outside 2xx. Use errors.As to read it.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the contract's error code (ErrorCode in api/openapi.json),
	// e.g. "order_not_found"; empty when the answer was not the API's
	// JSON envelope (a proxy's page, a 431 from Go's HTTP server).
	Code ErrorCode
	// Message is the API's message, or the status text without one.
	Message string
	// Field names the request field at fault, nil when none is.
	Field *string
	// RequestID is the answer's X-Request-Id: quote it to support.
	RequestID string
}

// Error returns the status, code, message, field and request id on one
// line.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "memocart: %d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + string(e.Code))
	}
	b.WriteString(": " + e.Message)
	if e.Field != nil {
		b.WriteString(" (field " + *e.Field + ")")
	}
	if e.RequestID != "" {
		b.WriteString(" [request " + e.RequestID + "]")
	}
	return b.String()
}

// retryable says whether another attempt may get another answer: a 5xx,
// a 429, or a 409 idempotency_key_in_use (the same request, under the
// same key, is still being processed: typically an earlier attempt that
// timed out here, whose answer the retry then replays). Other 4xx answers
// are final (the same request meets them again).
func (e *Error) retryable() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusTooManyRequests ||
		(e.StatusCode == http.StatusConflict && e.Code == CodeIdempotencyKeyInUse)
}

// errorEnvelope is the body of every error the API answers.
type errorEnvelope struct {
	Error struct {
		Code    ErrorCode `json:"code"`
		Message string    `json:"message"`
		Field   *string   `json:"field,omitempty"`
	} `json:"error"`
}

// ErrorCode is the contract's error code (ErrorCode in api/openapi.json;
// docs/api.md "Errors" says when each is given).
type ErrorCode string

// The error codes of the contract.
const (
	CodeMissingAPIKey            ErrorCode = "missing_api_key"
	CodeInvalidAPIKey            ErrorCode = "invalid_api_key"
	CodeInvalidSignature         ErrorCode = "invalid_signature"
	CodeInvalidRequest           ErrorCode = "invalid_request"
	CodeInvalidURL               ErrorCode = "invalid_url"
	CodePlanRequired             ErrorCode = "plan_required"
	CodeTestModeOnly             ErrorCode = "test_mode_only"
	CodeCartNotFound             ErrorCode = "cart_not_found"
	CodeOrderNotFound            ErrorCode = "order_not_found"
	CodeRefundNotFound           ErrorCode = "refund_not_found"
	CodeNotFound                 ErrorCode = "not_found"
	CodeMethodNotAllowed         ErrorCode = "method_not_allowed"
	CodeCartAlreadyOrdered       ErrorCode = "cart_already_ordered"
	CodeIdempotencyMismatch      ErrorCode = "idempotency_mismatch"
	CodeIdempotencyKeyInUse      ErrorCode = "idempotency_key_in_use"
	CodeOrderNotCancellable      ErrorCode = "order_not_cancellable"
	CodeInvalidOrderState        ErrorCode = "invalid_order_state"
	CodeInvalidRefundState       ErrorCode = "invalid_refund_state"
	CodeUnsupportedMediaType     ErrorCode = "unsupported_media_type"
	CodeProductUnavailable       ErrorCode = "product_unavailable"
	CodeShippingUnavailable      ErrorCode = "shipping_unavailable"
	CodeInvalidAddress           ErrorCode = "invalid_address"
	CodeInvalidEmail             ErrorCode = "invalid_email"
	CodeUnsupportedAsset         ErrorCode = "unsupported_asset"
	CodeInvalidRefundDestination ErrorCode = "invalid_refund_destination"
	CodeRateLimited              ErrorCode = "rate_limited"
	CodeInternalError            ErrorCode = "internal_error"
	CodeLiveModeUnavailable      ErrorCode = "live_mode_unavailable"
	CodeMarketplaceUnavailable   ErrorCode = "marketplace_unavailable"
	CodeRateUnavailable          ErrorCode = "rate_unavailable"
	CodeServiceUnavailable       ErrorCode = "service_unavailable"
	CodeInvalidWebhookURL        ErrorCode = "invalid_webhook_url"
	CodeWebhookEndpointNotFound  ErrorCode = "webhook_endpoint_not_found"
	CodeEventNotFound            ErrorCode = "event_not_found"
	CodeWebhookEndpointLimit     ErrorCode = "webhook_endpoint_limit"
	CodeWebhookEndpointDisabled  ErrorCode = "webhook_endpoint_disabled"
)
