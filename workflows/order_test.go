package workflows_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
	mcworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

const (
	orderID     = "ord_0001"
	orderNumber = "12345678906"
	deadline    = 30 * time.Minute
)

var shipment = models.Shipment{Carrier: "Test Post", TrackingNumber: "TP000123", EstimatedDelivery: "2026-03-17"}

// schedule is the fake provider's: a check a minute after placing, then
// every ten minutes.
var schedule = models.PollSchedule{First: time.Minute, Pending: 10 * time.Minute, Ordered: 10 * time.Minute, Shipped: 10 * time.Minute}

func parcel(s models.Shipment, status models.ParcelStatus) models.Parcel {
	return models.Parcel{Carrier: s.Carrier, TrackingNumber: s.TrackingNumber, EstimatedDelivery: s.EstimatedDelivery, Status: status}
}

// fulfilmentTime is how long the journey takes on the schedule: the first
// check, then three more until delivered.
const fulfilmentTime = time.Minute + 3*10*time.Minute

// journey is a provider's answers to successive checks of an order that
// goes well: still buying, bought, in transit, delivered.
func journey() []models.Fulfilment {
	return []models.Fulfilment{
		{Stage: models.FulfilmentPending},
		{Stage: models.FulfilmentPlaced, MerchantOrderIDs: []string{"111-222"}},
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelInTransit)}},
		{Stage: models.FulfilmentPlaced, Parcels: []models.Parcel{parcel(shipment, models.ParcelDelivered)}},
	}
}

// harness runs one Order workflow against the real activities, backed by
// a fake store and a fake fulfiller.
type harness struct {
	t     *testing.T
	env   *testsuite.TestWorkflowEnvironment
	in    workflows.OrderInput
	store *fakeStore
	ff    *fakeFulfiller
	attrs []temporal.SearchAttributes // every upsert, in order
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	env.SetWorkerOptions(worker.Options{DisableRegistrationAliasing: true})

	in := workflows.OrderInput{
		OrderID:         orderID,
		OrderNumber:     orderNumber,
		Mode:            models.ModeTest,
		PaymentAsset:    "USDC",
		PaymentAmount:   decimal.RequireFromString("995.98"),
		PaymentDeadline: t0.Add(deadline),
	}
	h := &harness{
		t:   t,
		env: env,
		in:  in,
		store: newFakeStore(models.Order{
			ID: orderID, Number: orderNumber, Mode: models.ModeTest,
			Items: []models.CartItem{{Marketplace: models.MarketplaceAmazon, ProductID: "B0ABC12345", Quantity: 1}},
		}),
		ff: &fakeFulfiller{schedule: schedule, script: journey()},
	}
	env.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
	env.RegisterActivity(&activities.Activities{
		Store:      h.store,
		Refunds:    h.store,
		Fulfillers: map[models.Mode]activities.Fulfiller{models.ModeTest: h.ff},
	})
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		h.attrs = append(h.attrs, args.Get(0).(temporal.SearchAttributes))
	}).Return()
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func pay(id, amount string) workflows.PaymentSignal {
	return workflows.PaymentSignal{
		PaymentID:  id,
		Asset:      "USDC",
		Amount:     decimal.RequireFromString(amount),
		ReceivedAt: t0,
		Memo:       orderNumber,
		Sender:     "GSENDER",
	}
}

func (h *harness) payAt(after time.Duration, p workflows.PaymentSignal) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(workflows.SignalPaymentMatched, p) }, after)
}

func (h *harness) cancelAt(after time.Duration, c workflows.CancelSignal) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(workflows.SignalCancel, c) }, after)
}

func (h *harness) queryAt(after time.Duration, into *workflows.StatusView) {
	h.env.RegisterDelayedCallback(func() { *into = h.query() }, after)
}

func (h *harness) query() workflows.StatusView {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(workflows.QueryStatus)
	require.NoError(h.t, err)
	var view workflows.StatusView
	require.NoError(h.t, v.Get(&view))
	return view
}

// run executes the workflow by its registered name and returns how the
// order ended: its result, or for a failed order the OrderResult carried
// by the workflow's failure (only a failed order may end the workflow
// with an error, and it must).
func (h *harness) run() workflows.OrderResult {
	h.t.Helper()
	h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)
	require.True(h.t, h.env.IsWorkflowCompleted())
	var res workflows.OrderResult
	if err := h.env.GetWorkflowError(); err != nil {
		var appErr *temporal.ApplicationError
		require.ErrorAs(h.t, err, &appErr)
		require.Equal(h.t, workflows.OrderFailedError, appErr.Type(), "a workflow error other than a failed order: %v", err)
		require.True(h.t, appErr.NonRetryable())
		require.NoError(h.t, appErr.Details(&res))
		require.Equal(h.t, models.OrderFailed, res.Status, "only a failed order ends the workflow Failed")
		return res
	}
	require.NoError(h.t, h.env.GetWorkflowResult(&res))
	require.NotEqual(h.t, models.OrderFailed, res.Status, "a failed order ends the workflow Failed, not Completed")
	return res
}

func result(status models.OrderStatus, ps models.PaymentStatus, received string) workflows.OrderResult {
	return workflows.OrderResult{Status: status, PaymentStatus: ps, AmountReceived: decimal.RequireFromString(received)}
}

