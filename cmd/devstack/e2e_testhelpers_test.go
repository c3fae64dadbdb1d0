package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// TestE2ETestHelpers runs the time-moving test helpers through the real
// workflows: POST /v1/test_helpers/orders/{ref}/expire closes an order
// awaiting payment (an hour before its deadline) as the deadline would,
// and the answer already shows it; a partly paid order's payment is due
// back; an order paid, or already closed, is 409 invalid_order_state; a
// live key is 403 test_mode_only.
func TestE2ETestHelpers(t *testing.T) {
	s := startDev(t, "sqlite", map[string]string{"MEMOCART_PAYMENT_WINDOW": "1h"})

	o := s.newOrder(s.key, product)
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/expire", nil)
	require.Equal(t, http.StatusOK, code, body)
	got := obj(body, "order")
	assert.Equal(t, "cancelled", str(got, "status"), "the answer shows the outcome")
	assert.Equal(t, "expired", str(got, "payment_status"))
	assert.Equal(t, "payment_window_expired", str(got, "cancellation_reason"))
	s.requireOrderEnded(str(o, "id"), models.OrderCancelled, "order_expired_by_test_helper.json")
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "id")+"/expire", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "invalid_order_state", str(obj(body, "error"), "code"), "expired already")

	partial := s.partlyPaidOrder(s.key)
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(partial, "id")+"/expire", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "refund_due", str(obj(body, "order"), "payment_status"), "what arrived is due back")

	paid := s.paidOrder(s.key, "delivered")
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(paid, "id")+"/expire", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "invalid_order_state", str(obj(body, "error"), "code"))

	live := s.createKey("dev", "live", "pro")
	code, body = s.do(live, "POST", "/v1/test_helpers/orders/"+str(paid, "id")+"/expire", nil)
	require.Equal(t, http.StatusForbidden, code, body)
	assert.Equal(t, "test_mode_only", str(obj(body, "error"), "code"))
}

// TestE2EAdvanceAndFail runs the fulfilment test helpers through the real
// workflows, with sandbox steps an hour apart so that only the helpers
// move the orders: advance takes a paid order one step a call to
// delivered, each answer showing the step and its tracking; fail makes an
// ordered order fail with the reason picked, its payment due back and its
// refund created; each refuses a state it does not allow, on the order
// as recorded and in its workflow. The refund's fail helper then has its
// next payout refused (twice asked before one payout: refused once).
func TestE2EAdvanceAndFail(t *testing.T) {
	s := startDev(t, "sqlite", map[string]string{"MEMOCART_SANDBOX_STEP_DELAY": "1h"})
	move := func(ref, helper string, body any) (int, map[string]any) {
		t.Helper()
		return s.do(s.key, "POST", "/v1/test_helpers/orders/"+ref+"/"+helper, body)
	}

	o := s.paidOrder(s.key, "paid")
	code, body := move(str(o, "id"), "fail", map[string]any{"reason": "bored"})
	require.Equal(t, http.StatusBadRequest, code, body)
	assert.Equal(t, "reason", str(obj(body, "error"), "field"))
	for _, want := range []string{"ordered", "shipped", "delivered"} {
		code, body := move(str(o, "number"), "advance", nil)
		require.Equal(t, http.StatusOK, code, body)
		got := obj(body, "order")
		assert.Equal(t, want, str(got, "status"), "the answer shows the step")
		if want != "ordered" {
			shipments, _ := got["shipments"].([]any)
			require.Len(t, shipments, 1, "shipped: its parcel")
			assert.Equal(t, "Sandbox Express", str(shipments[0].(map[string]any), "carrier"))
		}
	}
	s.requireOrderEnded(str(o, "id"), models.OrderDelivered, "order_advanced_by_test_helper.json")
	code, body = move(str(o, "id"), "advance", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "invalid_order_state", str(obj(body, "error"), "code"), "delivered already")
	code, body = move(str(o, "id"), "fail", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "invalid_order_state", str(obj(body, "error"), "code"))

	failing := s.paidOrder(s.key, "paid")
	code, body = move(str(failing, "id"), "advance", nil)
	require.Equal(t, http.StatusOK, code, body)
	code, body = move(str(failing, "id"), "fail", map[string]any{"reason": "product_out_of_stock"})
	require.Equal(t, http.StatusOK, code, body)
	got := obj(body, "order")
	assert.Equal(t, "failed", str(got, "status"))
	assert.Equal(t, "refund_due", str(got, "payment_status"))
	assert.Equal(t, models.FulfilmentFailureReason("product_out_of_stock"), str(got, "failure_reason"))
	var refund map[string]any
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := s.do(s.key, "GET", "/v1/refunds?order_id="+str(failing, "id"), nil)
		require.Equal(c, http.StatusOK, code, body)
		data, _ := body["data"].([]any)
		require.Len(c, data, 1, "the refund it owes, created by its workflow")
		refund = data[0].(map[string]any)
	}, time.Minute, 200*time.Millisecond)

	// The refund's fail helper: its next payout is refused, once.
	refundPath := "/v1/test_helpers/refunds/" + str(refund, "id") + "/fail"
	code, body = s.do(s.key, "POST", refundPath, map[string]any{"reason": "no_trust"})
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "awaiting_destination", str(obj(body, "refund"), "status"), "answered as it stands")
	// A refused payout is written by the payout's activity a moment
	// before the refund's workflow takes its answer in: a client that
	// reads failed and at once moves the refund is answered as the
	// stored refund allows, never 409 "sending" (the API asks again).
	moved := func(method, path string, body any) {
		t.Helper()
		code, got := s.do(s.key, method, path, body)
		require.Equal(t, http.StatusOK, code, "%v", got)
	}
	setDestination := func(address string) {
		t.Helper()
		moved("POST", "/v1/orders/"+str(failing, "id")+"/refund_destination", map[string]any{"address": address})
	}
	waitRefund := func(status string) map[string]any {
		t.Helper()
		var r map[string]any
		require.Eventually(t, func() bool {
			_, b := s.do(s.key, "GET", "/v1/refunds/"+str(refund, "id"), nil)
			r = obj(b, "refund")
			return str(r, "status") == status
		}, time.Minute, 50*time.Millisecond, "refund %s: %v", status, r)
		return r
	}
	setDestination("GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H")
	refused := waitRefund("failed")
	assert.Contains(t, str(refused, "failure_reason"), "trustline", "refused as the network refuses an account without a trustline")
	moved("POST", refundPath, map[string]any{"reason": "no_account"}) // a failed refund takes another
	moved("POST", refundPath, map[string]any{"reason": "no_account"})
	setDestination("GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7")
	waitRefund("failed")
	setDestination("GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN")
	waitRefund("sent")
	if *recordHistories {
		writeWorkflowHistory(t, s, models.RefundWorkflowID(str(refund, "id")), "refund_test_payouts_refused.json")
	}
	code, body = s.do(s.key, "POST", refundPath, nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "invalid_refund_state", str(obj(body, "error"), "code"), "sent: nothing left to refuse")

	unpaid := s.newOrder(s.key, product)
	code, body = move(str(unpaid, "id"), "advance", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Contains(t, str(obj(body, "error"), "message"), "awaiting payment")
}
