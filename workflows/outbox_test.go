package workflows_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// memOutbox is an outbox in memory.
type memOutbox struct {
	mu         sync.Mutex
	events     []models.Event
	dispatched map[string]bool
}

func (m *memOutbox) PendingOrderWebhookEvents(_ context.Context, orderID string) ([]models.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []models.Event
	for _, ev := range m.events {
		if ev.OrderID == orderID && !m.dispatched[ev.ID] {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (m *memOutbox) PendingWebhookEvents(_ context.Context, before time.Time, limit int) ([]models.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []models.Event
	for _, ev := range m.events {
		if !m.dispatched[ev.ID] && ev.RecordedAt.Before(before) && len(out) < limit {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (m *memOutbox) MarkWebhookEventDispatched(_ context.Context, id string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dispatched[id] = true
	return nil
}

func TestOutboxDispatchesEachEventOnce(t *testing.T) {
	now := time.Now()
	store := &memOutbox{dispatched: map[string]bool{}, events: []models.Event{
		{ID: "evt_a", Type: models.EventOrderPaid, OrderID: "ord_1", RecordedAt: now.Add(-time.Minute)},
		{ID: "evt_b", Type: models.EventPaymentReceived, OrderID: "ord_1", RecordedAt: now.Add(-time.Minute)},
		{ID: "evt_c", Type: models.EventOrderCreated, OrderID: "ord_2", RecordedAt: now.Add(-time.Hour)},
		{ID: "evt_d", Type: models.EventOrderCreated, OrderID: "ord_3", RecordedAt: now},
	}}
	c := &mocks.Client{}
	retry := &workflows.WebhookRetry{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Second, Expiration: time.Minute}
	var started []string
	var mu sync.Mutex
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WebhookEventWorkflowName, mock.Anything).
		Return(nil, nil).Run(func(args mock.Arguments) {
		opts := args.Get(1).(client.StartWorkflowOptions)
		in := args.Get(3).(workflows.WebhookEventInput)
		assert.Equal(t, "queue", opts.TaskQueue)
		assert.Equal(t, workflows.WebhookEventWorkflowID(in.EventID), opts.ID, "the workflow id is the event's")
		assert.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, opts.WorkflowIDReusePolicy, "a finished delivery is not run again")
		assert.Same(t, retry, in.Retry)
		assert.Empty(t, in.EndpointID)
		mu.Lock()
		started = append(started, in.EventID)
		mu.Unlock()
	})
	o := workflows.NewOutbox(c, "queue", store, retry)
	ctx := context.Background()

	require.NoError(t, o.DispatchOrderEvents(ctx, "ord_1"))
	assert.Equal(t, []string{"evt_a", "evt_b"}, started)
	require.NoError(t, o.DispatchOrderEvents(ctx, "ord_1"))
	assert.Len(t, started, 2, "dispatched events are not started again")

	n, err := o.Sweep(ctx, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the sweep takes the stranded one, not the young one")
	assert.Equal(t, []string{"evt_a", "evt_b", "evt_c"}, started)
}

func TestOutboxTreatsAStartedWorkflowAsDispatched(t *testing.T) {
	store := &memOutbox{dispatched: map[string]bool{}, events: []models.Event{
		{ID: "evt_a", OrderID: "ord_1"}, {ID: "evt_b", OrderID: "ord_1"},
	}}
	c := &mocks.Client{}
	c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return strings.HasSuffix(o.ID, "evt_a") }), mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewWorkflowExecutionAlreadyStarted("done already", "", ""))
	c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return strings.HasSuffix(o.ID, "evt_b") }), mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewUnavailable("temporal down"))
	o := workflows.NewOutbox(c, "queue", store, nil)
	err := o.DispatchOrderEvents(context.Background(), "ord_1")
	require.Error(t, err)
	var unavailable *serviceerror.Unavailable
	assert.True(t, errors.As(err, &unavailable), "the cause is kept: %v", err)
	assert.True(t, store.dispatched["evt_a"], "already started: done")
	assert.False(t, store.dispatched["evt_b"], "left for the sweep")
}

func TestOutboxResendIsANewDelivery(t *testing.T) {
	c := &mocks.Client{}
	var ids []string
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WebhookEventWorkflowName, mock.Anything).
		Return(nil, nil).Run(func(args mock.Arguments) {
		opts := args.Get(1).(client.StartWorkflowOptions)
		in := args.Get(3).(workflows.WebhookEventInput)
		assert.Equal(t, "we_1", in.EndpointID)
		ids = append(ids, opts.ID)
	})
	o := workflows.NewOutbox(c, "queue", &memOutbox{dispatched: map[string]bool{}}, nil)
	ev := models.Event{ID: "evt_a"}
	d1, err := o.Resend(context.Background(), ev, "we_1")
	require.NoError(t, err)
	d2, err := o.Resend(context.Background(), ev, "we_1")
	require.NoError(t, err)
	require.Len(t, ids, 2)
	assert.NotEqual(t, ids[0], ids[1], "each resend has its own workflow")
	assert.True(t, strings.HasPrefix(ids[0], workflows.WebhookEventWorkflowID("evt_a")+"-resend-"), ids[0])
	assert.Equal(t, models.DeliveryID(ids[0], "we_1"), d1)
	assert.NotEqual(t, d1, d2)
}
