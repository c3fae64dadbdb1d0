package main

// End-to-end tests of a refund whose run an operator closed in the
// Temporal UI (Terminate, Cancel) before the refund settled: its next move
// starts a new run, or the reconciler does, and the money moves once.

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/memocart/memocart/models"
)

// refundRun returns the id and status of the refund's latest run.
func (s *liveStack) refundRun(id string) (string, enumspb.WorkflowExecutionStatus) {
	s.t.Helper()
	desc, err := s.client.DescribeWorkflowExecution(context.Background(), models.RefundWorkflowID(id), "")
	require.NoError(s.t, err)
	info := desc.GetWorkflowExecutionInfo()
	return info.GetExecution().GetRunId(), info.GetStatus()
}

// closeRefundRun terminates or cancels (as an operator does in the UI) the
// refund's open run, waits until it closed so, and returns its run id. The
// refund's row is written before its run starts, so it first waits for the
// run.
func (s *liveStack) closeRefundRun(id string, terminate bool) string {
	s.t.Helper()
	wid := models.RefundWorkflowID(id)
	var run string
	require.Eventually(s.t, func() bool {
		desc, err := s.client.DescribeWorkflowExecution(context.Background(), wid, "")
		if err != nil {
			return false
		}
		run = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		return desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 20*time.Millisecond, "the refund's run started")
	want := enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED
	if terminate {
		want = enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED
		require.NoError(s.t, s.client.TerminateWorkflow(context.Background(), wid, run, "operator pressed Terminate"))
	} else {
		require.NoError(s.t, s.client.CancelWorkflow(context.Background(), wid, run))
	}
	require.Eventually(s.t, func() bool {
		desc, err := s.client.DescribeWorkflowExecution(context.Background(), wid, run)
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == want
	}, 30*time.Second, 50*time.Millisecond, "the run closed %s", want)
	return run
}

// TestE2ERefundRunClosedNextMovePays: an operator terminates, or cancels,
// the run of a refund waiting for its destination; the API client then
// sets the destination, which starts a new run (the reconciler is slowed
// down so that only the move can): the request succeeds and the refund is
// paid, once.
func TestE2ERefundRunClosedNextMovePays(t *testing.T) {
	for _, c := range []struct {
		name      string
		terminate bool
	}{{"terminated", true}, {"cancelled", false}} {
		t.Run(c.name, func(t *testing.T) {
			s := startLive(t, "sqlite", map[string]string{"MEMOCART_RECONCILE_INTERVAL": "1h"})
			o, r := s.failedLiveOrder()
			id := str(r, "id")
			closed := s.closeRefundRun(id, c.terminate)

			dest := s.refundAccount("refund after "+c.name, true)
			code, b := s.setRefundDestination(o, dest, c.name)
			require.Equal(t, http.StatusOK, code, b)
			sent := s.waitRefund(id, "sent")
			out := s.refundOutcome(id)
			assert.Equal(t, models.RefundSent, out.Status)
			run, _ := s.refundRun(id)
			assert.NotEqual(t, closed, run, "a new run paid it")

			p := s.onlyRefundPayment(t, r, dest, c.name)
			assert.Equal(t, p.TxHash, str(sent, "transaction_hash"))
			assert.Equal(t, p.TxHash, out.TransactionHash)
		})
	}
}

// TestE2ERefundRunTerminatedMidPayoutReconcilerPaysOnce: the run paying a
// refund out is terminated after it recorded and submitted the
// transaction, while Horizon holds the submission. Nobody has a move for
// a refund being sent: the reconciler finds the terminated run and starts
// a new one, which looks the recorded transaction up (submitting the same
// envelope again while it is not in the ledger) and records the refund
// sent with it: the money moved once. With -record-histories it records
// the new run for the replay test.
func TestE2ERefundRunTerminatedMidPayoutReconcilerPaysOnce(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	o, r := s.failedLiveOrder()
	id := str(r, "id")
	const held = 15 * time.Second
	s.horizon.DelaySubmissions(1, held)

	dest := s.refundAccount("refund run terminated mid-payout", true)
	code, b := s.setRefundDestination(o, dest, "terminated mid-payout")
	require.Equal(t, http.StatusOK, code, b)
	require.Eventually(t, func() bool { return s.horizon.Submissions() == 1 }, 30*time.Second, 10*time.Millisecond,
		"the payout was submitted")
	closed := s.closeRefundRun(id, true)
	recorded := s.sendingTransaction(t, id, "terminated before the outcome was recorded")

	s.requireSentOnceWith(t, o, r, recorded, dest, "terminated mid-payout")
	run, _ := s.refundRun(id)
	assert.NotEqual(t, closed, run, "a new run finished it")
	if *recordHistories {
		writeWorkflowHistory(t, s.stack, models.RefundWorkflowID(id), "refund_restarted_sending.json")
	}
}