func assertResult(t *testing.T, want, got workflows.OrderResult) {
	t.Helper()
	assert.Equal(t, want.Status, got.Status, "status")
	assert.Equal(t, want.PaymentStatus, got.PaymentStatus, "payment status")
	assert.True(t, want.AmountReceived.Equal(got.AmountReceived), "amount received: want %s, got %s", want.AmountReceived, got.AmountReceived)
}

var fulfilled = []string{
	"transition:ordered/confirmed", "transition:shipped/confirmed", "transition:delivered/confirmed",
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestOrderHappyPath(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("sandbox:p1", "995.98"))

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	transitions, payments, writes := h.store.snapshot()
	// The payment is attached before the order says paid; then one write
	// per step, in order.
	assert.Equal(t, concat([]string{"payment:sandbox:p1", "transition:paid/confirmed"}, fulfilled), writes)
	ref := "REF-" + orderID + "-1"
	assert.Equal(t, []string{"place:1", "check:" + ref, "check:" + ref, "check:" + ref, "check:" + ref}, h.ff.Calls(),
		"placed once, then checked until delivered")

	require.Len(t, transitions, 4)
	paid := transitions[0]
	assert.Equal(t, t0.Add(5*time.Minute), paid.At, "paid at the workflow time the payment arrived")
	assert.True(t, paid.AmountReceived.Equal(decimal.RequireFromString("995.98")))
	for i, tr := range transitions {
		assert.False(t, tr.At.Before(paid.At), "step %d before paid", i)
		if i > 0 {
			assert.False(t, tr.At.Before(transitions[i-1].At), "step %d out of order", i)
		}
		assert.Empty(t, tr.Reason)
	}
	assert.Nil(t, transitions[0].Shipment, "no shipment when paid")
	assert.Nil(t, transitions[1].Shipment, "no shipment when ordered")
	require.NotNil(t, transitions[2].Shipment, "shipment recorded on shipped")
	assert.Equal(t, shipment, *transitions[2].Shipment)

	assert.Equal(t, []models.Payment{{
		ID: "sandbox:p1", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("995.98"),
		Memo: orderNumber, Sender: "GSENDER", ReceivedAt: t0, OrderID: orderID,
	}}, payments)

	view := h.query()
	assert.Equal(t, models.OrderDelivered, view.Status)
	assert.Equal(t, shipment, view.Shipment)
}

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
	listen := func(h *harness) {
		h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
			mu.Lock()
			defer mu.Unlock()
			started = append(started, info)
		})
	}

	delivered := newHarness(t)
	listen(delivered)
	delivered.payAt(5*time.Minute, pay("p1", "995.98"))
	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), delivered.run())

	// A failed order, refunded, then paid again: the refund and late
	// payment writes.
	refunded := newHarness(t)
	listen(refunded)
	refunded.ff.placeErr = fmt.Errorf("fake marketplace: %w", models.Errorf(models.CodeSourcingFailed, "Out of stock."))
	refunded.payAt(5*time.Minute, pay("p1", "995.98"))
	refunded.refundAt(time.Hour, "995.98", "tx-1")
	refunded.payAt(time.Hour, pay("p2", "10"))
	assertResult(t, result(models.OrderFailed, models.PaymentRefunded, "995.98"), refunded.run())

	mu.Lock()
	defer mu.Unlock()
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
	assert.ElementsMatch(t, []string{"RecordPayment", "RecordTransition", "PlaceOrder", "CheckOrder", "RecordRefund", "RecordLatePayment"}, names)
}

