package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/models"
)

// Client is how the rest of the service drives order workflows: start one
// per order, hand it matched payments. Both calls are idempotent.
type Client struct {
	c         client.Client
	taskQueue string
}

// NewClient returns a Client starting workflows on taskQueue.
func NewClient(c client.Client, taskQueue string) *Client {
	return &Client{c: c, taskQueue: taskQueue}
}

// InputFor returns the workflow input of an order.
func InputFor(o models.Order) OrderInput {
	return OrderInput{
		OrderID: o.ID, OrderNumber: o.Number, Mode: o.Mode,
		PaymentAsset: o.PaymentAsset, PaymentAmount: o.PaymentAmount, PaymentDeadline: o.PaymentExpiresAt,
		SearchAttributesSet: true, // StartOptions sets them
	}
}

// StartOrder starts the order's workflow, or does nothing if it exists,
// running or finished.
func (c *Client) StartOrder(ctx context.Context, o models.Order) error {
	in := InputFor(o)
	_, err := c.c.ExecuteWorkflow(ctx, StartOptions(in, c.taskQueue), OrderWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil // finished already: REJECT_DUPLICATE refuses a second run
	}
	if err != nil {
		return fmt.Errorf("starting workflow for order %s: %w", o.ID, err)
	}
	return nil
}

// PaymentMatched signals a matched payment to the order's workflow. It
// returns models.ErrOrderClosed if the workflow has finished, and a plain
// (retryable) error if it does not exist yet: the order's start is still
// pending and the reconciler will deliver the payment once it runs.
func (c *Client) PaymentMatched(ctx context.Context, orderID string, p models.Payment) error {
	sig := PaymentSignal{
		PaymentID: p.ID, Asset: p.Asset, Amount: p.Amount, ReceivedAt: p.ReceivedAt, Memo: p.Memo, Sender: p.Sender,
	}
	id := models.WorkflowID(orderID)
	err := c.c.SignalWorkflow(ctx, id, "", SignalPaymentMatched, sig)
	var notFound *serviceerror.NotFound
	if !errors.As(err, &notFound) {
		return err
	}
	desc, derr := c.c.DescribeWorkflowExecution(ctx, id, "")
	if errors.As(derr, &notFound) {
		return fmt.Errorf("workflow %s does not exist yet", id)
	}
	if derr != nil {
		return derr
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return models.ErrOrderClosed
	}
	return err
}

// FulfilmentUpdated signals the order's workflow that its buying provider
// reports a change. It returns models.ErrOrderClosed if the workflow has
// finished (or never existed: a provider cannot report on an order that
// was never placed, so there is nothing to wait for).
func (c *Client) FulfilmentUpdated(ctx context.Context, orderID string, ev models.FulfilmentEvent) error {
	err := c.c.SignalWorkflow(ctx, models.WorkflowID(orderID), "", SignalFulfilmentUpdated, FulfilmentSignal{EventID: ev.EventID, Ref: ev.Ref})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return models.ErrOrderClosed
	}
	return err
}

// CancelOrder asks the order's workflow to cancel the order for its
// customer (UpdateCancel) and waits until the cancellation is written. It
// returns an error of code models.CodeOrderNotCancellable when the order
// is paid or beyond (the workflow's validator refused), models.ErrOrderClosed
// when the workflow has finished or does not exist, and Temporal's own
// error when Temporal cannot answer (unavailable, past ctx's deadline).
// An order already cancelled is not an error: cancelling is idempotent.
func (c *Client) CancelOrder(ctx context.Context, orderID, note string) error {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   models.WorkflowID(orderID),
		UpdateName:   UpdateCancel,
		Args:         []any{CancelRequest{Note: note}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var res CancelResult
		err = h.Get(ctx, &res)
	}
	return updateAnswer(err, models.ErrOrderClosed, models.CodeOrderNotCancellable)
}

// ExpireOrder asks the order's workflow to end its payment wait now, as
// the deadline would (UpdateExpirePayment: test mode's helper), and waits
// until the outcome is written. It returns an error of code
// models.CodeInvalidOrderState when the order no longer awaits payment,
// and models.ErrOrderClosed when the workflow has finished or does not
// exist.
func (c *Client) ExpireOrder(ctx context.Context, orderID string) error {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   models.WorkflowID(orderID),
		UpdateName:   UpdateExpirePayment,
		Args:         []any{ExpireRequest{}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var res ExpireResult
		err = h.Get(ctx, &res)
	}
	return updateAnswer(err, models.ErrOrderClosed, models.CodeInvalidOrderState)
}

