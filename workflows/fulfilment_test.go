package workflows_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

func TestOrderSourcingFailed(t *testing.T) {
	h := newHarness(t)
	h.ff.placeErr = fmt.Errorf("fake marketplace: B0ABC12345: %w",
		models.Errorf(models.CodeSourcingFailed, "The product was withdrawn by the seller."))
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run() // the workflow ends Failed, carrying the order's result

	assertResult(t, result(models.OrderFailed, models.PaymentRefundDue, "995.98"), res)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:failed/refund_due", "refunds"}, writes)
	// The order's reason is its failure_reason: the customer's sentence
	// alone. The fulfiller's chain is for operators, in the failure.
	assert.Equal(t, "The product was withdrawn by the seller.", transitions[len(transitions)-1].Reason)
	assert.Contains(t, h.env.GetWorkflowError().Error(), "fake marketplace: B0ABC12345", "the workflow's failure keeps the detail")
	assert.Contains(t, h.currentDetails(), "fake marketplace: B0ABC12345")
	assert.Equal(t, []string{"place:1"}, h.ff.Calls(), "placed once (non-retryable), never checked")
}

// TestOrderProviderSignalChecksAtOnce: a webhook's hint makes the workflow
// check the provider right away instead of at the next scheduled check,
// and a burst of duplicate hints costs one check. The watch keeps its
// schedule through the hints' checks.
func TestOrderProviderSignalChecksAtOnce(t *testing.T) {
	h := newHarness(t)
	h.ff.schedule = models.PollSchedule{First: time.Hour, Pending: time.Hour, Ordered: time.Hour, Shipped: time.Hour}
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	var checkedAt []time.Time
	h.ff.onCheck = func(int) { checkedAt = append(checkedAt, h.env.Now().UTC()) }
	for _, at := range []time.Duration{10 * time.Minute, 20 * time.Minute} {
		hint := workflows.FulfilmentSignal{EventID: "evt_" + at.String(), Ref: "REF-" + orderID + "-1"}
		h.env.RegisterDelayedCallback(func() {
			// The same event delivered three times.
			for range 3 {
				h.env.SignalWorkflow(workflows.SignalFulfilmentUpdated, hint)
			}
		}, at)
	}
	// A late repeat of the first event wakes nothing.
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(workflows.SignalFulfilmentUpdated, workflows.FulfilmentSignal{EventID: "evt_10m0s"})
	}, 50*time.Minute)

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	require.Len(t, checkedAt, 4, "two hinted checks and two scheduled ones: %v", checkedAt)
	assert.Equal(t, t0.Add(10*time.Minute), checkedAt[0], "checked when the first hint came, not an hour after placing")
	assert.Equal(t, t0.Add(20*time.Minute), checkedAt[1], "duplicates of the first hint cost no extra check")
	assert.Equal(t, t0.Add(65*time.Minute), checkedAt[2], "the watch's check, an hour after placing: the hints did not restart it")
	assert.Equal(t, t0.Add(125*time.Minute), checkedAt[3], "then on the schedule")
}

// TestOrderHintCheckFallsBackToAnActivity: a hint's check runs in the
// workflow task as a local activity; when the provider fails it there, it
// is handed to a regular CheckOrder activity, which retries visibly, and
// the hint's news still moves the order at once.
func TestOrderHintCheckFallsBackToAnActivity(t *testing.T) {
	h := newHarness(t)
	h.ff.schedule = models.PollSchedule{First: time.Hour, Pending: time.Hour, Ordered: time.Hour, Shipped: time.Hour}
	h.ff.script = journey()[1:] // placed at the first check
	var regular []string
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		regular = append(regular, fmt.Sprintf("%s#%d", info.ActivityType.Name, info.Attempt))
	})
	var orderedAt time.Time
	h.store.onTransition = func(tr models.Transition) {
		if tr.Status == models.OrderOrdered {
			orderedAt = h.env.Now().UTC()
		}
	}
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.env.RegisterDelayedCallback(func() {
		h.ff.mu.Lock()
		h.ff.checkErrs = 3 // both local attempts and the first regular one
		h.ff.mu.Unlock()
		h.env.SignalWorkflow(workflows.SignalFulfilmentUpdated, workflows.FulfilmentSignal{EventID: "evt-1"})
	}, 10*time.Minute)

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	assert.Contains(t, regular, "CheckOrder#2", "the regular activity retried the check")
	assert.Less(t, orderedAt.Sub(t0), 15*time.Minute, "ordered on the hint's check, not at the watch's, an hour after placing")
}

// TestOrderIdleChecksAreRetries: checks that find nothing new are retries
// of one WatchOrder activity, made on the provider's schedule: a week in
// transit checked every 6 hours is 28 checks and one watch, so the
// history does not grow with them.
func TestOrderIdleChecksAreRetries(t *testing.T) {
	h := newHarness(t)
	const every = 6 * time.Hour
	h.ff.schedule = models.PollSchedule{First: time.Minute, Pending: time.Minute, Ordered: time.Minute, Shipped: every}
	j := journey() // pending, placed, in transit, delivered
	inTransit := j[2]
	h.ff.script = j[:3:3]
	for range 27 {
		h.ff.script = append(h.ff.script, inTransit)
	}
	h.ff.script = append(h.ff.script, j[3])
	var checkedAt []time.Time
	h.ff.onCheck = func(int) { checkedAt = append(checkedAt, h.env.Now().UTC()) }
	watches := map[int32]int{} // attempts by number
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "WatchOrder" {
			watches[info.Attempt]++
		}
	})
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	require.Len(t, checkedAt, 3+28, "three checks to shipped, then 28 in transit")
	shipped := checkedAt[2]
	for i, at := range checkedAt[3:] {
		assert.Equal(t, shipped.Add(time.Duration(i+1)*every), at, "check %d in transit is on the schedule", i+1)
	}
	assert.Equal(t, 3, watches[1], "one watch to ordered, one to shipped, one to delivered")
	assert.Equal(t, 1, watches[29], "the last watch made every check in transit (and its early first attempt)")
}