// TestOrderPaymentWait covers how the wait for payment ends: the deadline,
// operator cancels, and the payment tally's rules.
func TestOrderPaymentWait(t *testing.T) {
	type event struct {
		at     time.Duration
		pay    *workflows.PaymentSignal
		cancel *workflows.CancelSignal
	}
	payEv := func(at time.Duration, p workflows.PaymentSignal) event { return event{at: at, pay: &p} }
	inAsset := func(p workflows.PaymentSignal, asset string) workflows.PaymentSignal { p.Asset = asset; return p }
	cancel := &workflows.CancelSignal{Reason: "customer asked", RequestedBy: "ops@memocart"}

	tests := []struct {
		name       string
		events     []event
		want       workflows.OrderResult
		wantWrites []string
		wantEnd    time.Duration // workflow time at completion
		wantReason string
	}{
		{
			name:       "no payment: the deadline cancels, nothing to refund",
			want:       result(models.OrderCancelled, models.PaymentExpired, "0"),
			wantWrites: []string{"transition:cancelled/expired"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:   "partial then top-up pays",
			events: []event{payEv(5*time.Minute, pay("p1", "500")), payEv(10*time.Minute, pay("p2", "495.98"))},
			want:   result(models.OrderDelivered, models.PaymentConfirmed, "995.98"),
			wantWrites: concat([]string{
				"payment:p1", "transition:created/partial", "payment:p2", "transition:paid/confirmed",
			}, fulfilled),
			wantEnd: 10 * time.Minute,
		},
		{
			name:       "the same payment twice counts once",
			events:     []event{payEv(5*time.Minute, pay("p1", "497.99")), payEv(10*time.Minute, pay("p1", "497.99"))},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "497.99"),
			wantWrites: []string{"payment:p1", "transition:created/partial", "transition:cancelled/refund_due"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:       "a payment in another asset is recorded, not credited, and due back",
			events:     []event{payEv(5*time.Minute, inAsset(pay("p1", "995.98"), "XLM"))},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "0"),
			wantWrites: []string{"payment:p1", "transition:cancelled/refund_due"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name: "a stray asset next to the full amount makes it overpaid",
			events: []event{
				payEv(5*time.Minute, inAsset(pay("p1", "10"), "XLM")),
				payEv(6*time.Minute, pay("p2", "995.98")),
			},
			want: result(models.OrderDelivered, models.PaymentOverpaid, "995.98"),
			wantWrites: []string{
				"payment:p1", "payment:p2", "transition:paid/overpaid",
				"transition:ordered/overpaid", "transition:shipped/overpaid", "transition:delivered/overpaid",
			},
			wantEnd: 6 * time.Minute,
		},
		{
			name:       "asset codes compare without case",
			events:     []event{payEv(5*time.Minute, inAsset(pay("p1", "995.98"), "usdc"))},
			want:       result(models.OrderDelivered, models.PaymentConfirmed, "995.98"),
			wantWrites: concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled),
			wantEnd:    5 * time.Minute,
		},
		{
			name:   "overpayment",
			events: []event{payEv(5*time.Minute, pay("p1", "1000"))},
			want:   result(models.OrderDelivered, models.PaymentOverpaid, "1000"),
			wantWrites: []string{
				"payment:p1", "transition:paid/overpaid",
				"transition:ordered/overpaid", "transition:shipped/overpaid", "transition:delivered/overpaid",
			},
			wantEnd: 5 * time.Minute,
		},
		{
			name:       "underpaid at the deadline: cancelled, refund due",
			events:     []event{payEv(5*time.Minute, pay("p1", "500"))},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "500"),
			wantWrites: []string{"payment:p1", "transition:created/partial", "transition:cancelled/refund_due"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:       "payments without an id or amount are ignored",
			events:     []event{payEv(5*time.Minute, pay("", "995.98")), payEv(6*time.Minute, pay("p0", "0"))},
			want:       result(models.OrderCancelled, models.PaymentExpired, "0"),
			wantWrites: []string{"transition:cancelled/expired"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:       "operator cancel before payment",
			events:     []event{{at: 5 * time.Minute, cancel: cancel}},
			want:       result(models.OrderCancelled, models.PaymentCancelled, "0"),
			wantWrites: []string{"transition:cancelled/cancelled"},
			wantEnd:    5 * time.Minute,
			wantReason: "cancelled by ops@memocart: customer asked",
		},
		{
			name:       "operator cancel after a partial payment: refund due",
			events:     []event{payEv(5*time.Minute, pay("p1", "500")), {at: 6 * time.Minute, cancel: cancel}},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "500"),
			wantWrites: []string{"payment:p1", "transition:created/partial", "transition:cancelled/refund_due"},
			wantEnd:    6 * time.Minute,
			wantReason: "cancelled by ops@memocart: customer asked",
		},
		{
			name: "a second cancel is ignored",
			events: []event{
				{at: 5 * time.Minute, cancel: cancel},
				{at: 5 * time.Minute, cancel: &workflows.CancelSignal{Reason: "again", RequestedBy: "someone else"}},
			},
			want:       result(models.OrderCancelled, models.PaymentCancelled, "0"),
			wantWrites: []string{"transition:cancelled/cancelled"},
			wantEnd:    5 * time.Minute,
			wantReason: "cancelled by ops@memocart: customer asked",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, ev := range tt.events {
				if ev.pay != nil {
					h.payAt(ev.at, *ev.pay)
				}
				if ev.cancel != nil {
					h.cancelAt(ev.at, *ev.cancel)
				}
			}

			res := h.run()

			assertResult(t, tt.want, res)
			transitions, _, writes := h.store.snapshot()
			assert.Equal(t, tt.wantWrites, writes)
			end := tt.wantEnd
			if tt.want.Status == models.OrderDelivered {
				end += fulfilmentTime
			}
			if tt.want.PaymentStatus == models.PaymentRefundDue && tt.want.AmountReceived.IsPositive() {
				end += workflows.RefundWait // nobody recorded the refund: open until the wait runs out
			}
			assert.Equal(t, t0.Add(end), h.env.Now().UTC(), "completion time")
			last := transitions[len(transitions)-1]
			assert.Equal(t, tt.wantReason, last.Reason)
			if tt.want.Status == models.OrderCancelled {
				assert.Empty(t, h.ff.Calls(), "no fulfilment for a cancelled order")
				assert.Equal(t, t0.Add(tt.wantEnd), last.At, "cancelled at the workflow time it was decided")
			}
		})
	}
}

