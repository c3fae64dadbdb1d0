package workflows

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// OutboxStore is the events' outbox as the dispatcher sees it.
type OutboxStore interface {
	PendingOrderWebhookEvents(ctx context.Context, orderID string) ([]models.Event, error)
	PendingWebhookEvents(ctx context.Context, recordedBefore time.Time, limit int) ([]models.Event, error)
	MarkWebhookEventDispatched(ctx context.Context, id string, at time.Time) error
}

// Outbox dispatches recorded events. Events are written in the
// transaction of the fact they describe; the outbox dispatches each after
// that commits. With AttemptFirst, it makes each delivery's first attempt
// itself, as the DeliverWebhook activity would (same signing, sender and
// delivery log), and starts the event's WebhookEvent workflow only for
// the deliveries that failed: most events then cost Temporal nothing.
// Without, or when the attempts cannot be made, it starts the workflow
// for every delivery. Either way, once: the workflow id is derived from
// the event id, so a second start is refused by Temporal and counts as
// done. An event is marked dispatched once every endpoint answered 2xx
// or its workflow is started; what a crash leaves unmarked, Sweep
// dispatches again (a delivery made just before the crash is made again:
// receivers deduplicate by event id).
type Outbox struct {
	c         client.Client
	taskQueue string
	store     OutboxStore
	retry     *WebhookRetry
	now       func() time.Time

	attempter    *activities.WebhookAttempter
	firstTimeout time.Duration
}

// FirstAttemptTimeout bounds the first attempts one dispatch makes
// itself, all its events together: the sender's own bound on an attempt
// (10 s, the answer time receivers are promised) and the reads around it.
// An attempt cut short counts as failed and is retried by the workflow;
// events left when it is spent go to their workflows untried. Callers
// that must not wait that long dispatch InBackground.
const FirstAttemptTimeout = 15 * time.Second

// NewOutbox returns an Outbox starting workflows on taskQueue. retry, if
// not nil, replaces DefaultWebhookRetry in the workflows it starts (tests).
func NewOutbox(c client.Client, taskQueue string, store OutboxStore, retry *WebhookRetry) *Outbox {
	return &Outbox{c: c, taskQueue: taskQueue, store: store, retry: retry, now: time.Now, firstTimeout: FirstAttemptTimeout}
}

// AttemptFirst makes o attempt each delivery once itself, through
// webhooks' store and sender, before starting a workflow for what failed.
// timeout bounds those attempts per dispatch (0: FirstAttemptTimeout).
func (o *Outbox) AttemptFirst(webhooks activities.WebhookStore, sender activities.WebhookSender, timeout time.Duration) *Outbox {
	if timeout <= 0 {
		timeout = FirstAttemptTimeout
	}
	o.attempter = &activities.WebhookAttempter{Webhooks: webhooks, Sender: sender, Now: o.now}
	o.firstTimeout = timeout
	return o
}

