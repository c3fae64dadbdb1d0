package api_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

func (e *ordersEnv) expire(t *testing.T, key, ref string) response {
	t.Helper()
	return e.send(t, request{method: http.MethodPost, path: "/v1/test_helpers/orders/" + url.PathEscape(ref) + "/expire", auth: "Bearer " + key})
}

// POST /v1/test_helpers/orders/{ref}/expire: an order awaiting payment
// is closed as its deadline would close it, and answered as it then
// stands; any other state is 409 invalid_order_state, a live key 403
// test_mode_only, another account's order 404. (The workflow's part is
// the fake's here; TestE2ETestHelpers runs the real one.)
func TestExpireTestHelper(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierFree)

		o := e.newOrder(t, key)
		r := e.expire(t, key, o.Number)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		v := decodeOrderView(t, r)
		assert.Equal(t, "cancelled", v.Status)
		assert.Equal(t, "expired", v.PaymentStatus)
		require.NotNil(t, v.CancellationReason)
		assert.Equal(t, "payment_window_expired", *v.CancellationReason)
		assert.Equal(t, v, decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key)), "GET shows what expire answered")

		partial := e.newOrder(t, key)
		require.NoError(t, e.st.RecordTransition(t.Context(), partial.ID, models.Transition{Status: models.OrderCreated,
			PaymentStatus: models.PaymentPartial, At: e.clock.Now(), AmountReceived: decimal.RequireFromString("1.00")}, time.Now()))
		r = e.expire(t, key, partial.ID)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		assert.Equal(t, "refund_due", decodeOrderView(t, r).PaymentStatus, "what part arrived is due back")

		// Refused: cancelled (just expired), paid, paid in full but not
		// moved on yet.
		requireError(t, e.expire(t, key, o.ID), http.StatusConflict, models.CodeInvalidOrderState, "")
		paid := e.newOrder(t, key)
		stored := e.storedOrder(t, accountID, models.ModeTest, paid.ID)
		require.NoError(t, e.st.RecordTransition(t.Context(), paid.ID, models.Transition{Status: models.OrderPaid,
			PaymentStatus: models.PaymentConfirmed, At: e.clock.Now(), AmountReceived: stored.PaymentAmount}, time.Now()))
		refused := requireError(t, e.expire(t, key, paid.ID), http.StatusConflict, models.CodeInvalidOrderState, "")
		assert.Contains(t, refused.Message, "paid")
		inFull := e.newOrder(t, key)
		stored = e.storedOrder(t, accountID, models.ModeTest, inFull.ID)
		require.NoError(t, e.st.RecordTransition(t.Context(), inFull.ID, models.Transition{Status: models.OrderCreated,
			PaymentStatus: models.PaymentConfirmed, At: e.clock.Now(), AmountReceived: stored.PaymentAmount}, time.Now()))
		refused = requireError(t, e.expire(t, key, inFull.ID), http.StatusConflict, models.CodeInvalidOrderState, "")
		assert.Contains(t, refused.Message, "paid", "paid in all but name")

		// Not the key's: another account's order, a live key, no order.
		other, _ := e.accountKey(t, "rival", models.ModeTest, models.TierFree)
		requireError(t, e.expire(t, other, inFull.ID), http.StatusNotFound, models.CodeOrderNotFound, "")
		live, _ := e.accountKey(t, "acme-live", models.ModeLive, models.TierFree)
		requireError(t, e.expire(t, live, inFull.ID), http.StatusForbidden, models.CodeTestModeOnly, "")
		requireError(t, e.expire(t, key, "nope"), http.StatusNotFound, models.CodeOrderNotFound, "")
	})
}

func (e *ordersEnv) move(t *testing.T, key, ref, helper, body string) response {
	t.Helper()
	r := request{method: http.MethodPost, path: "/v1/test_helpers/orders/" + url.PathEscape(ref) + "/" + helper, auth: "Bearer " + key}
	if body != "" {
		r.body = body
	}
	return e.send(t, r)
}

// paidOrder is a new order of key's, recorded paid in full.
func (e *ordersEnv) paidOrder(t *testing.T, key, accountID string) createdOrder {
	t.Helper()
	o := e.newOrder(t, key)
	stored := e.storedOrder(t, accountID, models.ModeTest, o.ID)
	require.NoError(t, e.st.RecordTransition(t.Context(), o.ID, models.Transition{Status: models.OrderPaid,
		PaymentStatus: models.PaymentConfirmed, At: e.clock.Now(), AmountReceived: stored.PaymentAmount}, time.Now()))
	return o
}

