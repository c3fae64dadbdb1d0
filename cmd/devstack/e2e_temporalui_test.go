package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// savedViews reads the saved views table of docs/operators.md: view name
// → query, the text between the first pair of backticks of the second
// column. The tests run these very queries, so the documentation cannot
// drift from what the workflow sets.
func savedViews(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "operators.md"))
	require.NoError(t, err)
	defer f.Close()
	views := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "| Saved view | Query |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "| ") {
			break
		}
		cells := strings.Split(line, " | ")
		require.GreaterOrEqual(t, len(cells), 2, line)
		q := strings.SplitN(cells[1], "`", 3)
		require.Len(t, q, 3, "no `query` in %q", line)
		views[strings.TrimPrefix(cells[0], "| ")] = q[1]
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, views, "no saved views table in docs/operators.md")
	return views
}

// listed runs query and returns the status of the workflow id it lists, or
// UNSPECIFIED if it does not list it.
func (s *stack) listed(t *testing.T, query, workflowID string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	resp, err := s.client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query})
	require.NoError(t, err, "the documented query %q", query)
	for _, e := range resp.GetExecutions() {
		if e.GetExecution().GetWorkflowId() == workflowID {
			return e.GetStatus()
		}
	}
	return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
}

// TestE2EFailedOrderInTheTemporalUI follows a failed order (the sandbox
// product whose sourcing fails after payment) and its refund through the
// saved views docs/operators.md tells operators to set up: the order's
// workflow ends Failed at once, handing the money to a Refund workflow,
// which waits for the payer's destination, then (test mode approves every
// refund) pays it in the sandbox and closes; the order then reads
// refunded. With -record-histories it records both runs for the replay
// test.
func TestE2EFailedOrderInTheTemporalUI(t *testing.T) {
	views := savedViews(t)
	s := startDev(t, "sqlite", nil)
	ctx := context.Background()

	// Every documented query is one the server accepts.
	for name, q := range views {
		_, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: q})
		require.NoError(t, err, "saved view %q: %s", name, q)
	}
	for _, name := range []string{"Failed orders", "Refund queue", "Refunds awaiting the payer", "Refunds", "Closed owing money", "Delivered", "Live orders"} {
		require.Contains(t, views, name)
	}

	o := s.newOrder(s.key, "https://www.amazon.com/dp/B0FAILSRC0")
	id := models.WorkflowID(str(o, "id"))
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	final, _ := s.waitStatus(s.key, str(o, "number"), "failed")
	require.Equal(t, "refund_due", str(final, "payment_status"))

	// The order's workflow ends Failed without waiting: a red badge,
	// counted under Failures; its money is its refund's.
	var res workflows.OrderResult
	err := s.client.GetWorkflow(ctx, id, "").Get(ctx, &res)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr, "the workflow ends Failed")
	assert.Equal(t, workflows.OrderFailedError, appErr.Type())
	require.NoError(t, appErr.Details(&res))
	assert.Equal(t, models.PaymentRefundDue, res.PaymentStatus)

	failed := enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
	require.Eventually(t, func() bool {
		return s.listed(t, views["Failed orders"], id) == failed && s.listed(t, views["Closed owing money"], id) == failed
	}, 30*time.Second, 100*time.Millisecond, "the failed order is in Failed orders and Closed owing money")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, s.listed(t, views["Delivered"], id))
	assert.Equal(t, failed, s.listed(t, `WorkflowType = "Order" AND OrderMode = "test"`, id))
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, s.listed(t, views["Live orders"], id))

	// Its refund waits for the payer, in the order and in the UI.
	code, body = s.do(s.key, "GET", "/v1/orders/"+str(o, "number"), nil)
	require.Equal(t, http.StatusOK, code, body)
	refunds := obj(body, "order")["refunds"].([]any)
	require.Len(t, refunds, 1, body)
	refund := refunds[0].(map[string]any)
	assert.Equal(t, "awaiting_destination", str(refund, "status"))
	assert.Equal(t, "order_failed", str(refund, "reason"))
	assert.Equal(t, str(obj(final, "payment"), "amount_received"), str(refund, "amount"))
	rid := models.RefundWorkflowID(str(refund, "id"))
	running := enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	require.Eventually(t, func() bool {
		return s.listed(t, views["Refunds awaiting the payer"], rid) == running
	}, 30*time.Second, 100*time.Millisecond, "the refund waits for the payer")
	assert.Equal(t, running, s.listed(t, `WorkflowType = "Refund" AND OrderNumber = "`+str(o, "number")+`" AND OrderMode = "test"`, rid))
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, s.listed(t, views["Refund queue"], rid))

	// The client says where the money goes; test mode pays it at once.
	dest := map[string]any{"address": sandboxRefundAddress, "memo_type": "text", "memo": "refund 1"}
	code, body = s.do(s.key, "POST", "/v1/orders/"+str(o, "number")+"/refund_destination", dest)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, sandboxRefundAddress, str(obj(obj(body, "order"), "refund_destination"), "address"))

	var sent map[string]any
	require.Eventually(t, func() bool {
		_, b := s.do(s.key, "GET", "/v1/refunds/"+str(refund, "id"), nil)
		sent = obj(b, "refund")
		return str(sent, "status") == "sent"
	}, 30*time.Second, 100*time.Millisecond, "the refund is sent")
	assert.Regexp(t, `^[0-9a-f]{64}$`, str(sent, "transaction_hash"))
	assert.Equal(t, "refund 1", str(obj(sent, "destination"), "memo"))
	var out workflows.RefundOutcome
	require.NoError(t, s.client.GetWorkflow(ctx, rid, "").Get(ctx, &out))
	assert.Equal(t, models.RefundSent, out.Status)
	assert.Equal(t, str(sent, "transaction_hash"), out.TransactionHash)
	completed := enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	require.Eventually(t, func() bool {
		return s.listed(t, views["Refunds"], rid) == completed &&
			s.listed(t, views["Refunds awaiting the payer"], rid) == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
	}, 30*time.Second, 100*time.Millisecond, "the sent refund's workflow has completed")
	assert.Equal(t, completed, s.listed(t, `WorkflowType = "Refund" AND RefundStatus = "sent"`, rid))

	code, body = s.do(s.key, "GET", "/v1/orders/"+str(o, "number"), nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "refunded", str(obj(body, "order"), "payment_status"), "the order is refunded once its refund is sent")
	code, body = s.do(s.key, "GET", "/v1/refunds?order_id="+str(o, "id"), nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Len(t, body["data"].([]any), 1)

	// The operator's list has it; moving a sent refund is refused.
	env := func(k string) string {
		if k == "MEMOCART_TEMPORAL_ADDRESS" {
			return s.temporal
		}
		return s.env[k]
	}
	var stdout, stderr syncBuffer
	require.NoError(t, run(ctx, []string{"refunds", "list", "--status", "sent"}, env, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), str(refund, "id"))
	err = run(ctx, []string{"refunds", "cancel", str(refund, "id")}, env, &stdout, &stderr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_refund_state")

	if *recordHistories {
		writeHistory(t, s, str(o, "id"), "order_failed_refunds_handed_over.json")
		writeHistory(t, s, str(o, "id"), "order_failed_baseline.json") // one version marker
		writeWorkflowHistory(t, s, models.RefundWorkflowID(str(refund, "id")), "refund_sent_local_read.json")
	}
}

// sandboxRefundAddress is an account a test refund goes to: the sandbox
// pays nothing, so any valid account does.
const sandboxRefundAddress = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