// TestOrderRetryableFailureIsPlacedAgain: the retailer failed the purchase
// for a passing reason (rate limited), nothing was bought: the order is
// placed again under a new attempt, and goes on.
func TestOrderRetryableFailureIsPlacedAgain(t *testing.T) {
	h := newHarness(t)
	h.ff.script = append([]models.Fulfilment{{Stage: models.FulfilmentFailed, FailureCode: "retailer_rate_limited", Retryable: true}}, journey()...)
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	calls := h.ff.Calls()
	require.GreaterOrEqual(t, len(calls), 3)
	assert.Equal(t, []string{"place:1", "check:REF-" + orderID + "-1", "place:2"}, calls[:3])
	for _, c := range calls[3:] {
		assert.Equal(t, "check:REF-"+orderID+"-2", c, "later checks follow the new placement")
	}
	_, _, writes := h.store.snapshot()
	assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes)
}

// TestOrderRetryableFailureGivesUp: placing again is bounded; the last
// failure fails the order with the provider's reason and the money due back.
func TestOrderRetryableFailureGivesUp(t *testing.T) {
	h := newHarness(t)
	h.ff.script = []models.Fulfilment{{Stage: models.FulfilmentFailed, FailureCode: "retailer_rate_limited", Retryable: true}}
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderFailed, models.PaymentRefundDue, "995.98"), res)
	places := 0
	for _, c := range h.ff.Calls() {
		if strings.HasPrefix(c, "place:") {
			places++
		}
	}
	assert.Equal(t, 3, places)
	transitions, _, _ := h.store.snapshot()
	assert.Equal(t, models.FulfilmentFailureReason("retailer_rate_limited"), transitions[len(transitions)-1].Reason)
}

// TestOrderFailsAfterShipping: a parcel the carrier cannot deliver fails
// the order after it shipped, with a reason a client can read.
func TestOrderFailsAfterShipping(t *testing.T) {
	h := newHarness(t)
	j := journey()
	h.ff.script = append(j[:3:3], models.Fulfilment{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelUndeliverable)}})
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderFailed, models.PaymentRefundDue, "995.98"), res)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:ordered/confirmed",
		"transition:shipped/confirmed", "transition:failed/refund_due", "refunds"}, writes)
	assert.Equal(t, models.FulfilmentFailureReason("undeliverable"), transitions[len(transitions)-1].Reason)
}

// TestOrderJumpsStepsAndFollowsTheEstimate: a check that finds the order
// bought and shipped at once records both steps; a new estimated delivery
// date while in transit is written without a change of status.
func TestOrderJumpsStepsAndFollowsTheEstimate(t *testing.T) {
	h := newHarness(t)
	later := shipment
	later.EstimatedDelivery = "2026-03-19"
	h.ff.script = []models.Fulfilment{
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelInTransit)}},
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelInTransit)}},
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(later, models.ParcelInTransit)}},
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(later, models.ParcelDelivered)}},
	}
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:ordered/confirmed",
		"transition:shipped/confirmed", "transition:shipped/confirmed", "transition:delivered/confirmed"}, writes)
	assert.Nil(t, transitions[1].Shipment, "no shipment when ordered")
	assert.Equal(t, shipment, *transitions[2].Shipment)
	assert.Equal(t, later, *transitions[3].Shipment, "the new estimate is written")
	assert.Equal(t, later, *transitions[4].Shipment)
	var upserted []string
	for _, a := range h.attrs {
		if v, ok := a.GetKeyword(workflows.SearchAttrOrderStatus); ok {
			upserted = append(upserted, v)
		}
	}
	assert.Equal(t, []string{"created", "paid", "shipped", "delivered"}, upserted, "the steps one check finds are upserted once, the last")
}

// TestOrderRunWritesTheStepsItsWatchFinds: the run is the only writer of
// its order: its watches (WatchOrder) are given nothing to write with and
// report what they found; the run writes each step once, as a local
// activity, stamped when the watch found it.
func TestOrderRunWritesTheStepsItsWatchFinds(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	locals := map[string]int{}
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		mu.Lock()
		defer mu.Unlock()
		locals[info.ActivityType.Name]++
	})
	var watches []activities.WatchOrderInput
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != "WatchOrder" {
			return
		}
		var in activities.WatchOrderInput
		require.NoError(t, args.Get(&in))
		mu.Lock()
		defer mu.Unlock()
		watches = append(watches, in)
	})
	var checkedAt []time.Time
	h.ff.onCheck = func(int) { checkedAt = append(checkedAt, h.env.Now().UTC()) }
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes, "each step written once")
	mu.Lock()
	assert.Equal(t, map[string]int{"RecordPayment": 1, "RecordTransition": len(transitions)}, locals, "the run writes every step")
	require.NotEmpty(t, watches)
	for _, w := range watches {
		assert.Nil(t, w.Written, "a watch writes nothing of the order")
	}
	mu.Unlock()
	require.Len(t, checkedAt, 4)
	for i, tr := range transitions[1:] {
		assert.Equal(t, checkedAt[i+1], tr.At.UTC(), "%s is stamped when the watch found it", tr.Status)
	}
	assert.Equal(t, models.OrderDelivered, h.query().Status)
	status, payment := h.lastAttrs()
	assert.Equal(t, []string{"delivered", "confirmed"}, []string{status, payment})
	assert.Contains(t, h.currentDetails(), "**delivered**")
}
