package workflows_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/memocart/memocart/models"
	mcworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

// TestOrderActivitiesNoticeALostWorker: every activity the order workflow
// runs is scheduled with a heartbeat timeout of seconds, under its
// StartToCloseTimeout, so an attempt lost with its worker is retried
// seconds later instead of when StartToCloseTimeout runs out (the
// activities beat while they run: TestActivitiesHeartbeatWhileTheyRun;
// a killed worker on a real server: TestE2EKilledWorkersActivitiesRetriedSoon).
func TestOrderActivitiesNoticeALostWorker(t *testing.T) {
	// lostAttemptBound is what a lost attempt may cost an order at most
	// before its retry is scheduled.
	const lostAttemptBound = 15 * time.Second
	var mu sync.Mutex
	var started []*activity.Info
	locals := map[string]bool{}
	listen := func(h *harness) {
		h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
			mu.Lock()
			defer mu.Unlock()
			started = append(started, info)
		})
		h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
			mu.Lock()
			defer mu.Unlock()
			locals[info.ActivityType.Name] = true
		})
	}

	delivered := newHarness(t)
	listen(delivered)
	delivered.payAt(5*time.Minute, pay("p1", "995.98"))
	delivered.env.RegisterDelayedCallback(func() { // a provider's hint: a local CheckOrder
		delivered.env.SignalWorkflow(workflows.SignalFulfilmentUpdated, workflows.FulfilmentSignal{EventID: "evt-1"})
	}, 10*time.Minute)
	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), delivered.run())

	// A failed order, refunded, then paid again: the refund and late
	// payment writes.
	refunded := newHarness(t)
	refunded.beforeRefundPayouts()
	listen(refunded)
	refunded.ff.placeErr = fmt.Errorf("fake marketplace: %w", models.Errorf(models.CodeSourcingFailed, "Out of stock."))
	refunded.payAt(5*time.Minute, pay("p1", "995.98"))
	refunded.refundAt(time.Hour, "995.98", "tx-1")
	refunded.payAt(time.Hour, pay("p2", "10"))
	assertResult(t, result(models.OrderFailed, models.PaymentRefunded, "995.98"), refunded.run())

	// A failed order handing its refunds over.
	handed := newHarness(t)
	listen(handed)
	handed.ff.placeErr = fmt.Errorf("fake marketplace: %w", models.Errorf(models.CodeSourcingFailed, "Out of stock."))
	handed.payAt(5*time.Minute, pay("p1", "995.98"))
	assertResult(t, result(models.OrderFailed, models.PaymentRefundDue, "995.98"), handed.run())

	mu.Lock()
	defer mu.Unlock()
	// A local write runs inside its workflow task: no heartbeat, a short
	// deadline, and a regular activity when it fails (which is checked
	// here when TestOrderTransientStoreErrorIsRetried makes one fail).
	seen := map[string]bool{}
	var names []string
	for _, info := range started {
		name := info.ActivityType.Name
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
		assert.Positive(t, info.HeartbeatTimeout, "%s has no heartbeat timeout", name)
		assert.LessOrEqual(t, info.HeartbeatTimeout, lostAttemptBound, name)
		assert.GreaterOrEqual(t, info.HeartbeatTimeout, 3*mcworker.HeartbeatSendInterval,
			"%s: a live attempt's beats must have time to reach the server", name)
		assert.Greater(t, info.StartToCloseTimeout, info.HeartbeatTimeout, "%s: the heartbeat timeout must come first", name)
	}
	assert.ElementsMatch(t, []string{"PlaceOrder", "WatchOrder", "RecordRefund", "RecordLatePayment", "CreateRefunds"}, names)
	assert.Equal(t, map[string]bool{"RecordPayment": true, "RecordTransition": true, "CheckOrder": true}, locals, "the order's writes and a hint's check are local")
}

func TestOrderTransientStoreErrorIsRetried(t *testing.T) {
	h := newHarness(t)
	h.store.failTransitions = 2
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	_, _, writes := h.store.snapshot()
	assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes)
	assert.Equal(t, 6, h.store.transitionCalls, "two failed attempts, then four writes")
}

// TestOrderLocalWriteFallsBackToAnActivity: a write the local activity
// cannot make in its few attempts (the database is down) is handed to a
// regular activity, which retries visibly until it writes; every step is
// written once.
func TestOrderLocalWriteFallsBackToAnActivity(t *testing.T) {
	h := newHarness(t)
	h.store.failTransitions = 4 // three local attempts, then one regular
	var regular []string
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		regular = append(regular, fmt.Sprintf("%s#%d", info.ActivityType.Name, info.Attempt))
	})
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	_, _, writes := h.store.snapshot()
	assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes)
	assert.Equal(t, 8, h.store.transitionCalls, "three local and one regular attempt failed, then four writes")
	assert.Contains(t, regular, "RecordTransition#1")
	assert.Contains(t, regular, "RecordTransition#2", "the regular activity retried")
	assert.NotContains(t, regular, "RecordPayment#1", "a write that succeeds locally is no activity")
}
