package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

type memStore struct {
	mu       sync.Mutex
	order    models.Order
	statuses []models.OrderStatus
}

func (s *memStore) Order(context.Context, string) (models.Order, error) { return s.order, nil }

func (s *memStore) RecordTransition(_ context.Context, _ string, t models.Transition, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, t.Status)
	return nil
}

func (s *memStore) RecordPayment(context.Context, string, models.Payment, time.Time) error {
	return nil
}

func (s *memStore) RecordFulfilment(context.Context, string, models.Fulfilment, time.Time) error {
	return nil
}

// runPaidOrder runs order ord_1 in env with the real worker's
// registrations over store: paid in full a minute after it starts, it
// completes without error.
func runPaidOrder(t *testing.T, env *testsuite.TestWorkflowEnvironment, store *memStore) {
	t.Helper()
	// WatchOrder's first check is due on the suite's clock.
	worker.Register(env, allGroups(t, store, env.Now))
	in := workflows.OrderInput{
		OrderID: "ord_1", OrderNumber: "12345678903", Mode: models.ModeTest,
		PaymentAsset: "USDC", PaymentAmount: decimal.RequireFromString("10"), PaymentDeadline: env.Now().Add(time.Hour),
	}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalPaymentMatched, workflows.PaymentSignal{
			PaymentID: "sandbox:1", Asset: "USDC", Amount: decimal.RequireFromString("10"),
		})
	}, time.Minute)
	env.ExecuteWorkflow(workflows.OrderWorkflowName, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
}

// TestRegister runs an order end to end with exactly the registrations and
// options the real worker uses, with the sandbox fulfiller: if the names
// the workflow calls (method values) and the names registered ever drift
// apart, the activities are not found and this fails.
func TestRegister(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options())
	store := &memStore{order: models.Order{ID: "ord_1", Mode: models.ModeTest}}
	runPaidOrder(t, env, store)
	var res workflows.OrderResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, models.OrderDelivered, res.Status)
	assert.Equal(t, []models.OrderStatus{models.OrderPaid, models.OrderOrdered, models.OrderShipped, models.OrderDelivered}, store.statuses)

	v, err := env.QueryWorkflow(workflows.QueryStatus)
	require.NoError(t, err)
	var view workflows.StatusView
	require.NoError(t, v.Get(&view))
	assert.Equal(t, sandbox.TrackingNumber("ord_1"), view.Shipment.TrackingNumber)
}

func TestNew(t *testing.T) {
	// A lazy client never dials: enough to build (not start) a worker and
	// check that registration does not panic on duplicates or bad names.
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	defer c.Close()
	w := worker.New(c, worker.DefaultTaskQueue, allGroups(t, &memStore{}, nil), worker.Tuning{})
	require.NotNil(t, w)
	assert.Equal(t, "memocart-orders", worker.DefaultTaskQueue)

	// A group left out is a wiring mistake, refused as the worker is built.
	acts := allGroups(t, &memStore{}, nil)
	acts.Payments = nil
	assert.PanicsWithValue(t, "worker.New: no Payments activities", func() {
		worker.New(c, worker.DefaultTaskQueue, acts, worker.Tuning{})
	})
}

// Parts a test's worker has but never uses: each call would panic.
type (
	unusedRefundStore  struct{ activities.RefundStore }
	unusedOrderRefunds struct{ activities.OrderRefunds }
	unusedSender       struct{ activities.WebhookSender }
)

// noAlerts drops the alerts raised.
type noAlerts struct{}

func (noAlerts) Alert(context.Context, string, string) {}

// allGroups builds every group with its constructor, as cmd does, around
// store and the sandbox fulfiller and payer.
func allGroups(t *testing.T, store activities.Store, now func() time.Time) worker.Activities {
	t.Helper()
	var (
		acts worker.Activities
		err  error
	)
	acts.Orders, err = activities.NewOrders(store, map[models.Mode]activities.Fulfiller{models.ModeTest: sandbox.NewFulfiller(0)}, activities.NoDispatch, now)
	require.NoError(t, err)
	acts.Refunds, err = activities.NewRefunds(activities.RefundPayouts{
		Store: unusedRefundStore{}, Payers: map[models.Mode]activities.Payer{models.ModeTest: sandbox.NewPayer()},
		Start: func(context.Context, models.Refund, string) error { return nil }, Alerts: noAlerts{},
	}, activities.NoDispatch, now)
	require.NoError(t, err)
	acts.Payments, err = activities.NewPayments(store, unusedOrderRefunds{}, acts.Refunds, activities.NoDispatch, now)
	require.NoError(t, err)
	acts.Webhooks, err = activities.NewWebhooks(webhookTargets{}, unusedSender{}, now)
	require.NoError(t, err)
	acts.Watches = activities.NewWatches(nil)
	return acts
}

func TestOptions(t *testing.T) {
	o := worker.Options()
	assert.True(t, o.DisableRegistrationAliasing)
	assert.Positive(t, o.WorkerStopTimeout)
	assert.Zero(t, o.MaxConcurrentWorkflowTaskExecutionSize, "zero keeps the SDK's default")
	assert.Equal(t, worker.HeartbeatSendInterval, o.MaxHeartbeatThrottleInterval,
		"heartbeats leave often enough that a loaded worker keeps its attempts")

	o = worker.OptionsWith(worker.Tuning{MaxConcurrentWorkflowTasks: 50, MaxConcurrentActivities: 70})
	assert.Equal(t, 50, o.MaxConcurrentWorkflowTaskExecutionSize)
	assert.Equal(t, 70, o.MaxConcurrentActivityExecutionSize)
	assert.True(t, o.DisableRegistrationAliasing)
}

// webhookTargets is a webhook store with one event and no endpoint.
type webhookTargets struct{ activities.WebhookStore }

func (webhookTargets) WebhookTargets(context.Context, string) ([]models.WebhookEndpoint, error) {
	return nil, nil
}

// TestRegisterWebhookEvent starts the webhook delivery workflow by its
// registered name, as the outbox does, with the real registrations.
func TestRegisterWebhookEvent(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options())
	worker.Register(env, allGroups(t, &memStore{}, env.Now))
	env.ExecuteWorkflow(workflows.WebhookEventWorkflowName, workflows.WebhookEventInput{EventID: "evt_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.WebhookEventResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Empty(t, res.Delivered, "no endpoint, no delivery")
}
