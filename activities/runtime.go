package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// runtime is what every group of activities shares: the clock and the
// heartbeat. It has no exported method: the worker registers every
// exported method of a group as an activity.
type runtime struct {
	// now is the clock of the writes' times, of webhook attempts and of
	// WatchOrder's first check; nil: time.Now. Workflow tests set the
	// test suite's clock.
	now func() time.Time

	// Tests override how often and how heartbeats are recorded: the SDK
	// forwards at most one heartbeat per throttle interval (30s by default).
	heartbeatEvery  time.Duration
	recordHeartbeat func(ctx context.Context, details ...any)
}

func (a *runtime) clock() time.Time {
	if a.now != nil {
		return a.now().UTC()
	}
	return time.Now().UTC()
}

// defaultHeartbeatEvery is used when the activity has no heartbeat timeout:
// heartbeats are still how a cancellation reaches a running activity.
const defaultHeartbeatEvery = 10 * time.Second

// heartbeat records a heartbeat periodically until the returned stop
// function is called. Every activity of the order workflow runs under it
// from its first line, and the workflow gives them a short
// HeartbeatTimeout: the beats say that the worker process running the
// attempt is alive, not that the work advances. A worker killed mid-call
// stops beating, and Temporal retries the attempt once HeartbeatTimeout
// has passed instead of waiting out the whole StartToCloseTimeout; a call
// that is merely slow (a marketplace taking its full HTTP timeout, a
// database write waiting on a lock) keeps beating and is not cut short.
// A call hung in a live process beats on too: StartToCloseTimeout bounds
// that case. The beats are also how a cancellation reaches a running
// activity (it arrives by cancelling ctx), so fulfillers and stores need
// to know nothing about Temporal.
//
// The first beat is due a quarter of HeartbeatTimeout in: an attempt that
// ends sooner, as nearly every database write does, sends none. The SDK
// forwards at most one beat per 0.8 × HeartbeatTimeout and holds the
// latest until then; ticking at a quarter leaves one waiting whenever a
// window ends, so the server hears from a live attempt every
// 0.8 × HeartbeatTimeout.
func (a *runtime) heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := a.heartbeatEvery
	if every <= 0 {
		// A quarter of the timeout leaves room for a slow or throttled beat.
		every = activity.GetInfo(ctx).HeartbeatTimeout / 4
	}
	if every <= 0 {
		every = defaultHeartbeatEvery
	}
	record := a.recordHeartbeat
	if record == nil {
		record = activity.RecordHeartbeat
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				record(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
