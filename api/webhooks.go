package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// FulfilmentWebhook reads one buying provider's webhook deliveries: it
// verifies the signature over the raw body (an error with
// models.CodeInvalidSignature when it does not verify) and says which
// order the delivery is about.
type FulfilmentWebhook interface {
	Read(h http.Header, body []byte) (models.FulfilmentEvent, error)
}

// maxWebhookBytes bounds a provider's delivery: an order with its
// shipments and checkpoints is a few kilobytes.
const maxWebhookBytes = 1 << 20

// providerWebhook is POST /webhooks/{provider}. A verified delivery
// becomes a signal to the order's workflow, so the order moves on as soon
// as the provider reports a change; polling remains the safety net. What
// the delivery says about the order is not trusted beyond "look now": the
// workflow asks the provider, so duplicate, late and out-of-order
// deliveries change nothing.
//
// Answers: 204 when handed over, or when there is nothing to hand over to
// (an order we do not know, or one that has finished: the provider must
// not retry those forever); 401 when the signature does not verify; 503
// when the workflow cannot be reached, so the provider retries.
func (s *Server) providerWebhook(c *gin.Context) {
	ctx := c.Request.Context()
	hook, ok := s.deps.Webhooks[c.Param("provider")]
	if !ok || hook == nil {
		abort(c, models.NewError(models.CodeNotFound))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxWebhookBytes))
	if err != nil {
		abort(c, models.Errorf(models.CodeInvalidRequest, "Webhook body is unreadable or larger than %d bytes", maxWebhookBytes))
		return
	}
	ev, err := hook.Read(c.Request.Header, body)
	if err != nil {
		loggerFrom(c).WarnContext(ctx, "provider webhook refused", slog.String("provider", c.Param("provider")), slog.Any("error", err))
		abort(c, err)
		return
	}
	log := loggerFrom(c).With(slog.String("provider", c.Param("provider")), slog.String("event_id", ev.EventID), slog.String("ref", ev.Ref))
	if ev.NoNews {
		log.InfoContext(ctx, "provider webhook brings no news for the order's workflow; not handed over")
		c.Status(http.StatusNoContent)
		return
	}
	// Even a signed body is checked before its text reaches a driver.
	for _, s := range []string{ev.Ref, ev.OrderID, ev.EventID} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			abort(c, models.Errorf(models.CodeInvalidRequest, "Webhook names an order with characters no order has"))
			return
		}
	}
	if ev.OrderID == "" && ev.Ref != "" {
		ev.OrderID, err = s.orderIDBySupplierRef(ctx, ev.Ref)
		if err != nil && !errors.Is(err, models.ErrOrderNotFound) {
			abort(c, err)
			return
		}
	}
	if ev.OrderID == "" {
		log.InfoContext(ctx, "provider webhook about no order of ours; ignored")
		c.Status(http.StatusNoContent)
		return
	}
	switch err := s.deps.Workflows.FulfilmentUpdated(ctx, ev.OrderID, ev); {
	case err == nil:
		log.InfoContext(ctx, "provider webhook handed to the order's workflow", slog.String("order_id", ev.OrderID))
	case errors.Is(err, models.ErrOrderClosed), errors.Is(err, models.ErrOrderNotFound):
		log.InfoContext(ctx, "provider webhook for a finished or unknown order; ignored", slog.String("order_id", ev.OrderID))
	default:
		log.ErrorContext(ctx, "handing a provider webhook to the workflow", slog.String("order_id", ev.OrderID), slog.Any("error", err))
		abort(c, models.NewError(models.CodeUnavailable))
		return
	}
	c.Status(http.StatusNoContent)
}

// supplierRefWait bounds how long a provider's report naming an unknown
// reference waits for it to be stored.
const supplierRefWait = 3 * time.Second

// orderIDBySupplierRef finds the order a provider's reference names. A
// provider can report on an order in the instant between accepting it and
// the PlaceOrder activity storing its reference (deliveries come out of
// order), and a report dropped then is not sent again, leaving the order
// to its next scheduled check: so an unknown reference is looked up again
// for a short while before the report is dropped. Wall time, not the
// service's clock: this is a wait for another process's write.
func (s *Server) orderIDBySupplierRef(ctx context.Context, ref string) (string, error) {
	deadline := time.Now().Add(supplierRefWait)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		id, err := s.deps.Store.OrderIDBySupplierRef(ctx, ref)
		if !errors.Is(err, models.ErrOrderNotFound) || time.Now().Add(delay).After(deadline) {
			return id, err
		}
		select {
		case <-ctx.Done():
			return id, err
		case <-time.After(delay):
		}
	}
}