// TestOrderDeadlineAlreadyPassed starts a run after its deadline (a late
// start, a retried start): it closes at once, but a payment delivered with
// the start (signal-with-start) still counts.
func TestOrderDeadlineAlreadyPassed(t *testing.T) {
	tests := []struct {
		name       string
		withStart  *workflows.PaymentSignal
		want       workflows.OrderResult
		wantWrites []string
	}{
		{
			name:       "nothing received",
			want:       result(models.OrderCancelled, models.PaymentExpired, "0"),
			wantWrites: []string{"transition:cancelled/expired"},
		},
		{
			name:       "paid with the start",
			withStart:  &workflows.PaymentSignal{PaymentID: "p1", Asset: "USDC", Amount: decimal.RequireFromString("995.98")},
			want:       result(models.OrderDelivered, models.PaymentConfirmed, "995.98"),
			wantWrites: concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.in.PaymentDeadline = t0.Add(-time.Minute)
			if tt.withStart != nil {
				// A zero delay delivers the signal in the first workflow task.
				h.payAt(0, *tt.withStart)
			}

			res := h.run()

			assertResult(t, tt.want, res)
			_, _, writes := h.store.snapshot()
			assert.Equal(t, tt.wantWrites, writes)
			end := t0
			if tt.want.Status == models.OrderDelivered {
				end = end.Add(fulfilmentTime)
			}
			assert.Equal(t, end, h.env.Now().UTC())
		})
	}
}

func TestOrderSourcingFailed(t *testing.T) {
	h := newHarness(t)
	h.ff.placeErr = fmt.Errorf("fake marketplace: B0ABC12345: %w",
		models.Errorf(models.CodeSourcingFailed, "The product was withdrawn by the seller."))
	h.payAt(5*time.Minute, pay("p1", "995.98"))

	res := h.run() // the workflow ends Failed, carrying the order's result

	assertResult(t, result(models.OrderFailed, models.PaymentRefundDue, "995.98"), res)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:failed/refund_due"}, writes)
	assert.Contains(t, transitions[len(transitions)-1].Reason, "withdrawn by the seller")
	assert.Equal(t, []string{"place:1"}, h.ff.Calls(), "placed once (non-retryable), never checked")
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

func TestOrderCancelAfterPaidIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.ff.onPlace = func(int) {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelSignal{Reason: "too late", RequestedBy: "ops"})
	}

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	_, _, writes := h.store.snapshot()
	assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes)
}

func TestOrderPaymentDuringFulfilmentIsOverpaid(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.ff.onCheck = func(n int) {
		if n == 3 {
			h.env.SignalWorkflow(workflows.SignalPaymentMatched, pay("p2", "1"))
		}
	}

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentOverpaid, "996.98"), res)
	transitions, payments, writes := h.store.snapshot()
	assert.Contains(t, writes, "payment:p2")
	assert.Len(t, payments, 2)
	last := transitions[len(transitions)-1]
	assert.Equal(t, models.OrderDelivered, last.Status)
	assert.Equal(t, models.PaymentOverpaid, last.PaymentStatus)
	assert.True(t, last.AmountReceived.Equal(decimal.RequireFromString("996.98")))
}

// TestOrderPaymentAfterCancelIsRecorded sends a payment just as the order
// is closed: the workflow must take it in before returning, record it and
// mark the money as due back.
func TestOrderPaymentAfterCancelIsRecorded(t *testing.T) {
	h := newHarness(t)
	h.store.onTransition = func(tr models.Transition) {
		if tr.Status == models.OrderCancelled && tr.PaymentStatus == models.PaymentExpired {
			h.env.SignalWorkflow(workflows.SignalPaymentMatched, pay("late", "995.98"))
		}
	}

	res := h.run()

	assertResult(t, result(models.OrderCancelled, models.PaymentRefundDue, "995.98"), res)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"transition:cancelled/expired", "payment:late", "transition:cancelled/refund_due"}, writes)
	assert.Equal(t, transitions[0].At, transitions[1].At, "the cancelled step keeps its time")
	assert.Empty(t, h.ff.Calls())
}

func TestOrderStatusQuery(t *testing.T) {
	h := newHarness(t)
	var start, partial workflows.StatusView
	h.queryAt(time.Minute, &start)
	h.payAt(5*time.Minute, pay("p1", "500"))
	h.queryAt(6*time.Minute, &partial)
	h.payAt(10*time.Minute, pay("p2", "495.98"))

	h.run()

	due := decimal.RequireFromString("995.98")
	assert.Equal(t, models.OrderCreated, start.Status)
	assert.Equal(t, models.PaymentPending, start.PaymentStatus)
	assert.True(t, start.AmountDue.Equal(due))
	assert.True(t, start.AmountReceived.IsZero())
	assert.True(t, start.AmountRemaining.Equal(due))
	assert.Equal(t, t0.Add(deadline), start.PaymentDeadline.UTC())
	assert.Zero(t, start.PaymentsCounted)

	assert.Equal(t, models.OrderCreated, partial.Status)
	assert.Equal(t, models.PaymentPartial, partial.PaymentStatus)
	assert.True(t, partial.AmountReceived.Equal(decimal.RequireFromString("500")))
	assert.True(t, partial.AmountRemaining.Equal(decimal.RequireFromString("495.98")), "remaining %s", partial.AmountRemaining)
	assert.Equal(t, 1, partial.PaymentsCounted)

	final := h.query()
	assert.Equal(t, models.OrderDelivered, final.Status)
	assert.Equal(t, models.PaymentConfirmed, final.PaymentStatus)
	assert.True(t, final.AmountRemaining.IsZero())
	assert.Equal(t, 2, final.PaymentsCounted)
	assert.Equal(t, shipment, final.Shipment)
}

