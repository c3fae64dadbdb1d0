package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// httpStatus is the one table from error code to HTTP status. A code not
// listed is a 500. README.md documents this table; keep them in step.
var httpStatus = map[models.Code]int{
	models.CodeMissingAPIKey:          http.StatusUnauthorized,
	models.CodeInvalidAPIKey:          http.StatusUnauthorized,
	models.CodeInvalidRequest:         http.StatusBadRequest,
	models.CodeInvalidURL:             http.StatusBadRequest,
	models.CodePlanRequired:           http.StatusForbidden,
	models.CodeTestModeOnly:           http.StatusForbidden,
	models.CodeCartNotFound:           http.StatusNotFound,
	models.CodeOrderNotFound:          http.StatusNotFound,
	models.CodeNotFound:               http.StatusNotFound,
	models.CodeMethodNotAllowed:       http.StatusMethodNotAllowed,
	models.CodeCartAlreadyOrdered:     http.StatusConflict,
	models.CodeIdempotencyMismatch:    http.StatusConflict,
	models.CodeProductUnavailable:     http.StatusUnprocessableEntity,
	models.CodeShippingUnavailable:    http.StatusUnprocessableEntity,
	models.CodeInvalidAddress:         http.StatusUnprocessableEntity,
	models.CodeInvalidEmail:           http.StatusUnprocessableEntity,
	models.CodeUnsupportedAsset:       http.StatusUnprocessableEntity,
	models.CodeRateLimited:            http.StatusTooManyRequests,
	models.CodeInternal:               http.StatusInternalServerError,
	models.CodeLiveUnavailable:        http.StatusServiceUnavailable,
	models.CodeUnavailable:            http.StatusServiceUnavailable,
	models.CodeRateUnavailable:        http.StatusServiceUnavailable,
	models.CodeMarketplaceUnavailable: http.StatusServiceUnavailable,
	models.CodeInvalidSignature:       http.StatusUnauthorized,
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

// abort writes err as the contract's error body and stops the chain. A
// *models.Error is shown as is; anything else is an internal failure: it is
// logged here, once, with the request id, and answered with a generic
// message so internals never reach the client.
func abort(c *gin.Context, err error) {
	var me *models.Error
	if !errors.As(err, &me) {
		if errors.Is(err, c.Request.Context().Err()) && c.Request.Context().Err() != nil {
			// The client went away; nobody reads this answer.
			me = models.NewError(models.CodeUnavailable)
		} else {
			loggerFrom(c).ErrorContext(c.Request.Context(), "request failed", slog.Any("error", err))
			me = models.NewError(models.CodeInternal)
		}
	}
	msg := me.Message
	if msg == "" {
		msg = models.DefaultMessage(me.Code)
	}
	c.AbortWithStatusJSON(StatusOf(me.Code), errorBody{Error: errorDetail{Code: me.Code, Message: msg, Field: me.Field}})
}
