package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// TestE2ETestHelpers runs the time-moving test helpers through the real
// workflows: POST /v1/test_helpers/orders/{ref}/expire closes an order
// awaiting payment (an hour before its deadline) as the deadline would,
// and the answer already shows it; a partly paid order's payment is due
// back; an order paid, or already closed, is 409 invalid_order_state; a
// live key is 403 test_mode_only.
func TestE2ETestHelpers(t *testing.T) {
	s := startDev(t, "sqlite", map[string]string{"MEMOCART_PAYMENT_WINDOW": "1h"})
	ctx := context.Background()

	o := s.newOrder(s.key, product)
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/expire", nil)
	require.Equal(t, http.StatusOK, code, body)
	got := obj(body, "order")
	assert.Equal(t, "cancelled", str(got, "status"), "the answer shows the outcome")
	assert.Equal(t, "expired", str(got, "payment_status"))
	assert.Equal(t, "payment_window_expired", str(got, "cancellation_reason"))
	var res workflows.OrderResult
	require.NoError(t, s.client.GetWorkflow(ctx, models.WorkflowID(str(o, "id")), "").Get(ctx, &res), "the workflow ends")
	assert.Equal(t, models.OrderCancelled, res.Status)
	if *recordHistories {
		writeHistory(t, s, str(o, "id"), "order_expired_by_test_helper.json")
	}
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "id")+"/expire", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "invalid_order_state", str(obj(body, "error"), "code"), "expired already")

	partial := s.partlyPaidOrder(s.key)
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(partial, "id")+"/expire", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "refund_due", str(obj(body, "order"), "payment_status"), "what arrived is due back")

	paid := s.newOrder(s.key, product)
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(paid, "number")+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	s.waitStatus(s.key, str(paid, "number"), "delivered")
	code, body = s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(paid, "id")+"/expire", nil)
	require.Equal(t, http.StatusConflict, code, body)
	assert.Equal(t, "invalid_order_state", str(obj(body, "error"), "code"))

	live := s.createKey("dev", "live", "pro")
	code, body = s.do(live, "POST", "/v1/test_helpers/orders/"+str(paid, "id")+"/expire", nil)
	require.Equal(t, http.StatusForbidden, code, body)
	assert.Equal(t, "test_mode_only", str(obj(body, "error"), "code"))
}