func TestOrderSearchAttributes(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.run()

	type sa struct{ number, status, payment string }
	var got []sa
	for _, a := range h.attrs {
		var s sa
		s.number, _ = a.GetKeyword(workflows.SearchAttrOrderNumber)
		s.status, _ = a.GetKeyword(workflows.SearchAttrOrderStatus)
		s.payment, _ = a.GetKeyword(workflows.SearchAttrPaymentStatus)
		got = append(got, s)
	}
	assert.Equal(t, []sa{
		{orderNumber, "created", "pending"},
		{"", "paid", "confirmed"},
		{"", "ordered", "confirmed"},
		{"", "shipped", "confirmed"},
		{"", "delivered", "confirmed"},
	}, got)
}

// A run whose start set the search attributes (what the API's start does,
// InputFor) does not upsert the same values again: the first change it
// upserts is the first real one. The attributes still end up the same.
func TestOrderSearchAttributesSetAtStart(t *testing.T) {
	h := newHarness(t)
	h.in.SearchAttributesSet = true
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.run()

	var statuses []string
	for _, a := range h.attrs {
		status, _ := a.GetKeyword(workflows.SearchAttrOrderStatus)
		statuses = append(statuses, status)
	}
	assert.Equal(t, []string{"paid", "ordered", "shipped", "delivered"}, statuses)
	assert.True(t, workflows.InputFor(models.Order{ID: orderID, Number: orderNumber}).SearchAttributesSet,
		"InputFor goes with StartOptions, which sets the attributes")
}

func TestOrderWorkflowCancelled(t *testing.T) {
	h := newHarness(t)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)

	h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)

	require.True(t, h.env.IsWorkflowCompleted())
	err := h.env.GetWorkflowError()
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "got %v", err)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
	assert.Equal(t, "workflow cancelled", transitions[0].Reason)
	assert.Empty(t, h.ff.Calls())
}

func TestOrderInvalidInput(t *testing.T) {
	h := newHarness(t)
	h.in.PaymentAmount = decimal.Zero
	h.in.OrderID = ""

	h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)

	err := h.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, string(models.CodeInvalidRequest), appErr.Type())
	assert.Contains(t, appErr.Message(), "OrderID, PaymentAmount")
}

func TestStartOptions(t *testing.T) {
	in := workflows.OrderInput{
		OrderID: orderID, OrderNumber: orderNumber, Mode: models.ModeTest,
		PaymentAsset: "USDC", PaymentAmount: decimal.RequireFromString("995.98"), PaymentDeadline: t0,
	}
	opts := workflows.StartOptions(in, "orders-q")
	assert.Equal(t, "order-"+orderID, opts.ID)
	assert.Equal(t, models.WorkflowID(orderID), opts.ID)
	assert.Equal(t, "orders-q", opts.TaskQueue)
	assert.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, opts.WorkflowIDReusePolicy)
	assert.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, opts.WorkflowIDConflictPolicy)
	assert.Equal(t, "Order 12345678906 — 995.98 USDC", opts.StaticSummary)
	assert.Contains(t, opts.StaticDetails, orderID)
	for key, want := range map[temporal.SearchAttributeKeyKeyword]string{
		workflows.SearchAttrOrderNumber:   orderNumber,
		workflows.SearchAttrOrderStatus:   "created",
		workflows.SearchAttrPaymentStatus: "pending",
	} {
		got, ok := opts.TypedSearchAttributes.GetKeyword(key)
		assert.True(t, ok, key.GetName())
		assert.Equal(t, want, got, key.GetName())
	}
}

// TestOrderProviderSignalChecksAtOnce: a webhook's hint makes the workflow
// check the provider right away instead of at the next scheduled check,
// and a burst of duplicate hints costs one check.
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
	assert.Equal(t, t0.Add(80*time.Minute), checkedAt[2], "then back to the schedule")
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
		"transition:shipped/confirmed", "transition:failed/refund_due"}, writes)
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
}

// cancelOutcome is what the test suite reported of one cancel update.
type cancelOutcome struct {
	accepted, rejected, completed bool
	rejectErr, err                error
	result                        workflows.CancelResult
	completedAt                   time.Time
}

// cancelByCustomerAt sends the API's cancel update after a delay.
func (h *harness) cancelByCustomerAt(after time.Duration, note string) *cancelOutcome {
	out := &cancelOutcome{}
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(workflows.UpdateCancel, fmt.Sprintf("cancel-%d", len(note)+int(after)), &testsuite.TestUpdateCallback{
			OnAccept: func() { out.accepted = true },
			OnReject: func(err error) { out.rejected, out.rejectErr = true, err },
			OnComplete: func(v any, err error) {
				out.completed, out.err, out.completedAt = true, err, h.env.Now()
				switch r := v.(type) {
				case workflows.CancelResult:
					out.result = r
				case converter.EncodedValue:
					require.NoError(h.t, r.Get(&out.result))
				case nil:
				default:
					h.t.Errorf("update result of type %T", v)
				}
			},
		}, workflows.CancelRequest{Note: note})
	}, after)
	return out
}

