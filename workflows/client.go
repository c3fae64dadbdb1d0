package workflows

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
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