// POST /v1/test_helpers/orders/{ref}/advance and …/fail: a paid order
// moves one step, or fails with the reason picked (by default
// product_unavailable), and is answered as it then stands; a state the
// move does not allow is 409 invalid_order_state naming it, an unknown
// reason 400 on its field, a live key 403, another account's order 404.
// (The workflow's part is the fake's here; TestE2ETestHelpers runs the
// real one.)
func TestAdvanceAndFailTestHelpers(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newOrdersEnv(t, dialect)
		key, accountID := e.accountKey(t, "acme", models.ModeTest, models.TierFree)

		o := e.paidOrder(t, key, accountID)
		for _, want := range []string{"ordered", "shipped", "delivered"} {
			r := e.move(t, key, o.Number, "advance", "")
			require.Equal(t, http.StatusOK, r.status, string(r.body))
			v := decodeOrderView(t, r)
			assert.Equal(t, want, v.Status)
			assert.Equal(t, v, decodeOrderView(t, e.get(t, "/v1/orders/"+o.ID, key)), "GET shows what advance answered")
		}
		refused := requireError(t, e.move(t, key, o.ID, "advance", ""), http.StatusConflict, models.CodeInvalidOrderState, "")
		assert.Contains(t, refused.Message, "delivered")
		refused = requireError(t, e.move(t, key, o.ID, "fail", ""), http.StatusConflict, models.CodeInvalidOrderState, "")
		assert.Contains(t, refused.Message, "delivered")

		unpaid := e.newOrder(t, key)
		refused = requireError(t, e.move(t, key, unpaid.ID, "advance", ""), http.StatusConflict, models.CodeInvalidOrderState, "")
		assert.Contains(t, refused.Message, "awaiting payment")
		requireError(t, e.move(t, key, unpaid.ID, "fail", ""), http.StatusConflict, models.CodeInvalidOrderState, "")

		failing := e.paidOrder(t, key, accountID)
		r := e.move(t, key, failing.ID, "fail", "")
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		v := decodeOrderView(t, r)
		assert.Equal(t, "failed", v.Status)
		assert.Equal(t, "refund_due", v.PaymentStatus)
		require.NotNil(t, v.FailureReason)
		assert.Equal(t, models.FulfilmentFailureReason(models.DefaultTestFailure), *v.FailureReason)

		picked := e.paidOrder(t, key, accountID)
		requireError(t, e.move(t, key, picked.ID, "fail", `{"reason":"bored"}`), http.StatusBadRequest, models.CodeInvalidRequest, "reason")
		requireError(t, e.move(t, key, picked.ID, "fail", `{"reason":"product_out_of_stock","why":1}`), http.StatusBadRequest, models.CodeInvalidRequest, "why")
		r = e.move(t, key, picked.ID, "advance", "")
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		r = e.move(t, key, picked.ID, "fail", `{"reason":"product_out_of_stock"}`)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		v = decodeOrderView(t, r)
		assert.Equal(t, "failed", v.Status, "an ordered order can still fail")
		assert.Equal(t, models.FulfilmentFailureReason("product_out_of_stock"), *v.FailureReason)

		shipped := e.paidOrder(t, key, accountID)
		for range 2 {
			require.Equal(t, http.StatusOK, e.move(t, key, shipped.ID, "advance", "").status)
		}
		refused = requireError(t, e.move(t, key, shipped.ID, "fail", ""), http.StatusConflict, models.CodeInvalidOrderState, "")
		assert.Contains(t, refused.Message, "shipped")

		other, _ := e.accountKey(t, "rival", models.ModeTest, models.TierFree)
		live, _ := e.accountKey(t, "acme-live", models.ModeLive, models.TierFree)
		fresh := e.paidOrder(t, key, accountID)
		for _, helper := range []string{"advance", "fail"} {
			requireError(t, e.move(t, other, fresh.ID, helper, ""), http.StatusNotFound, models.CodeOrderNotFound, "")
			requireError(t, e.move(t, live, fresh.ID, helper, ""), http.StatusForbidden, models.CodeTestModeOnly, "")
			requireError(t, e.move(t, live, fresh.ID, helper, `{"reason":`), http.StatusForbidden, models.CodeTestModeOnly, "") // refused before its body is read
			requireError(t, e.move(t, key, "nope", helper, ""), http.StatusNotFound, models.CodeOrderNotFound, "")
		}
		assert.Equal(t, "paid", decodeOrderView(t, e.get(t, "/v1/orders/"+fresh.ID, key)).Status, "refusals moved nothing")
	})
}
