package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// withOptions returns ctx with activity options set.
func withOptions(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context {
	return workflow.WithActivityOptions(ctx, opts)
}

// Activity timeouts. Each activity the order workflow runs has two, for
// two different failures:
//
//   - HeartbeatTimeout (activityHeartbeat) notices an attempt lost with
//     its worker: a process killed or partitioned mid-call completes
//     nothing and says nothing, and without a heartbeat Temporal would
//     retry it only once StartToCloseTimeout ran out (docs/reliability.md).
//     The activities beat from a ticker for as long as the call runs
//     (the activities' heartbeat), so the timeout measures whether
//     the worker is alive, not how long the call may take: a healthy slow
//     attempt is never cut short by it. 10 s and the first retry's 1 s
//     put a lost attempt back on a live worker about 11 s later. The
//     worker sends a live attempt's beats at least every 3 s
//     (worker.HeartbeatSendInterval; the SDK's own default would be 8 s,
//     0.8 × the timeout, leaving a loaded worker only 2 s to reach the
//     server before a healthy attempt is timed out).
//   - StartToCloseTimeout bounds an attempt hung in a live worker, which
//     keeps beating: a call that ignores its context, a lock never
//     released. It is set above the longest healthy attempt.
//
// Retries are safe whichever timeout fires, also while the lost attempt
// may still be running somewhere: every activity is idempotent
// (PlaceOrder by order id and placement attempt, which a retry keeps).
// The blocking steps of old runs have their own timeout
// (fulfilment_legacy.go).
const (
	activityHeartbeat = 10 * time.Second
	// storeTimeout: a database write takes milliseconds; 30 s covers a
	// Postgres restart (connections are dialled with a 5 s timeout) and
	// lock waits. The writes carry no statement timeout of their own.
	storeTimeout = 30 * time.Second
	// providerTimeout: PlaceOrder and CheckOrder read the order, make at
	// most two calls to the buying provider (Zinc: the order, and on a
	// used idempotency key its lookup), each bounded by the client at
	// zinc.DefaultTimeout (15 s), and write the snapshot: at most about
	// 30 s plus two database calls when healthy.
	providerTimeout      = time.Minute
	retryInitialInterval = time.Second
	retryMaxInterval     = time.Minute
)

// retryPolicy retries without limit: every activity is idempotent, and
// every business failure is non-retryable, so a retry only ever waits out
// an outage. A stuck activity shows its attempt count and last failure in
// the Temporal UI.
func retryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    retryInitialInterval,
		BackoffCoefficient: 2,
		MaximumInterval:    retryMaxInterval,
		// The activities already mark these non-retryable; listing them
		// here holds even for an activity that forgets.
		NonRetryableErrorTypes: []string{
			string(models.CodeOrderNotFound),
			string(models.CodeSourcingFailed),
			string(models.CodeInvalidRequest),
		},
	}
}

// storeOptions: one call to the database: the order's writes, and the
// WebhookEvent workflow's endpoint lookup and disabling. Every activity
// run with them heartbeats (the activities' heartbeat).
func storeOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: storeTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             summary,
	}
}

// placeOptions: placing an order is one HTTP call to the provider (two
// when the provider says the attempt was placed already); retried, it is
// idempotent by order id and attempt, so a retry of an attempt lost with
// its worker returns the order that attempt placed, if it got that far,
// and never buys again.
func placeOptions(attempt int) workflow.ActivityOptions {
	summary := "Place the order with the buying provider"
	if attempt > 1 {
		summary = fmt.Sprintf("%s (attempt %d)", summary, attempt)
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: providerTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             summary,
	}
}

// localCheckOptions: a provider's hint is checked as a local activity
// (CheckOrder, localFirst), in the workflow task that took the hint, so a
// check that finds news writes it in that same task. Long enough for
// CheckOrder's two provider calls (zinc.DefaultTimeout, 15 s each); the
// SDK keeps the task alive past its timeout meanwhile. One retry, then
// the regular activity.
func localCheckOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 2*providerTimeout/3 + 5*time.Second,
		StartToCloseTimeout:    2 * providerTimeout / 3,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			MaximumAttempts:        2,
			NonRetryableErrorTypes: retryPolicy().NonRetryableErrorTypes,
		},
	}
}

// watchChecks bounds the attempts of one watch: 200 checks are 50 days
// at 6 hours, 13 hours at Zinc's 4 minutes while it buys. Unbounded
// retries would do in production, but the SDK's test suite caps them at
// 10 attempts, and the run counts each watch toward continuing as new.
const watchChecks = 200

// watchOptions: WatchOrder's idle checks are retries at the delay each
// names (activities.OrderUnchanged); a failing provider is retried on
// retryPolicy's backoff like any check. A watch makes at most
// watchChecks attempts, then the run watches again (watchRanOut).
func watchOptions(status models.OrderStatus) workflow.ActivityOptions {
	rp := retryPolicy()
	rp.MaximumAttempts = watchChecks
	return workflow.ActivityOptions{
		StartToCloseTimeout: providerTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         rp,
		Summary:             fmt.Sprintf("Watch the order at the buying provider (now %s)", status),
	}
}

// checkOptions: one read of the order at the provider.
func checkOptions(status models.OrderStatus) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: providerTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             fmt.Sprintf("Check the order with the buying provider (now %s)", status),
	}
}