// TestOrderCancelByCustomer: the API's cancel update cancels an order
// awaiting payment and answers once the cancellation is written; a paid
// order refuses it before it enters the history; cancellations carry the
// clients' reason.
func TestOrderCancelByCustomer(t *testing.T) {
	t.Run("before payment", func(t *testing.T) {
		h := newHarness(t)
		out := h.cancelByCustomerAt(5*time.Minute, "changed my mind")
		res := h.run()

		assertResult(t, result(models.OrderCancelled, models.PaymentCancelled, "0"), res)
		require.True(t, out.accepted && out.completed, "accepted and completed: %+v", out)
		require.NoError(t, out.err)
		assert.Equal(t, workflows.CancelResult{Status: models.OrderCancelled, PaymentStatus: models.PaymentCancelled,
			Cancellation: models.CancellationRequestedByCustomer}, out.result)
		transitions, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
		assert.Equal(t, models.CancellationRequestedByCustomer, transitions[0].Cancellation)
		assert.Equal(t, "cancelled by the customer (API): changed my mind", transitions[0].Reason)
		assert.Equal(t, t0.Add(5*time.Minute), transitions[0].At)
		assert.Equal(t, t0.Add(5*time.Minute), out.completedAt.UTC(), "answered at once, not at the deadline")
		assert.Empty(t, h.ff.Calls())
		assert.Equal(t, models.CancellationRequestedByCustomer, h.query().Cancellation)
	})

	t.Run("answered only once the cancellation is written", func(t *testing.T) {
		h := newHarness(t)
		h.store.failTransitions = 3 // the write is retried (1 s, 2 s, 4 s)
		out := h.cancelByCustomerAt(5*time.Minute, "")
		h.run()
		require.True(t, out.completed)
		require.NoError(t, out.err)
		assert.Equal(t, models.OrderCancelled, out.result.Status)
		assert.True(t, out.completedAt.After(t0.Add(5*time.Minute+6*time.Second)), "answered at %s, after the retried write", out.completedAt)
		_, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
	})

	t.Run("after a partial payment: refund due", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(2*time.Minute, pay("p1", "500"))
		out := h.cancelByCustomerAt(5*time.Minute, "")
		res := h.run()
		assertResult(t, result(models.OrderCancelled, models.PaymentRefundDue, "500"), res)
		require.True(t, out.completed)
		assert.Equal(t, workflows.CancelResult{Status: models.OrderCancelled, PaymentStatus: models.PaymentRefundDue,
			Cancellation: models.CancellationRequestedByCustomer}, out.result)
		transitions, _, _ := h.store.snapshot()
		last := transitions[len(transitions)-1]
		assert.Equal(t, models.CancellationRequestedByCustomer, last.Cancellation)
		assert.Equal(t, "cancelled by the customer (API)", last.Reason)
	})

	t.Run("twice: both answered, one cancellation", func(t *testing.T) {
		h := newHarness(t)
		first := h.cancelByCustomerAt(5*time.Minute, "first")
		second := h.cancelByCustomerAt(5*time.Minute, "second, same instant")
		h.run()
		for _, out := range []*cancelOutcome{first, second} {
			require.True(t, out.accepted && out.completed, "%+v", out)
			assert.Equal(t, models.CancellationRequestedByCustomer, out.result.Cancellation)
		}
		transitions, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
		assert.Equal(t, "cancelled by the customer (API): first", transitions[0].Reason)
	})

	t.Run("an operator's cancel first keeps its reason", func(t *testing.T) {
		h := newHarness(t)
		h.cancelAt(5*time.Minute, workflows.CancelSignal{Reason: "fraud", RequestedBy: "ops"})
		out := h.cancelByCustomerAt(5*time.Minute, "")
		h.run()
		require.True(t, out.accepted && out.completed, "%+v", out)
		assert.Equal(t, models.CancellationByOperator, out.result.Cancellation)
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationByOperator, transitions[0].Cancellation)
	})

	t.Run("paid: refused, the order goes on", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(2*time.Minute, pay("p1", "995.98"))
		out := h.cancelByCustomerAt(3*time.Minute, "too late")
		res := h.run()
		assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
		require.True(t, out.rejected, "%+v", out)
		assert.False(t, out.accepted)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, out.rejectErr, &appErr)
		assert.Equal(t, string(models.CodeOrderNotCancellable), appErr.Type())
		assert.Contains(t, appErr.Message(), "paid")
		_, _, writes := h.store.snapshot()
		assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes)
	})

	t.Run("shipped: refused", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(time.Minute, pay("p1", "995.98"))
		out := h.cancelByCustomerAt(time.Minute+fulfilmentTime-time.Minute, "")
		h.run()
		require.True(t, out.rejected, "%+v", out)
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, out.rejectErr, &appErr)
		assert.Equal(t, string(models.CodeOrderNotCancellable), appErr.Type())
		assert.Contains(t, appErr.Message(), "shipped")
	})
}

