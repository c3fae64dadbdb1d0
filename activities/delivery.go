package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memocart/memocart/models"
)

// WebhookStore is what webhook delivery reads and writes.
type WebhookStore interface {
	// WebhookTargets returns the endpoints an event goes to.
	WebhookTargets(ctx context.Context, eventID string) ([]models.WebhookEndpoint, error)
	// WebhookDelivery returns the event with its body as delivered at now
	// (a refund's claim link rendered while it works) and the endpoint
	// with its secret; models.ErrWebhookEndpointNotFound or
	// CodeWebhookEndpointDisabled when nothing may be delivered.
	WebhookDelivery(ctx context.Context, eventID, endpointID string, now time.Time) (models.Event, models.WebhookEndpoint, error)
	// RecordWebhookAttempt stores an attempt, once per delivery and
	// attempt number.
	RecordWebhookAttempt(ctx context.Context, a models.WebhookAttempt, dispatch string) error
	// DisableWebhookEndpoint disables an endpoint with no success since
	// failingSince, and reports whether it did.
	DisableWebhookEndpoint(ctx context.Context, id string, failingSince, at time.Time, reason string) (bool, error)
}

// WebhookSender posts a delivery to an endpoint's URL under its mode's
// address policy and returns the HTTP status; an error means no status.
type WebhookSender interface {
	Send(ctx context.Context, mode models.Mode, url string, header http.Header, body []byte) (int, error)
}

// EventDispatcher hands an order's recorded events to their delivery: a
// first attempt, then a workflow for what failed (workflows.Outbox).
type EventDispatcher interface {
	DispatchOrderEvents(ctx context.Context, orderID string) error
}

// WebhookRetry is the delivery retry schedule, for the next-retry time an
// attempt records (the workflow sets the same schedule on the activity).
type WebhookRetry struct {
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaximumInterval    time.Duration
}

// Next returns the wait after failed attempt n (1-based), as Temporal
// computes it: the initial interval times the coefficient to the n-1,
// capped.
func (r WebhookRetry) Next(n int) time.Duration {
	d := float64(r.InitialInterval)
	for i := 1; i < n && d < float64(r.MaximumInterval); i++ {
		d *= r.BackoffCoefficient
	}
	if r.MaximumInterval > 0 && d > float64(r.MaximumInterval) {
		return r.MaximumInterval
	}
	return time.Duration(d)
}

// DeliverWebhookInput is one delivery: an event to an endpoint, by one
// dispatch (the delivery workflow's id).
type DeliverWebhookInput struct {
	EventID    string
	EndpointID string
	Dispatch   string
	Resend     bool
	Retry      WebhookRetry
	// ExpiresAt is when retries stop: no next retry is announced past it.
	ExpiresAt time.Time
	// PriorAttempts is how many attempts of this delivery were made before
	// the activity's first (the outbox's direct one): the activity's
	// attempt n is the delivery's attempt PriorAttempts+n.
	PriorAttempts int `json:",omitempty"`
}

// Webhooks are the activities of webhook delivery.
type Webhooks struct {
	runtime
	store  WebhookStore
	sender WebhookSender
}

// NewWebhooks returns the delivery activities: store holds the endpoints,
// events and attempts, sender posts deliveries. now is the clock of the
// attempts (signatures, attempt times; nil: time.Now).
func NewWebhooks(store WebhookStore, sender WebhookSender, now func() time.Time) (*Webhooks, error) {
	switch {
	case store == nil:
		return nil, errors.New("activities.NewWebhooks: no webhook store")
	case sender == nil:
		return nil, errors.New("activities.NewWebhooks: no sender")
	}
	return &Webhooks{runtime: runtime{now: now}, store: store, sender: sender}, nil
}

// CodeWebhookDeliveryFailed types a failed attempt (a non-2xx answer or
// none): retryable.
const CodeWebhookDeliveryFailed = "webhook_delivery_failed"

