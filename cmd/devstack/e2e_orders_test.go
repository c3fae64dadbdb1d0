package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// TestE2ECancelThroughTheAPI cancels orders with POST /v1/orders/{ref}/cancel
// on the real stack: the workflow's update cancels an unpaid order and the
// answer already shows it; a second cancel, an order the deadline
// cancelled, and a payment after cancellation behave as documented; a paid
// order is refused by status. With -record-histories it records the
// customer's cancel for the replay test.
func TestE2ECancelThroughTheAPI(t *testing.T) {
	s := startDev(t, "sqlite", map[string]string{"MEMOCART_PAYMENT_WINDOW": "10s"})

	o := s.newOrder(s.key, product)
	code, body := s.do(s.key, "POST", "/v1/orders/"+str(o, "number")+"/cancel", map[string]any{"reason": "changed my mind"})
	require.Equal(t, http.StatusOK, code, body)
	got := obj(body, "order")
	assert.Equal(t, "cancelled", str(got, "status"), "the answer shows the cancellation")
	assert.Equal(t, "cancelled", str(got, "payment_status"))
	assert.Equal(t, "requested_by_customer", str(got, "cancellation_reason"))
	s.requireOrderEnded(str(o, "id"), models.OrderCancelled, "order_customer_cancel.json")

	// Again: the same order, 200 (the workflow has finished by now).
	code, body = s.do(s.key, "POST", "/v1/orders/"+str(o, "id")+"/cancel", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "requested_by_customer", str(obj(body, "order"), "cancellation_reason"))

	// A payment after cancellation is recorded and due back.
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	require.Eventually(t, func() bool {
		_, b := s.do(s.key, "GET", "/v1/orders/"+str(o, "number"), nil)
		ps, _ := obj(b, "order")["payments"].([]any)
		return str(obj(b, "order"), "payment_status") == "refund_due" && len(ps) == 1 && str(ps[0].(map[string]any), "outcome") == "late"
	}, 20*time.Second, 50*time.Millisecond, "refund due, the payment late")

	// Partly paid, then cancelled: the money is due back.
	partial := s.partlyPaidOrder(s.key)
	code, body = s.do(s.key, "POST", "/v1/orders/"+str(partial, "id")+"/cancel", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "refund_due", str(obj(body, "order"), "payment_status"))

	// Paid: refused.
	paid := s.paidOrder(s.key, "delivered")
	code, body = s.do(s.key, "POST", "/v1/orders/"+str(paid, "id")+"/cancel", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "order_not_cancellable", str(obj(body, "error"), "code"))

	// Cancelled by its deadline: a cancel answers it as it is.
	expired := s.newOrder(s.key, product)
	final, _ := s.waitStatus(s.key, str(expired, "number"), "cancelled")
	assert.Equal(t, "payment_window_expired", str(final, "cancellation_reason"))
	code, body = s.do(s.key, "POST", "/v1/orders/"+str(expired, "id")+"/cancel", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "payment_window_expired", str(obj(body, "order"), "cancellation_reason"))
}
