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
// product whose sourcing fails after payment) through the saved views
// docs/operators.md tells operators to set up: in the refund queue while
// its workflow waits for the refund, out of it once `memocart payments
// mark-refunded --order` has recorded the refund through the workflow,
// which then ends Failed. With -record-histories it records that run for
// the replay test.
func TestE2EFailedOrderInTheTemporalUI(t *testing.T) {
	views := savedViews(t)
	s := startDev(t, "sqlite", nil)
	ctx := context.Background()

	// Every documented query is one the server accepts.
	for name, q := range views {
		_, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: q})
		require.NoError(t, err, "saved view %q: %s", name, q)
	}
	for _, name := range []string{"Failed orders", "Refund queue", "Closed owing money", "Delivered", "Live orders"} {
		require.Contains(t, views, name)
	}

	o := s.newOrder(s.key, "https://www.amazon.com/dp/B0FAILSRC0")
	id := models.WorkflowID(str(o, "id"))
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(o, "number")+"/payments", nil)
	require.Equal(t, http.StatusCreated, code, body)
	final, _ := s.waitStatus(s.key, str(o, "number"), "failed")
	require.Equal(t, "refund_due", str(final, "payment_status"))

	running := enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	require.Eventually(t, func() bool {
		return s.listed(t, views["Failed orders"], id) == running && s.listed(t, views["Refund queue"], id) == running
	}, 30*time.Second, 100*time.Millisecond, "the failed order is in Failed orders and the Refund queue, its workflow open")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, s.listed(t, views["Delivered"], id))
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, s.listed(t, views["Closed owing money"], id))
	// A test key's order is a test order to the list: the API's start set
	// its OrderMode.
	assert.Equal(t, running, s.listed(t, `WorkflowType = "Order" AND OrderMode = "test"`, id))
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, s.listed(t, views["Live orders"], id))

	// The operator sends the money back and records it, as documented.
	var out, errOut syncBuffer
	env := func(k string) string {
		if k == "MEMOCART_TEMPORAL_ADDRESS" {
			return s.temporal
		}
		return s.env[k]
	}
	err := run(ctx, []string{"payments", "mark-refunded", "--order", str(o, "number"), "--tx", "refund-tx-e2e"}, env, &out, &errOut)
	require.NoError(t, err, errOut.String())
	assert.Contains(t, out.String(), "its workflow recorded it")

	// The workflow closes Failed: a red badge, counted under Failures.
	var res workflows.OrderResult
	err = s.client.GetWorkflow(ctx, id, "").Get(ctx, &res)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr, "the workflow ends Failed")
	assert.Equal(t, workflows.OrderFailedError, appErr.Type())
	require.NoError(t, appErr.Details(&res))
	assert.Equal(t, models.PaymentRefunded, res.PaymentStatus)

	failed := enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
	require.Eventually(t, func() bool {
		return s.listed(t, views["Failed orders"], id) == failed &&
			s.listed(t, views["Refund queue"], id) == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
	}, 30*time.Second, 100*time.Millisecond, "listed as Failed, out of the refund queue")
	assert.Equal(t, failed, s.listed(t, `ExecutionStatus = "Failed" AND OrderNumber = "`+str(o, "number")+`"`, id),
		"the UI's own Failed view lists it")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED, s.listed(t, views["Closed owing money"], id))
	assert.Equal(t, failed, s.listed(t, `PaymentStatus = "refunded" AND OrderNumber = "`+str(o, "number")+`"`, id))

	code, body = s.do(s.key, "GET", "/v1/orders/"+str(o, "number"), nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "refunded", str(obj(body, "order"), "payment_status"), "the database agrees")

	// Recording it again is refused: the workflow has closed, and the
	// database has it already.
	errOut = syncBuffer{}
	err = run(ctx, []string{"payments", "mark-refunded", "--order", str(o, "number"), "--tx", "another-tx"}, env, &out, &errOut)
	assert.Error(t, err)

	if *recordHistories {
		writeHistory(t, s, str(o, "id"), "order_failed_refunded.json")
	}
}
