package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
)

// StellarWatcherName is the registered workflow type of StellarWatcher.
const StellarWatcherName = "StellarWatcher"

// WatcherInput names the account a StellarWatcher watches.
type WatcherInput struct {
	Network string
	Account string
}

// WatcherWorkflowID is the fixed id of the watcher of one receiving
// account. Temporal runs at most one workflow per id, and the workflow
// runs one watch activity at a time, so exactly one watcher reads the
// account however many workers run.
func WatcherWorkflowID(network, account string) string {
	return "stellar-watcher-" + network + "-" + account
}

// watchRunsPerWorkflow bounds the history: after this many watch
// activities the workflow continues as new.
const watchRunsPerWorkflow = 100

// StellarWatcher keeps the payment watcher of one receiving account
// running: one activity at a time, each watching for up to an hour while
// heartbeating its cursor. A worker that dies stops heartbeating; Temporal
// then retries the activity on another worker, which resumes from the
// cursor saved in the database.
func StellarWatcher(ctx workflow.Context, in WatcherInput) error {
	var a *activities.Watches
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    30 * time.Second,
		Summary:             "Watch " + in.Network + " payments to " + in.Account,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})
	for range watchRunsPerWorkflow {
		if err := workflow.ExecuteActivity(ctx, a.WatchPayments, activities.WatchInput{Network: in.Network, Account: in.Account}).Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.NewContinueAsNewError(ctx, StellarWatcherName, in)
}

// EnsureWatcher starts the watcher of an account unless it is running.
// Every worker calls it at start; Temporal keeps the one already running.
func (c *Client) EnsureWatcher(ctx context.Context, in WatcherInput) error {
	_, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       WatcherWorkflowID(in.Network, in.Account),
		TaskQueue:                c.taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            fmt.Sprintf("Stellar payment watcher (%s) for %s", in.Network, in.Account),
	}, StellarWatcherName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
}
