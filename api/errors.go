package api

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/gin-gonic/gin"
	"go.temporal.io/api/serviceerror"

	"github.com/memocart/memocart/models"
)

// httpStatus is the one table from error code to HTTP status. A code not
// listed is a 500. README.md documents this table; keep them in step.
var httpStatus = map[models.Code]int{
	models.CodeMissingAPIKey:            http.StatusUnauthorized,
	models.CodeInvalidAPIKey:            http.StatusUnauthorized,
	models.CodeInvalidRequest:           http.StatusBadRequest,
	models.CodeInvalidURL:               http.StatusBadRequest,
	models.CodePlanRequired:             http.StatusForbidden,
	models.CodeTestModeOnly:             http.StatusForbidden,
	models.CodeCartNotFound:             http.StatusNotFound,
	models.CodeOrderNotFound:            http.StatusNotFound,
	models.CodeRefundNotFound:           http.StatusNotFound,
	models.CodeNotFound:                 http.StatusNotFound,
	models.CodeMethodNotAllowed:         http.StatusMethodNotAllowed,
	models.CodeCartAlreadyOrdered:       http.StatusConflict,
	models.CodeIdempotencyKeyInUse:      http.StatusConflict,
	models.CodeIdempotencyMismatch:      http.StatusUnprocessableEntity,
	models.CodeOrderNotCancellable:      http.StatusConflict,
	models.CodeInvalidOrderState:        http.StatusConflict,
	models.CodeInvalidRefundState:       http.StatusConflict,
	models.CodeProductUnavailable:       http.StatusUnprocessableEntity,
	models.CodeShippingUnavailable:      http.StatusUnprocessableEntity,
	models.CodeInvalidAddress:           http.StatusUnprocessableEntity,
	models.CodeInvalidRefundDestination: http.StatusUnprocessableEntity,
	models.CodeInvalidEmail:             http.StatusUnprocessableEntity,
	models.CodeUnsupportedAsset:         http.StatusUnprocessableEntity,
	models.CodeRateLimited:              http.StatusTooManyRequests,
	models.CodeInternal:                 http.StatusInternalServerError,
	models.CodeLiveUnavailable:          http.StatusServiceUnavailable,
	models.CodeUnavailable:              http.StatusServiceUnavailable,
	models.CodeRateUnavailable:          http.StatusServiceUnavailable,
	models.CodeMarketplaceUnavailable:   http.StatusServiceUnavailable,
	models.CodeInvalidSignature:         http.StatusUnauthorized,
	models.CodeUnsupportedMediaType:     http.StatusUnsupportedMediaType,

	models.CodeInvalidWebhookURL:       http.StatusBadRequest,
	models.CodeWebhookEndpointNotFound: http.StatusNotFound,
	models.CodeEventNotFound:           http.StatusNotFound,
	models.CodeWebhookEndpointLimit:    http.StatusConflict,
	models.CodeWebhookEndpointDisabled: http.StatusConflict,
}

// StatusOf returns the HTTP status for an error code.
func StatusOf(code models.Code) int {
	if s, ok := httpStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    models.Code `json:"code"`
	Message string      `json:"message"`
	Field   string      `json:"field,omitempty"`
}

// retryAfterUnavailable is the Retry-After sent with a 503: long enough
// for a restarted dependency or a failover, short enough to keep checkout
// moving.
const retryAfterUnavailable = "2"

// abort writes err as the contract's error body and stops the chain. A
// *models.Error is shown as is. Anything else is classified here, the one
// place that maps failures to the contract: a dependency that is down,
// hung or overloaded (database, Temporal), or a request past its deadline,
// is 503 service_unavailable with Retry-After, safe to retry; the rest is
// an internal failure, logged once with the request id and answered with a
// generic message so internals never reach the client.
func abort(c *gin.Context, err error) {
	me := classify(c, err)
	msg := me.Message
	if msg == "" {
		msg = models.DefaultMessage(me.Code)
	}
	status := StatusOf(me.Code)
	if status == http.StatusServiceUnavailable && c.Writer.Header().Get("Retry-After") == "" {
		c.Header("Retry-After", retryAfterUnavailable)
	}
	c.Abort()
	render(c, status, errorBody{Error: errorDetail{Code: me.Code, Message: msg, Field: me.Field}})
}

// classify is err as the contract's error, logging what is not a refusal
// (a dependency down, the deadline, a bug) once, here.
func classify(c *gin.Context, err error) *models.Error {
	var me *models.Error
	if !errors.As(err, &me) {
		ctx := c.Request.Context()
		switch {
		case ctx.Err() != nil:
			// Past the request's deadline (a hung dependency), or the
			// client went away and nobody reads this answer.
			loggerFrom(c).WarnContext(context.WithoutCancel(ctx), "request cut at its deadline", slog.Any("error", err), slog.Any("cause", context.Cause(ctx)))
			me = models.NewError(models.CodeUnavailable)
		case DependencyDown(err):
			loggerFrom(c).WarnContext(ctx, "dependency unavailable", slog.Any("error", err))
			me = models.NewError(models.CodeUnavailable)
		default:
			loggerFrom(c).ErrorContext(ctx, "request failed", slog.Any("error", err))
			me = models.NewError(models.CodeInternal)
		}
	}
	return me
}

// DependencyDown reports whether err means a dependency could not answer
// (as opposed to a bug or a refusal): a network failure or timeout, a
// broken or closed database connection, a Postgres connection, resource
// or shutdown error (SQLSTATE classes 08, 53, 57), a SQLite database still
// locked after its busy timeout, or Temporal unavailable, overloaded or
// timing out. It looks at behaviour (interfaces the drivers' errors
// implement), not at driver types, so package api stays free of them.
func DependencyDown(err error) bool {
	if err == nil {
		return false
	}
	var (
		netErr      net.Error
		sqlState    interface{ SQLState() string }
		safeToRetry interface{ SafeToRetry() bool }
		sqliteCode  interface{ Code() int }
		unavailable *serviceerror.Unavailable
		deadline    *serviceerror.DeadlineExceeded
		exhausted   *serviceerror.ResourceExhausted
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.As(err, &netErr),
		errors.As(err, &unavailable), errors.As(err, &deadline), errors.As(err, &exhausted):
		return true
	case errors.As(err, &sqlState):
		switch class := sqlState.SQLState(); {
		case strings.HasPrefix(class, "08"), // connection exception
			strings.HasPrefix(class, "53"), // insufficient resources (too many connections, disk full)
			strings.HasPrefix(class, "57"): // operator intervention: shutdown, cannot connect now, statement timeout
			return true
		}
		return false
	case errors.As(err, &safeToRetry) && safeToRetry.SafeToRetry():
		// pgconn: the connection failed before the query was sent.
		return true
	case errors.As(err, &sqliteCode):
		switch sqliteCode.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED: still locked after busy_timeout
			return true
		}
	}
	// pgconn reports a connection closed under a query only in words.
	return strings.Contains(err.Error(), "conn closed")
}
