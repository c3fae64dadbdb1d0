package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
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

// firstAttemptOutbox is an outbox making first attempts through the
// harness's store and sender, with its one event pending.
func firstAttemptOutbox(t *testing.T, h *webhookHarness, c *mocks.Client, retry *workflows.WebhookRetry) (*workflows.Outbox, *memOutbox) {
	t.Helper()
	ev := h.store.event
	ev.OrderID, ev.RecordedAt = "ord_1", time.Now().Add(-time.Hour)
	box := &memOutbox{dispatched: map[string]bool{}, events: []models.Event{ev}}
	return workflows.NewOutbox(c, "queue", box, retry).AttemptFirst(h.store, h.sender, 0), box
}

// startedClient is a client whose starts succeed and are kept.
func startedClient(t *testing.T) (*mocks.Client, *[]client.StartWorkflowOptions, *[]workflows.WebhookEventInput) {
	c := &mocks.Client{}
	var opts []client.StartWorkflowOptions
	var ins []workflows.WebhookEventInput
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WebhookEventWorkflowName, mock.Anything).
		Return(nil, nil).Run(func(args mock.Arguments) {
		opts = append(opts, args.Get(1).(client.StartWorkflowOptions))
		ins = append(ins, args.Get(3).(workflows.WebhookEventInput))
	})
	return c, &opts, &ins
}

// TestOutboxFirstAttemptDeliveredStartsNoWorkflow: an event every
// endpoint takes at the first attempt costs no workflow, and the attempt
// is signed and in the delivery log as the activity would record it.
func TestOutboxFirstAttemptDeliveredStartsNoWorkflow(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://a.example.com/hook": {200}, "https://b.example.com/hook": {204}})
	c, opts, _ := startedClient(t)
	o, box := firstAttemptOutbox(t, h, c, nil)

	require.NoError(t, o.DispatchOrderEvents(context.Background(), "ord_1"))
	assert.Empty(t, *opts, "no workflow for a delivered event")
	assert.True(t, box.dispatched[eventID])

	for _, ep := range []struct{ id, secret string }{{epA, secretA}, {epB, secretB}} {
		as := h.store.attemptsOf(ep.id)
		require.Len(t, as, 1, ep.id)
		assert.Equal(t, 1, as[0].Attempt)
		assert.True(t, as[0].Succeeded)
		assert.Equal(t, models.DeliveryID(workflows.WebhookEventWorkflowID(eventID), ep.id), as[0].DeliveryID,
			"the delivery id a retrying workflow would use")
		assert.Nil(t, as[0].NextRetryAt)
	}
	require.Len(t, h.sender.requests, 2)
	for _, r := range h.sender.requests {
		secret := secretA
		if strings.HasPrefix(r.url, "https://b.") {
			secret = secretB
		}
		sig := r.header.Get(models.WebhookSignatureHeader)
		assert.NoError(t, models.VerifyWebhookSignature(secret, sig, r.body, signedAt(t, sig), models.WebhookTolerance))
		assert.Equal(t, eventID, r.header.Get(models.WebhookEventIDHeader))
		assert.Equal(t, h.store.event.Payload, r.body)
	}

	require.NoError(t, o.DispatchOrderEvents(context.Background(), "ord_1"))
	assert.Len(t, h.sender.requests, 2, "a dispatched event is not attempted again")
}

