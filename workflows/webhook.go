package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// WebhookEventWorkflowName is the registered workflow type of
// WebhookEvent. Part of its histories: never renamed.
const WebhookEventWorkflowName = "WebhookEvent"

// WebhookEventWorkflowID is the id of the workflow delivering an event:
// one per event, so dispatching an event twice starts it once.
func WebhookEventWorkflowID(eventID string) string { return "webhook-event-" + eventID }

// WebhookResendWorkflowID is the id of a resend's workflow: a new one per
// resend (resendID: random, from the caller).
func WebhookResendWorkflowID(eventID, resendID string) string {
	return WebhookEventWorkflowID(eventID) + "-resend-" + resendID
}

// WebhookRetry is how deliveries are retried: exponentially from
// InitialInterval by BackoffCoefficient up to MaximumInterval, until
// Expiration after the first attempt. An endpoint that has not answered
// one delivery successfully in all that time is disabled.
type WebhookRetry struct {
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaximumInterval    time.Duration
	Expiration         time.Duration
}

// DefaultWebhookRetry: 30 s doubling to 6 h, for three days and one more
// maximum interval (and a margin), so the last attempt comes after the
// endpoint has failed for three full days.
var DefaultWebhookRetry = WebhookRetry{
	InitialInterval:    30 * time.Second,
	BackoffCoefficient: 2,
	MaximumInterval:    6 * time.Hour,
	Expiration:         models.WebhookDisableAfter + 6*time.Hour + time.Hour,
}

// WebhookEventInput starts a WebhookEvent workflow.
type WebhookEventInput struct {
	EventID string
	// EndpointID, for a resend: deliver to this endpoint only. Empty: to
	// every endpoint subscribed when the event was recorded.
	EndpointID string `json:",omitempty"`
	// Retry overrides DefaultWebhookRetry (tests); nil: the default.
	Retry *WebhookRetry `json:",omitempty"`
	// Deliveries, set by the outbox once it made the first attempts
	// itself: the endpoints still to deliver to, each with the attempts
	// it had. The workflow then neither looks the targets up nor
	// delivers to any other endpoint. Empty: as EndpointID says.
	Deliveries []PendingDelivery `json:",omitempty"`
	// FirstAttemptAt is when the outbox made those attempts: the retries
	// stop Expiration after it, and an endpoint disabled for failing has
	// failed since it. Nil: the workflow's start.
	FirstAttemptAt *time.Time `json:",omitempty"`
}

// PendingDelivery is a delivery the outbox began without a workflow.
type PendingDelivery struct {
	EndpointID string
	// Attempts made already (recorded, under the workflow's delivery id):
	// the workflow's first is attempt Attempts+1, made on the schedule's
	// wait after attempt Attempts.
	Attempts int `json:",omitempty"`
}

// WebhookEventResult is how the deliveries of an event ended.
type WebhookEventResult struct {
	Delivered []string // endpoints that answered 2xx
	Failed    []string // endpoints that never did, within the retries
	Skipped   []string // endpoints deleted or disabled meanwhile
	Disabled  []string // failed endpoints this run disabled
}

// maxDeliveryAttempts bounds the attempts of one delivery.
const maxDeliveryAttempts = 200

// deliveryAttemptTimeout bounds one attempt: the sender's own 10 s to the
// endpoint, plus the database reads and the attempt's record.
const deliveryAttemptTimeout = 30 * time.Second