// The reasons clients read for the other ways an order is cancelled.
func TestOrderCancellationReasons(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		h := newHarness(t)
		h.run()
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationPaymentWindowExpired, transitions[0].Cancellation)
		assert.Equal(t, models.CancellationPaymentWindowExpired, h.query().Cancellation)
	})
	t.Run("operator signal", func(t *testing.T) {
		h := newHarness(t)
		h.cancelAt(time.Minute, workflows.CancelSignal{Reason: "fraud", RequestedBy: "ops"})
		h.run()
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationByOperator, transitions[0].Cancellation)
	})
	t.Run("operator relaying the customer", func(t *testing.T) {
		h := newHarness(t)
		h.cancelAt(time.Minute, workflows.CancelSignal{Reason: "asked by mail", RequestedBy: "ops", Cancellation: models.CancellationRequestedByCustomer})
		h.run()
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationRequestedByCustomer, transitions[0].Cancellation)
	})
	t.Run("workflow cancelled", func(t *testing.T) {
		h := newHarness(t)
		h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
		h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)
		require.True(t, h.env.IsWorkflowCompleted())
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationByOperator, transitions[0].Cancellation)
	})
}

// A customer's cancel in the same instant the workflow itself is cancelled
// (from the Temporal UI) is answered with the order as closed, not an
// error.
func TestOrderCancelByCustomerWhileWorkflowCancelled(t *testing.T) {
	h := newHarness(t)
	h.store.failTransitions = 2 // the write takes a few seconds
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	out := h.cancelByCustomerAt(5*time.Minute, "")
	h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.True(t, out.completed, "%+v", out)
	require.NoError(t, out.err)
	assert.Equal(t, models.OrderCancelled, out.result.Status)
	_, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
}

// refundOutcome is what an UpdateRecordRefund sent by refundAt got.
type refundOutcome struct {
	accepted, rejected, completed bool
	err                           error
	result                        workflows.RefundResult
	completedAt                   time.Time
}

// refundAt sends UpdateRecordRefund after the given workflow time, as
// memocart payments mark-refunded --order does.
func (h *harness) refundAt(after time.Duration, amount, tx string) *refundOutcome {
	out := &refundOutcome{}
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(workflows.UpdateRecordRefund, "refund-"+tx, &testsuite.TestUpdateCallback{
			OnAccept: func() { out.accepted = true },
			OnReject: func(err error) { out.rejected, out.err = true, err },
			OnComplete: func(v any, err error) {
				out.completed, out.err, out.completedAt = true, err, h.env.Now()
				switch r := v.(type) {
				case workflows.RefundResult:
					out.result = r
				case converter.EncodedValue:
					require.NoError(h.t, r.Get(&out.result))
				}
			},
		}, workflows.RefundRequest{TxHash: tx, Amount: decimal.RequireFromString(amount), RecordedBy: "test"})
	}, after)
	return out
}

// lastAttrs is the last upserted OrderStatus and PaymentStatus: what the
// Temporal UI's list shows once the run has closed.
func (h *harness) lastAttrs() (status, payment string) {
	for _, a := range h.attrs {
		if v, ok := a.GetKeyword(workflows.SearchAttrOrderStatus); ok {
			status = v
		}
		if v, ok := a.GetKeyword(workflows.SearchAttrPaymentStatus); ok {
			payment = v
		}
	}
	return status, payment
}

// TestOrderEndStates: how each end of an order shows in Temporal, the
// workflow's state (the UI's badge) and the search attributes left on
// the closed run. Nobody records a refund here, so an order owing one
// waits RefundWait before it closes.
func TestOrderEndStates(t *testing.T) {
	sourcingFails := func(h *harness) {
		h.ff.placeErr = fmt.Errorf("fake marketplace: %w", models.Errorf(models.CodeSourcingFailed, "The product was withdrawn by the seller."))
	}
	tests := []struct {
		name          string
		setup         func(h *harness)
		events        func(h *harness)
		wantFailed    bool // the workflow ends Failed (order_failed)
		wantStatus    models.OrderStatus
		wantPayment   models.PaymentStatus
		wantOpenAfter time.Duration // workflow time at close
	}{
		{
			name:       "delivered: Completed",
			events:     func(h *harness) { h.payAt(5*time.Minute, pay("p1", "995.98")) },
			wantStatus: models.OrderDelivered, wantPayment: models.PaymentConfirmed,
			wantOpenAfter: 5*time.Minute + fulfilmentTime,
		},
		{
			name:       "cancelled unpaid: Completed at the deadline",
			events:     func(h *harness) {},
			wantStatus: models.OrderCancelled, wantPayment: models.PaymentExpired,
			wantOpenAfter: deadline,
		},
		{
			name:       "cancelled after a partial payment: Completed, refund_due, after the refund wait",
			events:     func(h *harness) { h.payAt(2*time.Minute, pay("p1", "500")) },
			wantStatus: models.OrderCancelled, wantPayment: models.PaymentRefundDue,
			wantOpenAfter: deadline + workflows.RefundWait,
		},
		{
			name:       "failed: Failed, refund_due, after the refund wait",
			setup:      sourcingFails,
			events:     func(h *harness) { h.payAt(5*time.Minute, pay("p1", "995.98")) },
			wantFailed: true,
			wantStatus: models.OrderFailed, wantPayment: models.PaymentRefundDue,
			wantOpenAfter: 5*time.Minute + workflows.RefundWait,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.setup != nil {
				tt.setup(h)
			}
			tt.events(h)
			h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)
			require.True(t, h.env.IsWorkflowCompleted())
			err := h.env.GetWorkflowError()
			var res workflows.OrderResult
			if tt.wantFailed {
				var appErr *temporal.ApplicationError
				require.ErrorAs(t, err, &appErr)
				assert.Equal(t, workflows.OrderFailedError, appErr.Type())
				assert.True(t, appErr.NonRetryable())
				assert.Contains(t, appErr.Message(), "withdrawn by the seller", "the failure reason is the UI's failure message")
				require.NoError(t, appErr.Details(&res))
			} else {
				require.NoError(t, err)
				require.NoError(t, h.env.GetWorkflowResult(&res))
			}
			assert.Equal(t, tt.wantStatus, res.Status)
			assert.Equal(t, tt.wantPayment, res.PaymentStatus)
			status, payment := h.lastAttrs()
			assert.Equal(t, string(tt.wantStatus), status, "OrderStatus left on the closed run")
			assert.Equal(t, string(tt.wantPayment), payment, "PaymentStatus left on the closed run")
			assert.Equal(t, t0.Add(tt.wantOpenAfter), h.env.Now().UTC(), "closed at")
		})
	}
}

