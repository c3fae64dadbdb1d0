package api_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

func (e *ordersEnv) cancel(t *testing.T, key, ref, body string) response {
	t.Helper()
	return e.send(t, request{method: http.MethodPost, path: "/v1/orders/" + url.PathEscape(ref) + "/cancel", auth: "Bearer " + key, body: body})
}

// newOrder creates a test-mode order through the API.
func (e *ordersEnv) newOrder(t *testing.T, key string) createdOrder {
	t.Helper()
	o, _ := e.newOrderTotal(t, key)
	return o
}

// newOrderTotal creates a test-mode order through the API for a new cart,
// its request body edited as orderBody edits it, and returns it with the
// cart's total.
func (e *ordersEnv) newOrderTotal(t *testing.T, key string, edits ...func(body, addr map[string]any)) (createdOrder, decimal.Decimal) {
	t.Helper()
	cartID, total := e.newCart(t, key)
	r := e.postOrder(t, key, orderBody(cartID, edits...), nil)
	require.Equalf(t, http.StatusCreated, r.status, "body %s", r.body)
	return decodeCreated(t, r), total
}

func cancelledView(t *testing.T, r response) orderView {
	t.Helper()
	require.Equalf(t, http.StatusOK, r.status, "body %s", r.body)
	return decodeOrderView(t, r)
}

// TestCancelOrder: POST /v1/orders/{ref}/cancel cancels an order awaiting
// payment through its workflow and answers the order as cancelled, with
// cancellation_reason; again, it answers the same (idempotent); a paid
// order is 409 order_not_cancellable.
func TestCancelOrder(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		// Free tier: cancelling is part of the basic flow.
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierFree)
		o := e.newOrder(t, key)

		before := decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key))
		assert.Nil(t, before.CancellationReason, "null while not cancelled")
		assert.Contains(t, string(e.get(t, "/v1/orders/"+o.ID, key).body), `"cancellation_reason":null`)

		v := cancelledView(t, e.cancel(t, key, o.Number, `{"reason":"  changed my mind  "}`))
		assert.Equal(t, "cancelled", v.Status)
		assert.Equal(t, "cancelled", v.PaymentStatus)
		require.NotNil(t, v.CancellationReason)
		assert.Equal(t, "requested_by_customer", *v.CancellationReason)
		assert.Equal(t, "cancelled", v.Tracking.CurrentStep)
		assert.Equal(t, []string{o.ID + "/changed my mind"}, e.wf.cancelCalls(), "through the workflow, with the trimmed note")
		assert.Equal(t, v, decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key)), "GET shows what the cancel answered")
		stored := e.storedOrder(t, accountID, models.ModeTest, o.ID)
		assert.Equal(t, models.CancellationRequestedByCustomer, stored.Cancellation)
		assert.Equal(t, "cancelled by the customer (API): changed my mind", stored.StatusReason)

		// Again, by id and without a body: the same answer, the workflow
		// is not asked again.
		again := e.cancel(t, key, o.ID, "")
		assert.Equal(t, v, cancelledView(t, again))
		assert.Len(t, e.wf.cancelCalls(), 1)

		// A paid order (and anything beyond) is refused, without asking
		// the workflow.
		paid := e.newOrder(t, key)
		require.NoError(t, e.st.RecordTransition(t.Context(), paid.ID, models.Transition{Status: models.OrderPaid,
			PaymentStatus: models.PaymentConfirmed, At: e.clock.Now(), AmountReceived: decimal.RequireFromString("1")}, time.Now()))
		d := requireError(t, e.cancel(t, key, paid.ID, ""), http.StatusConflict, models.CodeOrderNotCancellable, "")
		assert.Contains(t, d.Message, "paid")
		assert.Len(t, e.wf.cancelCalls(), 1)
		assert.Equal(t, "paid", decodeOrderView(t, e.get(t, "/v1/orders/"+paid.ID, key)).Status)

		// After a partial payment: cancelled, the money is due back.
		partial := e.newOrder(t, key)
		require.NoError(t, e.st.RecordTransition(t.Context(), partial.ID, models.Transition{Status: models.OrderCreated,
			PaymentStatus: models.PaymentPartial, At: e.clock.Now(), AmountReceived: decimal.RequireFromString("1")}, time.Now()))
		pv := cancelledView(t, e.cancel(t, key, partial.ID, `{}`))
		assert.Equal(t, "refund_due", pv.PaymentStatus)
		assert.Equal(t, "1", pv.Payment.AmountReceived)
	})
}

