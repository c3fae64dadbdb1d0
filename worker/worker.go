// Package worker registers every workflow and activity of Memocart in one
// place, under explicit names, and builds the Temporal worker that runs
// them with its options.
//
// It may import workflows, activities and the Temporal worker API.
package worker

import (
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/workflows"
)

// DefaultTaskQueue is the task queue order workflows and their activities
// run on.
const DefaultTaskQueue = "memocart-orders"

// stopTimeout is how long a stopping worker lets running activities finish
// before cancelling them. Fulfilment activities are idempotent and are
// retried elsewhere, so this only has to cover the quick ones.
const stopTimeout = 30 * time.Second

// Register registers the order workflow as workflows.OrderWorkflowName and
// every method of acts as an activity named after the method — the names
// the workflow uses when it calls them through method values.
func Register(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.StellarWatcher, workflow.RegisterOptions{Name: workflows.StellarWatcherName})
	r.RegisterActivityWithOptions(acts, activity.RegisterOptions{})
}

// New returns a worker for taskQueue with every workflow and activity
// registered. The caller starts and stops it.
func New(c client.Client, taskQueue string, acts *activities.Activities) worker.Worker {
	w := worker.New(c, taskQueue, Options())
	Register(w, acts)
	return w
}

// Options returns the worker options New uses, for tests and replayers
// that need to match them.
func Options() worker.Options {
	return worker.Options{
		// Names are explicit; a function reference must not resolve to
		// anything but its registered name.
		DisableRegistrationAliasing: true,
		WorkerStopTimeout:           stopTimeout,
	}
}
