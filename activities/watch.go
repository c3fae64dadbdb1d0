package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
)

// PaymentWatcher reads incoming payments from a chain until ctx ends,
// reporting its cursor through progress.
type PaymentWatcher interface {
	Run(ctx context.Context, progress func(cursor string)) error
}

// Watches are the activities of the chain's payment watchers.
type Watches struct {
	watchers map[string]PaymentWatcher
}

// NewWatches returns the watch activities of the watchers this worker can
// run, keyed "network/account"; none is a worker that watches no chain
// (WatchPayments then fails, retried, until a worker that does takes it).
func NewWatches(watchers map[string]PaymentWatcher) *Watches {
	return &Watches{watchers: watchers}
}

// WatchInput names the account a watch activity reads.
type WatchInput struct {
	Network string
	Account string
}

// watchMargin is how long before its deadline a watch activity stops, so
// it returns cleanly instead of timing out.
const watchMargin = time.Minute

// WatchPayments runs the payment watcher for up to the activity's
// deadline, heartbeating the cursor, and returns cleanly so the workflow
// starts the next run. The watcher saves its cursor in the database with
// every page, so a run that dies loses nothing.
func (a *Watches) WatchPayments(ctx context.Context, in WatchInput) error {
	w, ok := a.watchers[in.Network+"/"+in.Account]
	if !ok {
		return errors.New("this worker has no watcher for " + in.Network + " account " + in.Account)
	}
	runCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, deadline.Add(-watchMargin))
		defer cancel()
	}
	// A worker shutting down ends the run at once: another worker (or this
	// one, restarted) resumes from the saved cursor.
	runCtx, stop := context.WithCancel(runCtx)
	defer stop()
	go func() {
		select {
		case <-activity.GetWorkerStopChannel(ctx):
			stop()
		case <-runCtx.Done():
		}
	}()
	err := w.Run(runCtx, func(cursor string) { activity.RecordHeartbeat(ctx, cursor) })
	if activityStopping(ctx) {
		return err
	}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil // our own margin: a clean end of this run
	}
	return err
}

// activityStopping reports whether the worker running the activity is
// shutting down.
func activityStopping(ctx context.Context) bool {
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		return true
	default:
		return false
	}
}