// TestOutboxFirstAttemptFailedStartsTheWorkflowFromAttempt2: an endpoint
// failing the first attempt gets the rest from the workflow, on the same
// schedule and under the same delivery id; the endpoint that took it is
// not delivered to again.
func TestOutboxFirstAttemptFailedStartsTheWorkflowFromAttempt2(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://a.example.com/hook": {500, 503, 200}, "https://b.example.com/hook": {200}})
	h.env.SetStartTime(time.Now())
	c, opts, ins := startedClient(t)
	o, box := firstAttemptOutbox(t, h, c, nil)

	require.NoError(t, o.DispatchOrderEvents(context.Background(), "ord_1"))
	require.Len(t, *ins, 1)
	in, opt := (*ins)[0], (*opts)[0]
	wfID := workflows.WebhookEventWorkflowID(eventID)
	assert.Equal(t, wfID, opt.ID)
	assert.Equal(t, []workflows.PendingDelivery{{EndpointID: epA, Attempts: 1}}, in.Deliveries)
	require.NotNil(t, in.FirstAttemptAt)
	assert.Equal(t, workflows.DefaultWebhookRetry.InitialInterval, opt.StartDelay, "attempt 2 comes the schedule's first wait after attempt 1")
	assert.True(t, box.dispatched[eventID], "started: dispatched")

	res := h.run(wfID, in)
	assert.Equal(t, []string{epA}, res.Delivered)
	assert.Equal(t, 1, h.store.targetCalls, "the workflow does not look the targets up again")
	assert.Len(t, h.starts[epA], 2, "attempts 2 and 3")
	assert.Empty(t, h.starts[epB], "the endpoint that took attempt 1 gets nothing more")
	assert.Equal(t, []time.Duration{time.Minute}, gaps(h.starts[epA]), "the wait after attempt 2, not after attempt 1")

	as := h.store.attemptsOf(epA)
	require.Len(t, as, 3, "the log has the outbox's attempt and the workflow's")
	for i, a := range as {
		assert.Equal(t, i+1, a.Attempt)
		assert.Equal(t, models.DeliveryID(wfID, epA), a.DeliveryID)
	}
	assert.Equal(t, 500, as[0].ResponseStatus)
	require.NotNil(t, as[0].NextRetryAt)
	assert.Equal(t, 30*time.Second, as[0].NextRetryAt.Sub(as[0].At))
	require.NotNil(t, as[1].NextRetryAt)
	assert.Equal(t, time.Minute, as[1].NextRetryAt.Sub(as[1].At))
	assert.True(t, as[2].Succeeded)
	assert.Len(t, h.store.attemptsOf(epB), 1)
}

// flakyMark fails the first mark, as a crash right after the deliveries
// would leave the event.
type flakyMark struct {
	*memOutbox
	failed bool
}

func (f *flakyMark) MarkWebhookEventDispatched(ctx context.Context, id string, at time.Time) error {
	if !f.failed {
		f.failed = true
		return errors.New("process killed")
	}
	return f.memOutbox.MarkWebhookEventDispatched(ctx, id, at)
}