// WebhookTargets returns the ids of the endpoints an event is delivered
// to. Like the order's database writes, it runs under the workflow's
// heartbeat timeout, so it beats while it runs.
func (a *Webhooks) WebhookTargets(ctx context.Context, eventID string) ([]string, error) {
	defer a.heartbeat(ctx)()
	es, err := a.store.WebhookTargets(ctx, eventID)
	if err != nil {
		return nil, temporalError(err)
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids, nil
}

// DeliverWebhook makes one attempt to deliver an event to an endpoint
// (WebhookAttempter.Attempt) and fails, retryably, unless the endpoint
// answered 2xx. A deleted or disabled endpoint, or a missing event, fails
// it for good. It beats for as long as it runs, so an attempt lost with
// its worker is retried after the heartbeat timeout, not after the whole
// attempt's.
func (a *Webhooks) DeliverWebhook(ctx context.Context, in DeliverWebhookInput) error {
	defer a.heartbeat(ctx)()
	w := WebhookAttempter{Webhooks: a.store, Sender: a.sender, Now: a.clock}
	err := w.Attempt(ctx, in, in.PriorAttempts+int(activity.GetInfo(ctx).Attempt))
	var failed *WebhookDeliveryError
	if errors.As(err, &failed) {
		return temporal.NewApplicationError(failed.Reason, CodeWebhookDeliveryFailed)
	}
	return temporalError(err)
}

// WebhookAttempter makes delivery attempts: the DeliverWebhook activity's,
// and the first attempt the outbox makes without a workflow, so that both
// sign, send and record alike.
type WebhookAttempter struct {
	Webhooks WebhookStore
	Sender   WebhookSender
	// Now: time.Now when nil.
	Now func() time.Time
}

// WebhookDeliveryError is an attempt that reached for the endpoint and
// got no 2xx answer; it is recorded.
type WebhookDeliveryError struct {
	// Reason is the failure as the account reads it in the delivery log.
	Reason string
}

func (e *WebhookDeliveryError) Error() string { return e.Reason }

// Attempt makes attempt number n of a delivery: the event's body as
// delivered at the attempt's time (WebhookStore.WebhookDelivery), signed
// with the endpoint's secret over that time and exactly those bytes, to
// the endpoint's URL. It records the attempt (once per delivery and
// attempt number, so a repeated write changes nothing). It returns nil
// when the endpoint answered 2xx; a *WebhookDeliveryError when it did not
// (recorded); the store's models.ErrWebhookEndpointNotFound,
// CodeWebhookEndpointDisabled or ErrEventNotFound when nothing may be
// delivered; any other error when the attempt could not be made or
// recorded.
func (w WebhookAttempter) Attempt(ctx context.Context, in DeliverWebhookInput, n int) error {
	clock := w.Now
	if clock == nil {
		clock = time.Now
	}
	now := clock().UTC()
	ev, ep, err := w.Webhooks.WebhookDelivery(ctx, in.EventID, in.EndpointID, now)
	if err != nil {
		return err
	}
	h := models.WebhookHeader(ep.Secret, now, ev.ID, ev.Type, ev.Payload)
	start := clock()
	status, sendErr := w.Sender.Send(ctx, ep.Mode, ep.URL, h, ev.Payload)
	rec := models.WebhookAttempt{
		DeliveryID: models.DeliveryID(in.Dispatch, ep.ID), EventID: ev.ID, EndpointID: ep.ID, Attempt: n,
		Resend: in.Resend, At: now, ResponseStatus: status, Duration: clock().Sub(start),
		Succeeded: sendErr == nil && status >= 200 && status < 300,
	}
	var failure string
	switch {
	case sendErr != nil:
		failure = sendErr.Error()
	case !rec.Succeeded:
		failure = fmt.Sprintf("the endpoint answered HTTP %d", status)
		if status >= 300 && status < 400 {
			failure += " (redirects are not followed)"
		}
	}
	if !rec.Succeeded {
		rec.Error = failure
		if next := now.Add(in.Retry.Next(n)); in.ExpiresAt.IsZero() || !next.After(in.ExpiresAt) {
			rec.NextRetryAt = &next
		}
	}
	// The record outlives an attempt cut short by its deadline: the
	// endpoint may have received it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := w.Webhooks.RecordWebhookAttempt(rctx, rec, in.Dispatch); err != nil {
		return err
	}
	if !rec.Succeeded {
		return &WebhookDeliveryError{Reason: failure}
	}
	return nil
}

// recordTimeout bounds an attempt's record once the attempt is over.
const recordTimeout = 5 * time.Second

// DisableWebhookEndpoint disables an endpoint whose deliveries have failed
// since failingSince without a success, saying why; it reports whether it
// did. It beats while it runs, as WebhookTargets does.
func (a *Webhooks) DisableWebhookEndpoint(ctx context.Context, endpointID string, failingSince time.Time, reason string) (bool, error) {
	defer a.heartbeat(ctx)()
	ok, err := a.store.DisableWebhookEndpoint(ctx, endpointID, failingSince, a.clock(), reason)
	return ok, temporalError(err)
}

// NoDispatch is the EventDispatcher of a worker that leaves every event
// to the outbox sweep (tests, tools): it hands nothing over.
var NoDispatch EventDispatcher = noDispatch{}

type noDispatch struct{}

func (noDispatch) DispatchOrderEvents(context.Context, string) error { return nil }

// dispatchRecorded ends a write of the order's facts: its error (err) is
// the workflow's; once it has committed, the events it recorded are
// dispatched.
func dispatchRecorded(ctx context.Context, events EventDispatcher, orderID string, err error) error {
	if err != nil {
		return temporalError(err)
	}
	dispatchEvents(ctx, events, orderID)
	return nil
}

// dispatchEvents hands the order's new events to their delivery once the
// write that recorded them has committed. A failure is logged and
// left to the outbox sweep: it must not hold up the order.
func dispatchEvents(ctx context.Context, events EventDispatcher, orderID string) {
	if err := events.DispatchOrderEvents(ctx, orderID); err != nil {
		if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Warn("Dispatching webhook events failed; the outbox sweep will retry", "OrderID", orderID, "Error", err)
			return
		}
		slog.WarnContext(ctx, "dispatching webhook events failed; the outbox sweep will retry", slog.String("order_id", orderID), slog.Any("error", err))
	}
}
