package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// runCost is what one run scheduled, counted from the test environment's
// listeners: the commands a history's events come from.
type runCost struct {
	activities, timers, signals, upserts int
}

// maxEvents bounds the history those commands make: the start (3 events
// with its first workflow task), 3 per activity (scheduled, started,
// completed), 2 per timer (started, fired or cancelled), 1 per signal and
// upsert, 3 per workflow task, and a workflow task per activity, timer
// and signal at most, plus the close.
func (c runCost) maxEvents() int {
	tasks := c.activities + c.timers + c.signals + 1
	return 3 + 3*c.activities + 2*c.timers + c.signals + c.upserts + 3*tasks + 1
}

// TestOrderBackorderedFor120DaysStaysBounded: an order bought but not
// shipped for 120 days, checked every 6 hours as a live order is once
// Zinc's webhooks are received, continues as new run after run, each
// run's history bounded under 2,000 events; a payment and a provider hint
// arriving around a switch are neither lost nor counted twice; the order
// is delivered in the end with one purchase, its payments and its
// search attributes as a single run would leave them.
func TestOrderBackorderedFor120DaysStaysBounded(t *testing.T) {
	const (
		every = 6 * time.Hour
		days  = 120
	)
	store := newFakeStore(models.Order{
		ID: orderID, Number: orderNumber, Mode: models.ModeTest,
		Items: []models.CartItem{{Marketplace: models.MarketplaceAmazon, ProductID: "B0ABC12345", Quantity: 1}},
	})
	checksUntilShipped := days * 24 * int(time.Hour/time.Second) / int(every/time.Second)
	script := []models.Fulfilment{{Stage: models.FulfilmentPending}}
	for range checksUntilShipped {
		script = append(script, models.Fulfilment{Stage: models.FulfilmentPlaced, MerchantOrderIDs: []string{"111-222"}})
	}
	script = append(script,
		models.Fulfilment{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelInTransit)}},
		models.Fulfilment{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelDelivered)}})
	ff := &fakeFulfiller{schedule: models.PollSchedule{First: time.Minute, Pending: 5 * time.Minute, Ordered: every, Shipped: every}, script: script}

	in := workflows.OrderInput{
		OrderID: orderID, OrderNumber: orderNumber, Mode: models.ModeTest, PaymentAsset: "USDC",
		PaymentAmount: decimal.RequireFromString("995.98"), PaymentDeadline: t0.Add(deadline),
	}
	start := t0
	var (
		runs    []runCost
		attrs   []temporal.SearchAttributes
		res     workflows.OrderResult
		resumes []*workflows.OrderResume
	)
	for run := 0; ; run++ {
		require.Less(t, run, 50, "the order never ended")
		var suite testsuite.WorkflowTestSuite
		suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
		env := suite.NewTestWorkflowEnvironment()
		env.SetStartTime(start)
		env.SetWorkerOptions(worker.Options{DisableRegistrationAliasing: true})
		env.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
		env.RegisterActivity(&activities.Activities{
			Store: store, Refunds: store, Fulfillers: map[models.Mode]activities.Fulfiller{models.ModeTest: ff},
			Payouts: &activities.RefundPayouts{Store: orderRefunds{store}, Start: func(context.Context, models.Refund, string) error { return nil }},
		})
		var cost runCost
		env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { cost.activities++ })
		env.SetOnTimerScheduledListener(func(string, time.Duration) { cost.timers++ })
		env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
			cost.upserts++
			attrs = append(attrs, args.Get(0).(temporal.SearchAttributes))
		}).Return()
		switch run {
		case 0:
			env.RegisterDelayedCallback(func() {
				cost.signals++
				env.SignalWorkflow(workflows.SignalPaymentMatched, pay("p1", "995.98"))
			}, 5*time.Minute)
		case 1:
			// Around the first switch: a second payment (overpaid) and a
			// webhook's hint, then the same payment delivered again.
			env.RegisterDelayedCallback(func() {
				cost.signals += 3
				env.SignalWorkflow(workflows.SignalPaymentMatched, pay("p2", "10"))
				env.SignalWorkflow(workflows.SignalFulfilmentUpdated, workflows.FulfilmentSignal{EventID: "evt-1", Ref: "REF-" + orderID + "-1"})
				env.SignalWorkflow(workflows.SignalPaymentMatched, pay("p1", "995.98"))
			}, time.Minute)
		}
		env.ExecuteWorkflow(workflows.OrderWorkflowName, in)
		require.True(t, env.IsWorkflowCompleted())
		runs = append(runs, cost)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			require.NoError(t, err)
			require.NoError(t, env.GetWorkflowResult(&res))
			start = env.Now()
			break
		}
		assert.Equal(t, workflows.OrderWorkflowName, can.WorkflowType.Name)
		var next workflows.OrderInput
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
		require.NotNil(t, next.Resume)
		assert.Equal(t, run, next.Resume.Runs, "runs are counted")
		assert.True(t, next.SearchAttributesSet)
		resumes = append(resumes, next.Resume)
		in, start = next, env.Now()
	}

	// Bounded: every run under 2,000 events, and more than a few runs.
	require.Greater(t, len(runs), 4, "120 days of checks take several runs")
	for i, c := range runs {
		assert.LessOrEqual(t, c.maxEvents(), 2000, "run %d: %+v", i, c)
		assert.LessOrEqual(t, c.activities, 110, "run %d", i)
	}
	assert.GreaterOrEqual(t, start.Sub(t0), days*24*time.Hour, "delivered after 120 days")

	// Nothing lost or doubled across the switches.
	assertResult(t, result(models.OrderDelivered, models.PaymentOverpaid, "1005.98"), res)
	_, payments, _ := store.snapshot()
	var ids []string
	for _, p := range payments {
		ids = append(ids, p.ID)
	}
	assert.Equal(t, []string{"p1", "p2"}, ids, "each payment recorded once")
	assert.Equal(t, []string{"place:1"}, ff.Calls()[:1])
	assert.NotContains(t, ff.Calls()[1:], "place:2", "bought once")
	require.NotEmpty(t, resumes)
	assert.Equal(t, []string{"p1", "p2"}, resumes[len(resumes)-1].Counted)
	assert.Equal(t, "REF-"+orderID+"-1", resumes[len(resumes)-1].Ref)

	// The search attributes end as a single run's would: delivered.
	status, payment := lastAttrsOf(attrs)
	assert.Equal(t, "delivered", status)
	assert.Equal(t, "overpaid", payment)
	transitions, _, _ := store.snapshot()
	var steps []models.OrderStatus
	for _, tr := range transitions {
		if len(steps) == 0 || steps[len(steps)-1] != tr.Status {
			steps = append(steps, tr.Status)
		}
	}
	assert.Equal(t, []models.OrderStatus{models.OrderPaid, models.OrderOrdered, models.OrderShipped, models.OrderDelivered}, steps,
		"each step written once, in order, across runs")
}

// lastAttrsOf is the last upserted OrderStatus and PaymentStatus of attrs.
func lastAttrsOf(attrs []temporal.SearchAttributes) (status, payment string) {
	for _, a := range attrs {
		if v, ok := a.GetKeyword(workflows.SearchAttrOrderStatus); ok {
			status = v
		}
		if v, ok := a.GetKeyword(workflows.SearchAttrPaymentStatus); ok {
			payment = v
		}
	}
	return status, payment
}
