package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// runCost is what one run scheduled, counted from the test environment's
// listeners: the commands a history's events come from. An activity's
// retries add no event, so only its first attempt counts.
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

// backorder is the fake provider of an item backordered until ships: the
// order is pending for its first hour, placed until ships, in transit for
// a day, then delivered; every check is answered by the current run's
// clock.
type backorder struct {
	*fakeFulfiller
	now           func() time.Time
	placed, ships time.Time
}

func (b *backorder) Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error) {
	if _, err := b.fakeFulfiller.Check(ctx, o, ref); err != nil {
		return models.Fulfilment{}, err
	}
	now := b.now()
	switch {
	case now.Before(b.placed):
		return models.Fulfilment{Ref: ref, Stage: models.FulfilmentPending}, nil
	case now.Before(b.ships):
		return models.Fulfilment{Ref: ref, Stage: models.FulfilmentPlaced, MerchantOrderIDs: []string{"111-222"}}, nil
	case now.Before(b.ships.Add(24 * time.Hour)):
		return models.Fulfilment{Ref: ref, Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelInTransit)}}, nil
	}
	return models.Fulfilment{Ref: ref, Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelDelivered)}}, nil
}

// TestOrderBackorderedFor120DaysStaysBounded: an order bought but not
// shipped for 120 days, checked every 6 hours as a live order is once
// Zinc's webhooks are received, keeps every run's history bounded under
// 2,000 events, whatever makes it grow:
//   - checks alone: idle checks are retries of one watch, no history
//     event each, so a single short run follows the order throughout;
//   - a provider hint every 6 hours that reports nothing new: each is a
//     check in the history, and the run continues as new, run after run;
//   - a run from before watch-by-retry, checking on a timer: the same.
//
// Where runs switch, a payment and a provider hint arriving around the
// switch are neither lost nor counted twice; the order is delivered in
// the end with one purchase, its payments and its search attributes as a
// single run would leave them.
func TestOrderBackorderedFor120DaysStaysBounded(t *testing.T) {
	const (
		every = 6 * time.Hour
		days  = 120
	)
	for _, tc := range []struct {
		name      string
		hints     bool
		timers    bool // a run from before watch-by-retry
		minRuns   int
		maxEvents int
	}{
		{name: "checks alone", minRuns: 1, maxEvents: 100},
		{name: "a hint every 6 hours", hints: true, minRuns: 3, maxEvents: 2000},
		{name: "timer checks of older runs", timers: true, minRuns: 5, maxEvents: 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newFakeStore(models.Order{
				ID: orderID, Number: orderNumber, Mode: models.ModeTest,
				Items: []models.CartItem{{Marketplace: models.MarketplaceAmazon, ProductID: "B0ABC12345", Quantity: 1}},
			})
			ff := &backorder{
				fakeFulfiller: &fakeFulfiller{schedule: models.PollSchedule{First: time.Minute, Pending: 5 * time.Minute, Ordered: every, Shipped: every}},
				placed:        t0.Add(time.Hour),
				ships:         t0.Add(days * 24 * time.Hour),
			}
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
				env := newTestEnv(slog.DiscardHandler, start)
				env.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
				ff.now = env.Now
				registerActivities(t, env, actParts{
					Store: store, Ledger: store, Fulfillers: map[models.Mode]activities.Fulfiller{models.ModeTest: ff}, Now: env.Now,
					Payouts: activities.RefundPayouts{Store: orderRefunds{store}},
				})
				if tc.timers {
					env.OnGetVersion("baseline-2026-12", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
					env.OnGetVersion("baseline-2026-11", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
					env.OnGetVersion("watch-by-retry", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
				}
				var cost runCost
				env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
					if info.Attempt == 1 {
						cost.activities++
					}
				})
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
					// Around the first switch: a second payment (overpaid)
					// and a webhook's hint, then the same payment delivered
					// again.
					env.RegisterDelayedCallback(func() {
						cost.signals += 3
						env.SignalWorkflow(workflows.SignalPaymentMatched, pay("p2", "10"))
						env.SignalWorkflow(workflows.SignalFulfilmentUpdated, workflows.FulfilmentSignal{EventID: "evt-switch", Ref: "REF-" + orderID + "-1"})
						env.SignalWorkflow(workflows.SignalPaymentMatched, pay("p1", "995.98"))
					}, time.Minute)
				}
				if tc.hints {
					// A hint 3 hours after every 6-hour mark, to the end.
					for at := every / 2; start.Add(at).Before(ff.ships); at += every {
						id := fmt.Sprintf("evt-%d", start.Add(at).Unix())
						env.RegisterDelayedCallback(func() {
							cost.signals++
							env.SignalWorkflow(workflows.SignalFulfilmentUpdated, workflows.FulfilmentSignal{EventID: id, Ref: "REF-" + orderID + "-1"})
						}, at)
					}
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

			t.Logf("runs: %+v", runs)
			require.GreaterOrEqual(t, len(runs), tc.minRuns)
			for i, c := range runs {
				assert.LessOrEqual(t, c.maxEvents(), tc.maxEvents, "run %d: %+v", i, c)
			}
			assert.GreaterOrEqual(t, start.Sub(t0), days*24*time.Hour, "delivered after 120 days")

			// Nothing lost or doubled across the switches.
			want := result(models.OrderDelivered, models.PaymentConfirmed, "995.98")
			wantPaid := []string{"p1"}
			if len(runs) > 1 {
				want, wantPaid = result(models.OrderDelivered, models.PaymentOverpaid, "1005.98"), []string{"p1", "p2"}
				require.NotEmpty(t, resumes)
				assert.Equal(t, wantPaid, resumes[len(resumes)-1].Counted)
				assert.Equal(t, "REF-"+orderID+"-1", resumes[len(resumes)-1].Ref)
			}
			assertResult(t, want, res)
			_, payments, _ := store.snapshot()
			var ids []string
			for _, p := range payments {
				ids = append(ids, p.ID)
			}
			assert.Equal(t, wantPaid, ids, "each payment recorded once")
			assert.Equal(t, []string{"place:1"}, ff.Calls()[:1])
			assert.NotContains(t, ff.Calls()[1:], "place:2", "bought once")

			// The search attributes end as a single run's would: delivered.
			status, payment := lastAttrsOf(attrs)
			assert.Equal(t, "delivered", status)
			assert.Equal(t, string(want.PaymentStatus), payment)
			transitions, _, _ := store.snapshot()
			var steps []models.OrderStatus
			for _, tr := range transitions {
				if len(steps) == 0 || steps[len(steps)-1] != tr.Status {
					steps = append(steps, tr.Status)
				}
			}
			assert.Equal(t, []models.OrderStatus{models.OrderPaid, models.OrderOrdered, models.OrderShipped, models.OrderDelivered}, steps,
				"each step written once, in order, across runs")
		})
	}
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