// DispatchOrderEvents starts the workflows of an order's events not yet
// dispatched.
func (o *Outbox) DispatchOrderEvents(ctx context.Context, orderID string) error {
	evs, err := o.store.PendingOrderWebhookEvents(ctx, orderID)
	if err != nil || len(evs) == 0 {
		return err
	}
	first, cancel := context.WithTimeout(ctx, o.firstTimeout)
	defer cancel()
	var errs []error
	for _, ev := range evs {
		if err := o.dispatch(ctx, first, ev); err != nil {
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
	first, cancel := context.WithTimeout(ctx, o.firstTimeout)
	defer cancel()
	n := 0
	var errs []error
	for _, ev := range evs {
		if err := o.dispatch(ctx, first, ev); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// dispatch delivers an event: first itself, while first lasts, then by
// its workflow for what remains, started or found started; then it marks
// the event dispatched.
func (o *Outbox) dispatch(ctx, first context.Context, ev models.Event) error {
	in := WebhookEventInput{EventID: ev.ID, Retry: o.retry}
	opts := o.startOptions(WebhookEventWorkflowID(ev.ID), ev, "")
	if o.attempter != nil && first.Err() == nil {
		at := o.now().UTC()
		pending, err := o.attemptFirst(first, ev, at)
		switch {
		case err != nil:
			// The targets could not be read: the workflow does it all.
		case len(pending) == 0:
			return o.store.MarkWebhookEventDispatched(ctx, ev.ID, o.now())
		default:
			in.Deliveries, in.FirstAttemptAt = pending, &at
			if slices.ContainsFunc(pending, func(d PendingDelivery) bool { return d.Attempts > 0 }) {
				// The workflow's first attempt comes the schedule's first
				// wait after the failed one; a delayed start costs no timer.
				opts.StartDelay = o.schedule().InitialInterval
			}
		}
	}
	_, err := o.c.ExecuteWorkflow(ctx, opts, WebhookEventWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("starting the delivery of event %s: %w", ev.ID, err)
	}
	return o.store.MarkWebhookEventDispatched(ctx, ev.ID, o.now())
}

func (o *Outbox) schedule() WebhookRetry {
	if o.retry != nil {
		return *o.retry
	}
	return DefaultWebhookRetry
}

// attemptFirst makes attempt 1 of the event's delivery to each of its
// endpoints, in parallel, at at, and returns the deliveries left to its
// workflow: those that failed, and those that could not be tried (a
// failure of ours before the endpoint was reached, with no attempt
// counted). Deleted or disabled endpoints get nothing. An error means the
// targets are unknown.
func (o *Outbox) attemptFirst(ctx context.Context, ev models.Event, at time.Time) ([]PendingDelivery, error) {
	eps, err := o.attempter.Webhooks.WebhookTargets(ctx, ev.ID)
	if models.CodeOf(err) == models.CodeEventNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	retry := o.schedule()
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = o.attempter.Attempt(ctx, activities.DeliverWebhookInput{
				EventID: ev.ID, EndpointID: ep.ID, Dispatch: WebhookEventWorkflowID(ev.ID),
				Retry:     activities.WebhookRetry{InitialInterval: retry.InitialInterval, BackoffCoefficient: retry.BackoffCoefficient, MaximumInterval: retry.MaximumInterval},
				ExpiresAt: at.Add(retry.Expiration),
			}, 1)
		}()
	}
	wg.Wait()
	var pending []PendingDelivery
	for i, ep := range eps {
		var failed *activities.WebhookDeliveryError
		switch err := errs[i]; {
		case err == nil:
		case errors.As(err, &failed):
			pending = append(pending, PendingDelivery{EndpointID: ep.ID, Attempts: 1})
		default:
			switch models.CodeOf(err) {
			case models.CodeWebhookEndpointNotFound, models.CodeWebhookEndpointDisabled, models.CodeEventNotFound:
				// Deleted or disabled meanwhile: nothing to deliver.
			default:
				pending = append(pending, PendingDelivery{EndpointID: ep.ID})
			}
		}
	}
	return pending, nil
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

// backgroundTimeout bounds one background dispatch: the first attempts
// (FirstAttemptTimeout), the workflows' starts and the marks.
const backgroundTimeout = 30 * time.Second

// BackgroundOutbox is an Outbox whose DispatchOrderEvents returns at once
// and dispatches in a goroutine of its own, so that what recorded the
// events (an API request, a write made as a local activity, whose timeout
// is a few seconds) is not held by a slow endpoint. One order's events are
// dispatched by one goroutine at a time: a call while one runs makes it
// run once more, so two writes in a row do not deliver one event twice.
// A dispatch lost with its process is the sweep's, as a crash's is.
type BackgroundOutbox struct {
	*Outbox
	log *slog.Logger

	mu sync.Mutex
	// again, per order being dispatched: whether to run once more.
	again map[string]bool
	wg    sync.WaitGroup
}

// InBackground returns o dispatching in the background, logging failures
// to log.
func (o *Outbox) InBackground(log *slog.Logger) *BackgroundOutbox {
	return &BackgroundOutbox{Outbox: o, log: log, again: map[string]bool{}}
}

// DispatchOrderEvents dispatches the order's pending events in the
// background, under ctx's values but not its end, and returns nil.
func (b *BackgroundOutbox) DispatchOrderEvents(ctx context.Context, orderID string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, running := b.again[orderID]; running {
		b.again[orderID] = true
		return nil
	}
	b.again[orderID] = false
	b.wg.Add(1)
	go b.run(context.WithoutCancel(ctx), orderID)
	return nil
}

func (b *BackgroundOutbox) run(ctx context.Context, orderID string) {
	defer b.wg.Done()
	for {
		dctx, cancel := context.WithTimeout(ctx, backgroundTimeout)
		err := b.Outbox.DispatchOrderEvents(dctx, orderID)
		cancel()
		if err != nil {
			b.log.WarnContext(ctx, "dispatching webhook events failed; the outbox sweep will retry", slog.String("order_id", orderID), slog.Any("error", err))
		}
		b.mu.Lock()
		if !b.again[orderID] {
			delete(b.again, orderID)
			b.mu.Unlock()
			return
		}
		b.again[orderID] = false
		b.mu.Unlock()
	}
}

// Wait returns once the dispatches in flight are done.
func (b *BackgroundOutbox) Wait() { b.wg.Wait() }
