package models

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Codes are part of the public
// API contract: clients switch on them, so a code is never renamed.
type Code string

// The contract's codes, then the codes Memocart adds where the contract is
// silent. The HTTP status of each lives in one table in package api.
const (
	CodeMissingAPIKey       Code = "missing_api_key"
	CodeInvalidAPIKey       Code = "invalid_api_key"
	CodeInvalidURL          Code = "invalid_url"
	CodeProductUnavailable  Code = "product_unavailable"
	CodeShippingUnavailable Code = "shipping_unavailable"
	CodeCartNotFound        Code = "cart_not_found"
	CodeInvalidAddress      Code = "invalid_address"
	CodeOrderNotFound       Code = "order_not_found"

	CodeInvalidRequest      Code = "invalid_request"       // malformed JSON, missing or mistyped field
	CodeInvalidEmail        Code = "invalid_email"         // customer_email is not a deliverable address
	CodeUnsupportedAsset    Code = "unsupported_asset"     // payment_asset is not one the service accepts
	CodeCartAlreadyOrdered  Code = "cart_already_ordered"  // the cart was turned into an order by a different request
	CodeIdempotencyMismatch Code = "idempotency_mismatch"  // Idempotency-Key reused with a different request (method, path or body)
	CodeRateLimited         Code = "rate_limited"          // over the key's per-minute budget
	CodePlanRequired        Code = "plan_required"         // endpoint not included in the key's tier
	CodeTestModeOnly        Code = "test_mode_only"        // test helper called with a live key
	CodeLiveUnavailable     Code = "live_mode_unavailable" // a live provider is not configured on this deployment
	CodeNotFound            Code = "not_found"             // unknown route
	CodeMethodNotAllowed    Code = "method_not_allowed"
	CodeInternal            Code = "internal_error"
	CodeUnavailable         Code = "service_unavailable" // a dependency (database, Temporal) is down; safe to retry
	CodeRateUnavailable     Code = "rate_unavailable"    // no fresh exchange rate to quote the asset; retry or pay in USDC
	// CodeMarketplaceUnavailable: a live marketplace's API is down, slow or
	// refusing us (quota); the request is safe to retry later.
	CodeMarketplaceUnavailable Code = "marketplace_unavailable"
	// CodeInvalidSignature: a provider webhook whose signature does not
	// verify (forged, replayed, or signed with another secret).
	CodeInvalidSignature Code = "invalid_signature"
	// CodeUnsupportedMediaType: a request body sent without
	// Content-Type: application/json.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeIdempotencyKeyInUse: a request with the same Idempotency-Key is
	// still being processed; retry shortly.
	CodeIdempotencyKeyInUse Code = "idempotency_key_in_use"
	// CodeOrderNotCancellable: a cancel for an order that is paid or
	// beyond (or failed): only an order awaiting payment can be cancelled.
	CodeOrderNotCancellable Code = "order_not_cancellable"
	// CodeInvalidOrderState: a test helper asked for what the order's
	// status does not allow (expiring an order that is no longer awaiting
	// payment).
	CodeInvalidOrderState Code = "invalid_order_state"
	// Webhook endpoints: a URL the policy refuses (WebhookURLPolicy), an
	// endpoint or event that does not exist for the key, more endpoints
	// than MaxWebhookEndpoints, a resend to a disabled endpoint.
	CodeInvalidWebhookURL       Code = "invalid_webhook_url"
	CodeWebhookEndpointNotFound Code = "webhook_endpoint_not_found"
	CodeEventNotFound           Code = "event_not_found"
	CodeWebhookEndpointLimit    Code = "webhook_endpoint_limit"
	CodeWebhookEndpointDisabled Code = "webhook_endpoint_disabled"
	// Refunds: a destination that cannot receive a payout (not a StrKey
	// account, a memo that does not fit its type), and a move the
	// refund's status does not allow (approving a sent refund, changing
	// the destination of one being sent).
	CodeInvalidRefundDestination Code = "invalid_refund_destination"
	CodeInvalidRefundState       Code = "invalid_refund_state"
	CodeRefundNotFound           Code = "refund_not_found"

	// Codes of business failures inside the order workflow. They never reach
	// API clients as errors; they are the type strings of non-retryable
	// Temporal application errors and show in the Temporal UI.
	CodeSourcingFailed Code = "sourcing_failed" // the marketplace will not sell the item (gone, seller cancelled)
)

