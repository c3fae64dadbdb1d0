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
	"go.temporal.io/sdk/interceptor"
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

// HeartbeatSendInterval is the longest a running activity's heartbeat
// waits before it is sent to the server.
const HeartbeatSendInterval = 3 * time.Second

// Activities are the groups of activities a worker runs, each built by
// its constructor (activities.NewOrders, NewPayments, NewRefunds,
// NewWebhooks, NewWatches) with the parts it needs.
type Activities struct {
	Orders   *activities.Orders
	Payments *activities.Payments
	Refunds  *activities.Refunds
	Webhooks *activities.Webhooks
	Watches  *activities.Watches
}

// missing names the first group acts lacks, "" when it has every one.
func (acts Activities) missing() string {
	switch {
	case acts.Orders == nil:
		return "Orders"
	case acts.Payments == nil:
		return "Payments"
	case acts.Refunds == nil:
		return "Refunds"
	case acts.Webhooks == nil:
		return "Webhooks"
	case acts.Watches == nil:
		return "Watches"
	}
	return ""
}

// Register registers the order workflow as workflows.OrderWorkflowName, the
// Stellar watcher, the webhook delivery and the refund workflows under
// theirs, and every method of each group of acts as an activity named
// after the method: the names the workflows use when they call them
// through method values. A nil group is not registered (a test runs the
// workflows it needs); New requires every group.
func Register(r worker.Registry, acts Activities) {
	r.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.StellarWatcher, workflow.RegisterOptions{Name: workflows.StellarWatcherName})
	r.RegisterWorkflowWithOptions(workflows.WebhookEvent, workflow.RegisterOptions{Name: workflows.WebhookEventWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Refund, workflow.RegisterOptions{Name: workflows.RefundWorkflowName})
	var groups []any
	if acts.Orders != nil {
		groups = append(groups, acts.Orders)
	}
	if acts.Payments != nil {
		groups = append(groups, acts.Payments)
	}
	if acts.Refunds != nil {
		groups = append(groups, acts.Refunds)
	}
	if acts.Webhooks != nil {
		groups = append(groups, acts.Webhooks)
	}
	if acts.Watches != nil {
		groups = append(groups, acts.Watches)
	}
	for _, g := range groups {
		r.RegisterActivityWithOptions(g, activity.RegisterOptions{})
	}
	// Over their own: the six activities that take their input struct or,
	// from older runs and workers, their positional arguments.
	activities.RegisterBothShapes(r, acts.Orders, acts.Payments)
}

// Tuning sizes a worker process; zero values keep the Temporal SDK's
// defaults (a sticky cache of 10,000 workflows, 1,000 concurrent workflow
// tasks, 1,000 concurrent activities).
type Tuning struct {
	// StickyCacheSize is how many workflows the process keeps in memory
	// between their tasks. A waiting order evicted from it costs no worker
	// memory; its next task replays its (short) history instead. It is one
	// setting per process, applied when the first worker is created.
	StickyCacheSize int
	// MaxConcurrentWorkflowTasks and MaxConcurrentActivities bound the
	// work one process runs at once.
	MaxConcurrentWorkflowTasks int
	MaxConcurrentActivities    int
}

// New returns a worker for taskQueue with every workflow and activity
// registered, sized by t; it panics on acts without every group. The
// caller starts and stops it.
func New(c client.Client, taskQueue string, acts Activities, t Tuning) worker.Worker {
	if g := acts.missing(); g != "" {
		// A wiring mistake in cmd, caught as the process starts rather
		// than by the first workflow that needs the group.
		panic("worker.New: no " + g + " activities")
	}
	if t.StickyCacheSize > 0 {
		worker.SetStickyWorkflowCacheSize(t.StickyCacheSize)
	}
	w := worker.New(c, taskQueue, OptionsWith(t))
	Register(w, acts)
	return w
}

// Options returns the worker options New uses with default tuning, for
// tests and replayers that need to match them.
func Options() worker.Options { return OptionsWith(Tuning{}) }

// OptionsWith returns the worker options New uses with tuning t.
func OptionsWith(t Tuning) worker.Options {
	return worker.Options{
		// Names are explicit; a function reference must not resolve to
		// anything but its registered name.
		DisableRegistrationAliasing:            true,
		WorkerStopTimeout:                      stopTimeout,
		MaxConcurrentWorkflowTaskExecutionSize: t.MaxConcurrentWorkflowTasks,
		MaxConcurrentActivityExecutionSize:     t.MaxConcurrentActivities,
		// The order's activities time out after 10 s without a heartbeat
		// (a lost worker is noticed that soon). Left to the SDK, beats
		// would leave every 8 s, and a worker slowed by load for 2 s
		// would lose healthy attempts; every 3 s leaves 7 s.
		MaxHeartbeatThrottleInterval: HeartbeatSendInterval,
		// The client's interceptors (tracing) run first; this one puts
		// the request and order ids into workflow and activity logs.
		Interceptors: []interceptor.WorkerInterceptor{LogFields()},
	}
}