// WebhookEvent delivers one event: it finds the endpoints subscribed to it
// (or takes the one a resend names, or those whose first attempt, made by
// the outbox, failed) and delivers to each in parallel, one
// DeliverWebhook activity per endpoint whose retry policy is the delivery
// schedule, so an endpoint that is down delays nobody else. Each attempt
// records itself. An endpoint whose delivery exhausted its retries failing
// at the endpoint, and that answered no delivery successfully since this
// one began, is disabled with the reason.
func WebhookEvent(ctx workflow.Context, in WebhookEventInput) (WebhookEventResult, error) {
	var res WebhookEventResult
	if in.EventID == "" {
		return res, temporal.NewNonRetryableApplicationError("webhook event input: missing EventID", string(models.CodeInvalidRequest), nil)
	}
	retry := DefaultWebhookRetry
	if in.Retry != nil {
		retry = *in.Retry
	}
	logger := workflow.GetLogger(ctx)
	var a *activities.Webhooks
	targets := []string{in.EndpointID}
	prior := make([]int, 1)
	switch {
	case in.EndpointID != "":
	case len(in.Deliveries) > 0:
		// The outbox tried them first: no lookup, and only these. Runs
		// before this input field existed never take this branch, so
		// their histories replay unchanged.
		targets, prior = make([]string, len(in.Deliveries)), make([]int, len(in.Deliveries))
		for i, d := range in.Deliveries {
			targets[i], prior[i] = d.EndpointID, d.Attempts
		}
	default:
		err := workflow.ExecuteActivity(withOptions(ctx, storeOptions("Find the endpoints subscribed to "+in.EventID)),
			a.WebhookTargets, in.EventID).Get(ctx, &targets)
		if isGone(err) {
			logger.Warn("Event not found; nothing to deliver", "EventID", in.EventID)
			return res, nil
		}
		if err != nil {
			return res, err
		}
		prior = make([]int, len(targets))
	}
	dispatch := workflow.GetInfo(ctx).WorkflowExecution.ID
	start := workflow.Now(ctx)
	if in.FirstAttemptAt != nil {
		start = *in.FirstAttemptAt
	}
	expires := start.Add(retry.Expiration)
	schedule := activities.WebhookRetry{InitialInterval: retry.InitialInterval, BackoffCoefficient: retry.BackoffCoefficient, MaximumInterval: retry.MaximumInterval}
	futures := make([]workflow.Future, len(targets))
	for i, endpointID := range targets {
		// After prior attempts, Temporal's retries continue the schedule:
		// the wait after the activity's attempt k is the delivery's after
		// attempt prior+k.
		initial := retry.InitialInterval
		if prior[i] > 0 {
			initial = schedule.Next(prior[i] + 1)
		}
		scheduleToClose := expires.Sub(workflow.Now(ctx))
		if scheduleToClose <= 0 {
			scheduleToClose = deliveryAttemptTimeout
		}
		opts := workflow.ActivityOptions{
			StartToCloseTimeout: deliveryAttemptTimeout,
			// An attempt lost with its worker is retried after this, not
			// after deliveryAttemptTimeout.
			HeartbeatTimeout:       activityHeartbeat,
			ScheduleToCloseTimeout: scheduleToClose,
			RetryPolicy: &temporal.RetryPolicy{
				InitialInterval:    initial,
				BackoffCoefficient: retry.BackoffCoefficient,
				MaximumInterval:    retry.MaximumInterval,
				// Expiration ends the retries; this bound is never reached
				// before it (three days take about 23 attempts) but keeps
				// a misconfigured schedule finite.
				MaximumAttempts: maxDeliveryAttempts,
				NonRetryableErrorTypes: []string{
					string(models.CodeWebhookEndpointNotFound), string(models.CodeWebhookEndpointDisabled), string(models.CodeEventNotFound),
				},
			},
			Summary: fmt.Sprintf("Deliver %s to %s", in.EventID, endpointID),
		}
		futures[i] = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.DeliverWebhook, activities.DeliverWebhookInput{
			EventID: in.EventID, EndpointID: endpointID, Dispatch: dispatch, Resend: in.EndpointID != "",
			Retry: schedule, ExpiresAt: expires, PriorAttempts: prior[i],
		})
	}
	for i, endpointID := range targets {
		err := futures[i].Get(ctx, nil)
		switch {
		case err == nil:
			res.Delivered = append(res.Delivered, endpointID)
			continue
		case isGone(err):
			logger.Info("Endpoint deleted or disabled; not delivered", "EndpointID", endpointID, "Error", err)
			res.Skipped = append(res.Skipped, endpointID)
			continue
		}
		res.Failed = append(res.Failed, endpointID)
		if !endpointFailed(err) {
			// The last attempts failed on our side (the database, a
			// secret this worker cannot open): the endpoint is not to blame.
			logger.Error("Delivery gave up on a failure of ours; endpoint left enabled", "EndpointID", endpointID, "Error", err)
			continue
		}
		reason := fmt.Sprintf("Deliveries failed for %s without a success (since %s); last error: %s",
			roundDuration(workflow.Now(ctx).Sub(start)), start.UTC().Format(time.RFC3339), lastFailure(err))
		logger.Warn("Delivery failed for good", "EndpointID", endpointID, "Reason", reason)
		var disabled bool
		err = workflow.ExecuteActivity(withOptions(ctx, storeOptions("Disable endpoint "+endpointID)),
			a.DisableWebhookEndpoint, endpointID, start, reason).Get(ctx, &disabled)
		if err != nil {
			return res, err
		}
		if disabled {
			res.Disabled = append(res.Disabled, endpointID)
		}
	}
	return res, nil
}

// isGone reports a delivery that cannot happen: the endpoint deleted or
// disabled, or the event missing.
func isGone(err error) bool {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return false
	}
	switch appErr.Type() {
	case string(models.CodeWebhookEndpointNotFound), string(models.CodeWebhookEndpointDisabled), string(models.CodeEventNotFound):
		return true
	}
	return false
}

// endpointFailed reports whether a delivery's last attempt failed at the
// endpoint (an answer other than 2xx, or none), as opposed to before
// reaching it.
func endpointFailed(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.CodeWebhookDeliveryFailed
}

// lastFailure is the last attempt's failure, as the account reads it.
func lastFailure(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Message() != "" {
		return appErr.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "the attempts did not finish in time"
	}
	return "unknown"
}

// roundDuration writes d in whole hours past an hour ("73h"), else as is.
func roundDuration(d time.Duration) string {
	if d >= time.Hour {
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return d.Round(time.Second).String()
}