// TestOutboxSweepRedeliversAfterACrashBeforeTheMark: delivery is at least
// once. A delivered event left unmarked is delivered again by the sweep,
// with the same event id for the receiver to deduplicate.
func TestOutboxSweepRedeliversAfterACrashBeforeTheMark(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://a.example.com/hook": {200}})
	h.store.targets = []string{epA}
	c, opts, _ := startedClient(t)
	_, box := firstAttemptOutbox(t, h, c, nil)
	store := &flakyMark{memOutbox: box}
	o := workflows.NewOutbox(c, "queue", store, nil).AttemptFirst(h.store, h.sender, 0)

	require.Error(t, o.DispatchOrderEvents(context.Background(), "ord_1"))
	assert.False(t, box.dispatched[eventID])
	n, err := o.Sweep(context.Background(), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.True(t, box.dispatched[eventID])
	assert.Empty(t, *opts)
	require.Len(t, h.sender.requests, 2, "delivered again")
	for _, r := range h.sender.requests {
		assert.Equal(t, eventID, r.header.Get(models.WebhookEventIDHeader))
	}
}

// TestOutboxFirstAttemptSkipsAnEndpointDisabledMeanwhile: an endpoint
// disabled (or deleted) after the event was recorded gets nothing, from
// the outbox or from a workflow.
func TestOutboxFirstAttemptSkipsAnEndpointDisabledMeanwhile(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://a.example.com/hook": {503}, "https://b.example.com/hook": {200}})
	now := time.Now()
	b := h.store.endpoints[epB]
	b.DisabledAt = &now
	h.store.endpoints[epB] = b
	c, _, ins := startedClient(t)
	o, box := firstAttemptOutbox(t, h, c, nil)

	require.NoError(t, o.DispatchOrderEvents(context.Background(), "ord_1"))
	for _, r := range h.sender.requests {
		assert.NotEqual(t, "https://b.example.com/hook", r.url)
	}
	assert.Empty(t, h.store.attemptsOf(epB))
	require.Len(t, *ins, 1)
	assert.Equal(t, []workflows.PendingDelivery{{EndpointID: epA, Attempts: 1}}, (*ins)[0].Deliveries, "the workflow retries the failed endpoint only")
	assert.True(t, box.dispatched[eventID])
}

// blockingSender never answers before its context ends.
type blockingSender struct{}

func (blockingSender) Send(ctx context.Context, _ models.Mode, _ string, _ http.Header, _ []byte) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestOutboxFirstAttemptIsBounded: a receiver that does not answer holds
// the dispatch (an API request) no longer than the bound; the attempt is
// recorded as failed and the workflow takes over.
func TestOutboxFirstAttemptIsBounded(t *testing.T) {
	h := newWebhookHarness(t, nil)
	h.store.targets = []string{epA}
	c, _, ins := startedClient(t)
	_, box := firstAttemptOutbox(t, h, c, nil)
	o := workflows.NewOutbox(c, "queue", box, nil).AttemptFirst(h.store, blockingSender{}, 100*time.Millisecond)

	began := time.Now()
	require.NoError(t, o.DispatchOrderEvents(context.Background(), "ord_1"))
	assert.Less(t, time.Since(began), 2*time.Second)
	require.Len(t, *ins, 1)
	assert.Equal(t, []workflows.PendingDelivery{{EndpointID: epA, Attempts: 1}}, (*ins)[0].Deliveries)
	as := h.store.attemptsOf(epA)
	require.Len(t, as, 1, "recorded although its deadline passed")
	assert.False(t, as[0].Succeeded)
}

// gatedSender holds every request until released, counting them.
type gatedSender struct {
	mu      sync.Mutex
	n       int
	arrived chan struct{}
	release chan struct{}
}

func (g *gatedSender) Send(_ context.Context, _ models.Mode, _ string, _ http.Header, _ []byte) (int, error) {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	g.arrived <- struct{}{}
	<-g.release
	return http.StatusOK, nil
}

// TestBackgroundOutboxHoldsNoCallerAndDeliversOnce: the write that
// dispatches returns while the endpoint is still answering, and a second
// write of the same order meanwhile does not deliver the event again; it
// dispatches what it recorded once the first run is done.
func TestBackgroundOutboxHoldsNoCallerAndDeliversOnce(t *testing.T) {
	h := newWebhookHarness(t, nil)
	h.store.targets = []string{epA}
	c, opts, _ := startedClient(t)
	_, box := firstAttemptOutbox(t, h, c, nil)
	g := &gatedSender{arrived: make(chan struct{}, 10), release: make(chan struct{})}
	b := workflows.NewOutbox(c, "queue", box, nil).AttemptFirst(h.store, g, 0).
		InBackground(slog.New(slog.NewTextHandler(testWriter{t}, nil)))

	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, b.DispatchOrderEvents(ctx, "ord_1"))
	cancel() // the request is over; its dispatch is not
	select {
	case <-g.arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	require.NoError(t, b.DispatchOrderEvents(context.Background(), "ord_1"), "a second write while the first delivery runs")
	select {
	case <-g.arrived:
		t.Error("the event was sent again while its first delivery ran")
	case <-time.After(300 * time.Millisecond):
	}
	close(g.release)
	b.Wait()
	assert.Equal(t, 1, g.n, "delivered once")
	assert.True(t, box.dispatched[eventID])
	assert.Empty(t, *opts)
}