// defaultMessages holds the contract's message texts, used when an error is
// raised without a more specific message.
var defaultMessages = map[Code]string{
	CodeMissingAPIKey:          "No API key in Authorization header",
	CodeInvalidAPIKey:          "API key is invalid or revoked",
	CodeInvalidURL:             "URL is not a valid link of a supported marketplace (Amazon or eBay)",
	CodeProductUnavailable:     "Product is unavailable or removed",
	CodeShippingUnavailable:    "Cannot ship to destination",
	CodeCartNotFound:           "Cart does not exist or expired",
	CodeInvalidAddress:         "Shipping address invalid or incomplete",
	CodeOrderNotFound:          "No order with specified ID",
	CodeInvalidRequest:         "Request is malformed",
	CodeInvalidEmail:           "customer_email is not a valid e-mail address",
	CodeUnsupportedAsset:       "payment_asset is not supported",
	CodeCartAlreadyOrdered:     "An order was already created from this cart",
	CodeIdempotencyMismatch:    "Idempotency-Key was already used with a different request",
	CodeRateLimited:            "Rate limit exceeded",
	CodePlanRequired:           "This endpoint is not included in your plan",
	CodeTestModeOnly:           "This endpoint is available to test-mode keys only",
	CodeLiveUnavailable:        "Live mode is not available on this deployment yet",
	CodeNotFound:               "No such endpoint",
	CodeMethodNotAllowed:       "Method not allowed on this endpoint",
	CodeInternal:               "Internal error",
	CodeUnavailable:            "Service temporarily unavailable, retry later",
	CodeRateUnavailable:        "No fresh exchange rate for this asset right now; retry shortly or pay in USDC",
	CodeSourcingFailed:         "The marketplace could not supply the product",
	CodeMarketplaceUnavailable: "The marketplace cannot be reached right now; retry later",
	CodeInvalidSignature:       "Webhook signature is missing, invalid or too old",
	CodeUnsupportedMediaType:   "Content-Type must be application/json",
	CodeIdempotencyKeyInUse:    "A request with this Idempotency-Key is still being processed; retry shortly",
	CodeOrderNotCancellable:    "Only an order awaiting payment can be cancelled",
	CodeInvalidOrderState:      "The order's status does not allow this",

	CodeInvalidWebhookURL:       "url is not allowed as a webhook endpoint",
	CodeWebhookEndpointNotFound: "No webhook endpoint with specified ID",
	CodeEventNotFound:           "No event with specified ID",
	CodeWebhookEndpointLimit:    "Too many webhook endpoints: delete one first",
	CodeWebhookEndpointDisabled: "The webhook endpoint is disabled",

	CodeInvalidRefundDestination: "The refund destination is not a valid Stellar account and memo",
	CodeInvalidRefundState:       "The refund's status does not allow this",
	CodeRefundNotFound:           "No refund with specified ID",
}

// Error is a domain error with a public code and a message that is safe to
// show to API clients. Field names the offending request field, if any.
type Error struct {
	Code    Code
	Message string
	Field   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (field %s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, models.ErrCartNotFound) match any *Error with the
// same code, whatever its message.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}

// NewError returns an *Error with the code's default message.
func NewError(code Code) *Error {
	return &Error{Code: code, Message: defaultMessages[code]}
}

// Errorf returns an *Error with a formatted message. The message reaches
// clients: never format secrets, addresses or internal errors into it.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError returns an invalid-request style error naming the field.
func FieldError(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// DefaultMessage returns the public message for code.
func DefaultMessage(code Code) string { return defaultMessages[code] }

// CodeOf returns the code of the first *Error in err's chain, or
// CodeInternal for anything else (an unexpected failure).
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Sentinels for errors.Is. Compare by code, never by message.
var (
	ErrMissingAPIKey          = NewError(CodeMissingAPIKey)
	ErrInvalidAPIKey          = NewError(CodeInvalidAPIKey)
	ErrInvalidURL             = NewError(CodeInvalidURL)
	ErrProductUnavailable     = NewError(CodeProductUnavailable)
	ErrShippingUnavailable    = NewError(CodeShippingUnavailable)
	ErrCartNotFound           = NewError(CodeCartNotFound)
	ErrInvalidAddress         = NewError(CodeInvalidAddress)
	ErrOrderNotFound          = NewError(CodeOrderNotFound)
	ErrRefundNotFound         = NewError(CodeRefundNotFound)
	ErrLiveUnavailable        = NewError(CodeLiveUnavailable)
	ErrUnavailable            = NewError(CodeUnavailable)
	ErrSourcingFailed         = NewError(CodeSourcingFailed)
	ErrMarketplaceUnavailable = NewError(CodeMarketplaceUnavailable)

	ErrWebhookEndpointNotFound = NewError(CodeWebhookEndpointNotFound)
	ErrEventNotFound           = NewError(CodeEventNotFound)
)
