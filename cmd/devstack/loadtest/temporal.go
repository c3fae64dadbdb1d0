package loadtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// ReferenceTaskQueue is where the bare starts go: no worker polls it, so
// the reference is the Temporal server's cost of a start and nothing else.
const ReferenceTaskQueue = "memocart-loadtest-reference"

// BareStarts is the reference for order creation: n StartWorkflow calls,
// conc at a time, with the options and input an order's start uses (the
// order workflow's type, id scheme, search attributes and summaries), on
// taskQueue. run names the batch so ids never repeat. It returns the
// sample and the workflow ids to Terminate afterwards.
//
// On ReferenceTaskQueue no worker runs the workflows: the reference is the
// start alone. On the service's own task queue its workers run each
// workflow's first task (the payment deadline's timer; the input's order
// exists nowhere else, and the deadline is an hour away), so the reference
// is a start plus the first task every order runs.
func BareStarts(ctx context.Context, c client.Client, run, taskQueue string, conc, n int) (Sample, []string) {
	ids := make([]string, n)
	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	s := Count(ctx, conc, n, func(ctx context.Context, i int) error {
		in := workflows.OrderInput{
			OrderID:         fmt.Sprintf("ord_loadref%s%06d", run, i),
			OrderNumber:     fmt.Sprintf("9%010d", i),
			Mode:            models.ModeTest,
			PaymentAsset:    "USDC",
			PaymentAmount:   decimal.RequireFromString("409.47"),
			PaymentDeadline: deadline,
			// What workflows.InputFor sends.
			SearchAttributesSet: true,
		}
		ids[i] = models.WorkflowID(in.OrderID)
		opts := workflows.StartOptions(in, taskQueue)
		_, err := c.ExecuteWorkflow(ctx, opts, workflows.OrderWorkflowName, in)
		return err
	})
	return s, ids
}

// Terminate terminates the workflows ids, conc at a time, so reference
// starts leave nothing running. Workflows already gone are not an error.
func Terminate(ctx context.Context, c client.Client, conc int, ids []string) error {
	s := Count(ctx, conc, len(ids), func(ctx context.Context, i int) error {
		err := c.TerminateWorkflow(ctx, ids[i], "", "load test reference start")
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil
		}
		return err
	})
	return s.Err()
}

// History is what order workflows' histories hold, as means per workflow
// over the workflows read: where the Temporal server's work per order
// goes (each event is written by the server to its store, and most
// trigger a task for the worker).
type History struct {
	Workflows                                          int
	Events, Signals, WorkflowTasks, Activities, Timers float64
}

// ReadHistories reads the histories of the workflows ids, conc at a time,
// and returns the means.
func ReadHistories(ctx context.Context, c client.Client, ids []string, conc int) (History, error) {
	var mu sync.Mutex
	var sum History
	s := Count(ctx, conc, len(ids), func(ctx context.Context, i int) error {
		var h History
		it := c.GetWorkflowHistory(ctx, ids[i], "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return err
			}
			h.Events++
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				h.Signals++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				h.WorkflowTasks++
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				h.Activities++
			case enumspb.EVENT_TYPE_TIMER_STARTED:
				h.Timers++
			}
		}
		mu.Lock()
		defer mu.Unlock()
		sum.Workflows++
		sum.Events += h.Events
		sum.Signals += h.Signals
		sum.WorkflowTasks += h.WorkflowTasks
		sum.Activities += h.Activities
		sum.Timers += h.Timers
		return nil
	})
	if err := s.Err(); err != nil {
		return History{}, err
	}
	if sum.Workflows == 0 {
		return History{}, errors.New("loadtest: no histories read")
	}
	n := float64(sum.Workflows)
	return History{Workflows: sum.Workflows, Events: sum.Events / n, Signals: sum.Signals / n,
		WorkflowTasks: sum.WorkflowTasks / n, Activities: sum.Activities / n, Timers: sum.Timers / n}, nil
}
