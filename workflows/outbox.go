package workflows

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/models"
)

// OutboxStore is the events' outbox as the dispatcher sees it.
type OutboxStore interface {
	PendingOrderWebhookEvents(ctx context.Context, orderID string) ([]models.Event, error)
	PendingWebhookEvents(ctx context.Context, recordedBefore time.Time, limit int) ([]models.Event, error)
	MarkWebhookEventDispatched(ctx context.Context, id string, at time.Time) error
}

// Outbox dispatches recorded events to their WebhookEvent workflows. Events
// are written in the transaction of the fact they describe; the outbox
// starts each one's workflow after that commits, once: the workflow id is
// derived from the event id, so a second start is refused by Temporal and
// counts as done. What a crash leaves undispatched, Sweep dispatches.
type Outbox struct {
	c         client.Client
	taskQueue string
	store     OutboxStore
	retry     *WebhookRetry
	now       func() time.Time
}

// NewOutbox returns an Outbox starting workflows on taskQueue. retry, if
// not nil, replaces DefaultWebhookRetry in the workflows it starts (tests).
func NewOutbox(c client.Client, taskQueue string, store OutboxStore, retry *WebhookRetry) *Outbox {
	return &Outbox{c: c, taskQueue: taskQueue, store: store, retry: retry, now: time.Now}
}

// DispatchOrderEvents starts the workflows of an order's events not yet
// dispatched.
func (o *Outbox) DispatchOrderEvents(ctx context.Context, orderID string) error {
	evs, err := o.store.PendingOrderWebhookEvents(ctx, orderID)
	if err != nil {
		return err
	}
	var errs []error
	for _, ev := range evs {
		if err := o.dispatch(ctx, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sweep dispatches events recorded more than grace ago and still not
// dispatched (the process died between the commit and the start, or
// Temporal was down), up to 100 a call. Safe to run in every replica.
func (o *Outbox) Sweep(ctx context.Context, grace time.Duration) (int, error) {
	evs, err := o.store.PendingWebhookEvents(ctx, o.now().Add(-grace), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, ev := range evs {
		if err := o.dispatch(ctx, ev); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// dispatch starts an event's workflow, or finds it started, then marks the
// event dispatched.
func (o *Outbox) dispatch(ctx context.Context, ev models.Event) error {
	in := WebhookEventInput{EventID: ev.ID, Retry: o.retry}
	opts := o.startOptions(WebhookEventWorkflowID(ev.ID), ev, "")
	_, err := o.c.ExecuteWorkflow(ctx, opts, WebhookEventWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("starting the delivery of event %s: %w", ev.ID, err)
	}
	return o.store.MarkWebhookEventDispatched(ctx, ev.ID, o.now())
}

// Resend starts a new delivery of ev to one endpoint, with its own
// workflow, and returns the delivery's id.
func (o *Outbox) Resend(ctx context.Context, ev models.Event, endpointID string) (string, error) {
	rid, err := models.NewID("r", rand.Reader)
	if err != nil {
		return "", err
	}
	id := WebhookResendWorkflowID(ev.ID, strings.TrimPrefix(rid, "r_"))
	in := WebhookEventInput{EventID: ev.ID, EndpointID: endpointID, Retry: o.retry}
	if _, err := o.c.ExecuteWorkflow(ctx, o.startOptions(id, ev, endpointID), WebhookEventWorkflowName, in); err != nil {
		return "", fmt.Errorf("starting a resend of event %s: %w", ev.ID, err)
	}
	return models.DeliveryID(id, endpointID), nil
}

func (o *Outbox) startOptions(id string, ev models.Event, endpointID string) client.StartWorkflowOptions {
	summary := fmt.Sprintf("Deliver %s %s", ev.Type, ev.ID)
	if endpointID != "" {
		summary = fmt.Sprintf("Resend %s %s to %s", ev.Type, ev.ID, endpointID)
	}
	return client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                o.taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            summary,
		StaticDetails: fmt.Sprintf("Event `%s` (%s, %s mode) about order `%s`, recorded %s.",
			ev.ID, ev.Type, ev.Mode, ev.OrderID, ev.RecordedAt.UTC().Format(time.RFC3339)),
	}
}
