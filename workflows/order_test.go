package workflows_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// t0 is the tests' start time. It lies years ahead of the real clock:
// the test environment runs local activities (the order's writes) with
// deadlines from its own clock and checks them against the real one, so
// a start in the past would time every local write out.
var t0 = time.Date(2036, 3, 14, 9, 0, 0, 0, time.UTC)

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
	// started lists the refund workflows started, "<refund id>@<order
	// number>".
	started []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := newTestEnv(slog.NewTextHandler(testWriter{t}, nil), t0)

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
	registerActivities(t, env, actParts{
		Store:  h.store,
		Ledger: h.store,
		Payouts: activities.RefundPayouts{
			Store: orderRefunds{h.store},
			Start: func(_ context.Context, r models.Refund, number string) error {
				h.started = append(h.started, r.ID+"@"+number)
				return nil
			},
		},
		Fulfillers: map[models.Mode]activities.Fulfiller{models.ModeTest: h.ff},
		Now:        env.Now,
	})
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		h.attrs = append(h.attrs, args.Get(0).(temporal.SearchAttributes))
	}).Return()
	return h
}

// beforeRefundPayouts makes the run take the path of runs started before
// refund-payouts (and so before the baselines): an order owing money waits
// for an operator's refund.
func (h *harness) beforeRefundPayouts() {
	h.env.OnGetVersion("baseline-2026-12", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.env.OnGetVersion("baseline-2026-11", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.env.OnGetVersion("refund-payouts", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
}

// newTestEnv is a test workflow environment starting at start whose SDK
// logs go to logs. Workflows and activities register under the names
// given, as the worker registers them (no aliases).
func newTestEnv(logs slog.Handler, start time.Time) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(logs)))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.SetWorkerOptions(worker.Options{DisableRegistrationAliasing: true})
	return env
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

// currentDetails is what the Temporal UI shows as the run's current
// details (workflow.SetCurrentDetails).
func (h *harness) currentDetails() string {
	h.t.Helper()
	// The built-in query the UI reads them with (the SDK does not export
	// its name).
	v, err := h.env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(h.t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(h.t, v.Get(&md))
	return md.GetCurrentDetails()
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

	appErr := requireAppError(t, h.env.GetWorkflowError(), models.CodeInvalidRequest)
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
	// Static details never change, so they hold only what never changes:
	// no state that payment would make untrue.
	for _, want := range []string{orderNumber, orderID, "test mode", "995.98 USDC"} {
		assert.Contains(t, opts.StaticDetails, want)
	}
	for _, state := range []string{"Awaiting", "until", "paid", t0.Format(time.RFC3339)} {
		assert.NotContains(t, opts.StaticDetails, state)
	}
	for key, want := range map[temporal.SearchAttributeKeyKeyword]string{
		workflows.SearchAttrOrderNumber:   orderNumber,
		workflows.SearchAttrOrderStatus:   "created",
		workflows.SearchAttrPaymentStatus: "pending",
		workflows.SearchAttrOrderMode:     "test",
	} {
		got, ok := opts.TypedSearchAttributes.GetKeyword(key)
		assert.True(t, ok, key.GetName())
		assert.Equal(t, want, got, key.GetName())
	}

	in.Mode = models.ModeLive
	mode, _ := workflows.StartOptions(in, "orders-q").TypedSearchAttributes.GetKeyword(workflows.SearchAttrOrderMode)
	assert.Equal(t, "live", mode)
}

// TestOrderEndStates: how each end of an order shows in Temporal, the
// workflow's state (the UI's badge) and the search attributes left on
// the closed run. An order owing money hands it to refunds and closes at
// once; a run from before refund-payouts waits RefundWait for an
// operator's refund, which nobody records here.
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
		oldRun        bool          // a run from before refund-payouts
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
			name:       "cancelled after a partial payment: Completed, refund_due, refunds handed over",
			events:     func(h *harness) { h.payAt(2*time.Minute, pay("p1", "500")) },
			wantStatus: models.OrderCancelled, wantPayment: models.PaymentRefundDue,
			wantOpenAfter: deadline,
		},
		{
			name:       "failed: Failed, refund_due, refunds handed over",
			setup:      sourcingFails,
			events:     func(h *harness) { h.payAt(5*time.Minute, pay("p1", "995.98")) },
			wantFailed: true,
			wantStatus: models.OrderFailed, wantPayment: models.PaymentRefundDue,
			wantOpenAfter: 5 * time.Minute,
		},
		{
			name:       "old run, cancelled after a partial payment: Completed, refund_due, after the refund wait",
			events:     func(h *harness) { h.payAt(2*time.Minute, pay("p1", "500")) },
			wantStatus: models.OrderCancelled, wantPayment: models.PaymentRefundDue,
			wantOpenAfter: deadline + workflows.RefundWait, oldRun: true,
		},
		{
			name:       "old run, failed: Failed, refund_due, after the refund wait",
			setup:      sourcingFails,
			events:     func(h *harness) { h.payAt(5*time.Minute, pay("p1", "995.98")) },
			wantFailed: true,
			wantStatus: models.OrderFailed, wantPayment: models.PaymentRefundDue,
			wantOpenAfter: 5*time.Minute + workflows.RefundWait, oldRun: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.setup != nil {
				tt.setup(h)
			}
			if tt.oldRun {
				h.beforeRefundPayouts()
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
			if tt.wantPayment == models.PaymentRefundDue && !tt.oldRun {
				assert.Equal(t, []string{models.RefundID("order:"+orderID+":1") + "@" + orderNumber}, h.started, "the refund's workflow is started")
			}
		})
	}
}