// MoveTestOrder asks the order's workflow to make a test helper's move at
// the sandbox provider now (UpdateTestMove) and waits until its outcome is
// written. It returns an error of code models.CodeInvalidOrderState when
// the order's status does not allow the move, models.CodeUnavailable when
// the run cannot take one now (try again), and models.ErrOrderClosed when
// the workflow has finished or does not exist.
func (c *Client) MoveTestOrder(ctx context.Context, orderID string, m models.TestMove) error {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   models.WorkflowID(orderID),
		UpdateName:   UpdateTestMove,
		Args:         []any{m},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var res TestMoveResult
		err = h.Get(ctx, &res)
	}
	return updateAnswer(err, models.ErrOrderClosed, models.CodeInvalidOrderState, models.CodeUnavailable, models.CodeInvalidRequest, models.CodeTestModeOnly)
}

// RecordRefund asks the order's workflow, still open because the order
// owes the money it received, to record that an operator sent r.Amount
// back (UpdateRecordRefund), and waits until the database says so. It
// returns models.ErrOrderClosed when the workflow has closed or does not
// exist: then the database alone holds the refund and the caller writes
// it there. A refund the workflow refuses (the order owes nothing, or has
// received another amount) is an error of code models.CodeInvalidRequest
// with the workflow's message.
func (c *Client) RecordRefund(ctx context.Context, orderID string, r RefundRequest) (RefundResult, error) {
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   models.WorkflowID(orderID),
		UpdateName:   UpdateRecordRefund,
		Args:         []any{r},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var res RefundResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	return res, updateAnswer(err, models.ErrOrderClosed, models.CodeInvalidRequest)
}

// StartRefund starts the refund's workflow, or does nothing if a run of it
// is open or one completed (the refund settled); a run that closed
// otherwise (terminated, cancelled) is followed by a new one, from r
// (RefundStartOptions). orderNumber is shown to operators; empty for an
// unmatched payment's refund.
func (c *Client) StartRefund(ctx context.Context, r models.Refund, orderNumber string) error {
	in := RefundInput{Refund: r, OrderNumber: orderNumber}
	_, err := c.c.ExecuteWorkflow(ctx, RefundStartOptions(in, c.taskQueue), RefundWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("starting workflow for refund %s: %w", r.ID, err)
	}
	return nil
}

// MoveRefund asks the refund's workflow to make move (through the update
// that carries it) and waits until it is written.
// It answers the refund as written. A move the refund's rules refuse is
// the models error of the refusal (invalid_refund_state,
// invalid_refund_destination, invalid_request), with its message and
// field; a workflow with no open run (the refund settled; the run not
// started yet, or terminated or cancelled) is models.ErrRefundClosed.
func (c *Client) MoveRefund(ctx context.Context, refundID string, move RefundMove) (models.Refund, error) {
	update, arg := move.update()
	h, err := c.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   models.RefundWorkflowID(refundID),
		UpdateName:   update,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var r models.Refund
	if err == nil {
		err = h.Get(ctx, &r)
	}
	// The refusals of a refund's move that reach the caller as they are:
	// the rest is the service's own failure.
	return r, updateAnswer(err, models.ErrRefundClosed, models.CodeInvalidRefundState, models.CodeInvalidRefundDestination,
		models.CodeInvalidRequest, models.CodeRefundNotFound)
}

// RefundRunsClosed returns the ids of the refunds a run of which closed
// terminated, cancelled or timed out (by an operator in the Temporal UI:
// the Refund workflow sets no timeout), with a close time in (after,
// until]: a visibility query, one page per 100 runs. Those refunds may be
// unsettled with no run left to move them on; whether they are is the
// database's to say. A failed run is not listed: a Refund run fails only
// when its refund cannot be read or its rules call the stored refund
// impossible, which a new run would find again, on every sweep; it stays
// in the UI for a developer, and the refund's next move starts a new run.
func (c *Client) RefundRunsClosed(ctx context.Context, after, until time.Time) ([]string, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus IN ('Terminated', 'Canceled', 'TimedOut') AND CloseTime > '%s' AND CloseTime <= '%s'",
		RefundWorkflowName, after.UTC().Format(time.RFC3339Nano), until.UTC().Format(time.RFC3339Nano))
	seen := map[string]bool{}
	var ids []string
	var token []byte
	for {
		resp, err := c.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 100, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("listing closed refund runs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			id, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), models.RefundWorkflowID(""))
			if ok && id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}