// TestCancelOrderRaces: the database said "awaiting payment" but the
// workflow knew better.
func TestCancelOrderRaces(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite)
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)

	t.Run("paid meanwhile: the workflow refuses", func(t *testing.T) {
		o := e.newOrder(t, key)
		e.wf.setCancel(models.Errorf(models.CodeOrderNotCancellable, "The order is paid: only an order awaiting payment can be cancelled"), false)
		defer e.wf.setCancel(nil, false)
		d := requireError(t, e.cancel(t, key, o.ID, ""), http.StatusConflict, models.CodeOrderNotCancellable, "")
		assert.Contains(t, d.Message, "paid")
	})
	t.Run("expired meanwhile: the workflow had finished", func(t *testing.T) {
		o := e.newOrder(t, key)
		require.NoError(t, e.st.RecordTransition(t.Context(), o.ID, models.Transition{Status: models.OrderCancelled,
			PaymentStatus: models.PaymentExpired, At: e.clock.Now(), Reason: "payment deadline passed",
			Cancellation: models.CancellationPaymentWindowExpired}, time.Now()))
		// The cancel saw it awaiting payment just before: simulate by
		// answering as a finished workflow does.
		e.wf.setCancel(models.ErrOrderClosed, false)
		defer e.wf.setCancel(nil, false)
		v := cancelledView(t, e.cancel(t, key, o.ID, ""))
		require.NotNil(t, v.CancellationReason)
		assert.Equal(t, "payment_window_expired", *v.CancellationReason, "cancelled already, by the deadline")
	})
	t.Run("finished otherwise", func(t *testing.T) {
		o := e.newOrder(t, key)
		// The workflow finished, yet the database still says created (it
		// was terminated): nothing can cancel it any more.
		e.wf.setCancel(models.ErrOrderClosed, false)
		defer e.wf.setCancel(nil, false)
		requireError(t, e.cancel(t, key, o.ID, ""), http.StatusConflict, models.CodeOrderNotCancellable, "")
	})
	t.Run("workflow not started yet: started, then cancelled", func(t *testing.T) {
		e.wf.fail(errors.New("temporal: connection refused"))
		cartID, _ := e.newCart(t, key)
		r := e.postOrder(t, key, orderBody(cartID), nil)
		require.Equal(t, http.StatusServiceUnavailable, r.status, "saved, not started")
		e.wf.fail(nil)
		var orderID string
		for _, o := range e.wf.started() {
			if o.CartID == cartID {
				orderID = o.ID
			}
		}
		require.NotEmpty(t, orderID)
		startsBefore := len(e.wf.started())
		v := cancelledView(t, e.cancel(t, key, orderID, ""))
		assert.Equal(t, "cancelled", v.Status)
		assert.Len(t, e.wf.started(), startsBefore+1, "the workflow is started before it is asked to cancel")
	})
}

// TestCancelOrderErrors: every refusal in the envelope, with the field
// named where one is at fault.
func TestCancelOrderErrors(t *testing.T) {
	e := newOrdersEnv(t, sqlstore.DialectSQLite, withRequestTimeout(300*time.Millisecond))
	key, _ := e.accountKey(t, "acme", models.ModeTest, models.TierPro)
	other, _ := e.accountKey(t, "globex", models.ModeTest, models.TierPro)
	live, _ := e.accountKey(t, "acme", models.ModeLive, models.TierPro)
	o := e.newOrder(t, key)

	for _, tt := range []struct {
		name, key, ref, body string
		status               int
		code                 models.Code
		field                string
	}{
		{"another account", other, o.ID, "", http.StatusNotFound, models.CodeOrderNotFound, ""},
		{"the other mode", live, o.Number, "", http.StatusNotFound, models.CodeOrderNotFound, ""},
		{"not an order reference", key, "ord_x", "", http.StatusNotFound, models.CodeOrderNotFound, ""},
		{"reason too long", key, o.ID, `{"reason":"` + strings.Repeat("é", models.MaxCancelNote+1) + `"}`, http.StatusBadRequest, models.CodeInvalidRequest, "reason"},
		{"reason not a string", key, o.ID, `{"reason":5}`, http.StatusBadRequest, models.CodeInvalidRequest, "reason"},
		{"unknown field", key, o.ID, `{"why":"x"}`, http.StatusBadRequest, models.CodeInvalidRequest, "why"},
		{"not JSON", key, o.ID, `reason=x`, http.StatusBadRequest, models.CodeInvalidRequest, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requireError(t, e.cancel(t, tt.key, tt.ref, tt.body), tt.status, tt.code, tt.field)
		})
	}
	t.Run("no key", func(t *testing.T) {
		r := e.send(t, request{method: http.MethodPost, path: "/v1/orders/" + o.ID + "/cancel"})
		requireError(t, r, http.StatusUnauthorized, models.CodeMissingAPIKey, "")
	})
	t.Run("not application/json", func(t *testing.T) {
		r := e.send(t, request{method: http.MethodPost, path: "/v1/orders/" + o.ID + "/cancel", auth: "Bearer " + key,
			body: `{"reason":"x"}`, header: map[string]string{"Content-Type": "text/plain"}})
		requireError(t, r, http.StatusUnsupportedMediaType, models.CodeUnsupportedMediaType, "")
	})
	t.Run("GET is not allowed", func(t *testing.T) {
		requireError(t, e.get(t, "/v1/orders/"+o.ID+"/cancel", key), http.StatusMethodNotAllowed, models.CodeMethodNotAllowed, "")
	})
	t.Run("at the limit", func(t *testing.T) {
		o := e.newOrder(t, key)
		note := strings.Repeat("é", models.MaxCancelNote)
		cancelledView(t, e.cancel(t, key, o.ID, `{"reason":"`+note+`"}`))
		calls := e.wf.cancelCalls()
		assert.Equal(t, o.ID+"/"+note, calls[len(calls)-1])
	})
	assert.Empty(t, filter(e.wf.cancelCalls(), o.ID), "no refused request reached the workflow")

	t.Run("Temporal unavailable", func(t *testing.T) {
		e.wf.setCancel(serviceerror.NewUnavailable("connection refused"), false)
		defer e.wf.setCancel(nil, false)
		r := e.cancel(t, key, o.ID, "")
		requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
		assert.Equal(t, "2", r.header.Get("Retry-After"))
	})
	t.Run("Temporal hung: 503 at the request's deadline", func(t *testing.T) {
		e.wf.setCancel(nil, true)
		defer e.wf.setCancel(nil, false)
		start := time.Now()
		r := e.cancel(t, key, o.ID, "")
		requireError(t, r, http.StatusServiceUnavailable, models.CodeUnavailable, "")
		assert.Less(t, time.Since(start), 3*time.Second)
	})
	assert.Equal(t, "created", decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key)).Status, "nothing changed")
}

// filter returns the calls about orderID.
func filter(calls []string, orderID string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, orderID+"/") {
			out = append(out, c)
		}
	}
	return out
}