// TestOrderRefundRecorded: an order that ended owing money closes as soon
// as its refund is recorded, with PaymentStatus refunded; refunds that do
// not match are refused before they enter the history; a payment after
// the refund is recorded late, never credited.
func TestOrderRefundRecorded(t *testing.T) {
	failed := func(t *testing.T) *harness {
		h := newHarness(t)
		h.ff.placeErr = fmt.Errorf("fake marketplace: %w", models.Errorf(models.CodeSourcingFailed, "Out of stock."))
		h.payAt(5*time.Minute, pay("p1", "995.98"))
		return h
	}

	t.Run("failed order: refund recorded, then Failed with refunded", func(t *testing.T) {
		h := failed(t)
		early := h.refundAt(time.Minute, "995.98", "tx-early") // still awaiting payment: owes nothing
		wrong := h.refundAt(time.Hour, "900", "tx-wrong")      // not what the order received
		out := h.refundAt(48*time.Hour, "995.98", "tx-1")
		var during workflows.StatusView
		h.queryAt(47*time.Hour, &during)

		res := h.run()

		require.True(t, early.rejected, "refused while the order awaits payment: %+v", early)
		assert.Contains(t, early.err.Error(), "owes no refund")
		require.True(t, wrong.rejected, "refused: a different amount")
		assert.Contains(t, wrong.err.Error(), "has received 995.98 USDC, not 900")
		require.True(t, out.accepted && out.completed, "%+v", out)
		require.NoError(t, out.err)
		assert.Equal(t, models.PaymentRefunded, out.result.PaymentStatus)

		assert.Equal(t, models.PaymentRefundDue, during.PaymentStatus, "refund_due while it waits")
		assertResult(t, result(models.OrderFailed, models.PaymentRefunded, "995.98"), res)
		assert.Equal(t, t0.Add(48*time.Hour), h.env.Now().UTC(), "closed when the refund was recorded, not at the end of the wait")
		_, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:failed/refund_due", "refund:tx-1"}, writes,
			"the refund is written once, and the order not written again")
		status, payment := h.lastAttrs()
		assert.Equal(t, "failed", status)
		assert.Equal(t, "refunded", payment, "the closed run no longer lists as refund_due")
	})

	t.Run("a payment after the refund is late", func(t *testing.T) {
		h := failed(t)
		h.refundAt(time.Hour, "995.98", "tx-1")
		// Delivered in the same instant, after the refund's update.
		h.payAt(time.Hour, pay("p2", "10"))

		res := h.run()

		assertResult(t, result(models.OrderFailed, models.PaymentRefunded, "995.98"), res)
		_, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:failed/refund_due", "refund:tx-1",
			"payment:p2", "late:p2"}, writes, "stored, then marked late: due back on its own")
	})

	t.Run("cancelled after a partial payment: Completed once refunded", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(2*time.Minute, pay("p1", "500"))
		h.cancelAt(3*time.Minute, workflows.CancelSignal{Reason: "customer asked"})
		out := h.refundAt(24*time.Hour, "500", "tx-c")

		res := h.run()

		require.True(t, out.completed)
		require.NoError(t, out.err)
		assertResult(t, result(models.OrderCancelled, models.PaymentRefunded, "500"), res)
		assert.Equal(t, t0.Add(24*time.Hour), h.env.Now().UTC())
		_, payment := h.lastAttrs()
		assert.Equal(t, "refunded", payment)
	})

	t.Run("delivered order: nothing to refund", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(5*time.Minute, pay("p1", "995.98"))
		out := h.refundAt(10*time.Minute, "995.98", "tx-d")
		res := h.run()
		require.True(t, out.rejected)
		assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	})
}
