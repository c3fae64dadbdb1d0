package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
	mcworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

// fakeWebhookStore holds one event and its endpoints in memory.
type fakeWebhookStore struct {
	mu        sync.Mutex
	event     models.Event
	endpoints map[string]models.WebhookEndpoint // by id, with secrets
	targets   []string
	// deleteAfter deletes an endpoint once it has that many attempts.
	deleteAfter map[string]int

	// deliveryErr, when set, is what WebhookDelivery returns for every
	// endpoint: a failure before the endpoint is reached.
	deliveryErr error

	targetCalls int
	attempts    []models.WebhookAttempt
	dispatches  []string
	disables    []disableCall
}

type disableCall struct {
	endpointID   string
	failingSince time.Time
	reason       string
}

func (s *fakeWebhookStore) WebhookTargets(_ context.Context, eventID string) ([]models.WebhookEndpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.targetCalls++
	if eventID != s.event.ID {
		return nil, models.ErrEventNotFound
	}
	var out []models.WebhookEndpoint
	for _, id := range s.targets {
		out = append(out, s.endpoints[id])
	}
	return out, nil
}

func (s *fakeWebhookStore) WebhookDelivery(_ context.Context, eventID, endpointID string, _ time.Time) (models.Event, models.WebhookEndpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if eventID != s.event.ID {
		return models.Event{}, models.WebhookEndpoint{}, models.ErrEventNotFound
	}
	if s.deliveryErr != nil {
		return models.Event{}, models.WebhookEndpoint{}, s.deliveryErr
	}
	e, ok := s.endpoints[endpointID]
	if !ok || e.DeletedAt != nil {
		return models.Event{}, models.WebhookEndpoint{}, models.ErrWebhookEndpointNotFound
	}
	if e.DisabledAt != nil {
		return models.Event{}, models.WebhookEndpoint{}, models.NewError(models.CodeWebhookEndpointDisabled)
	}
	return s.event, e, nil
}

func (s *fakeWebhookStore) RecordWebhookAttempt(ctx context.Context, a models.WebhookAttempt, dispatch string) error {
	if err := ctx.Err(); err != nil {
		return err // as a database would
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, a)
	s.dispatches = append(s.dispatches, dispatch)
	n := 0
	for _, b := range s.attempts {
		if b.EndpointID == a.EndpointID {
			n++
		}
	}
	if after, ok := s.deleteAfter[a.EndpointID]; ok && n >= after {
		e := s.endpoints[a.EndpointID]
		now := time.Now()
		e.DeletedAt = &now
		s.endpoints[a.EndpointID] = e
	}
	if a.Succeeded {
		e := s.endpoints[a.EndpointID]
		at := a.At
		e.LastSuccessAt = &at
		s.endpoints[a.EndpointID] = e
	}
	return nil
}

func (s *fakeWebhookStore) DisableWebhookEndpoint(_ context.Context, id string, failingSince, at time.Time, reason string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disables = append(s.disables, disableCall{id, failingSince, reason})
	e := s.endpoints[id]
	if e.DisabledAt != nil || (e.LastSuccessAt != nil && !e.LastSuccessAt.Before(failingSince)) {
		return false, nil
	}
	e.DisabledAt, e.DisabledReason = &at, reason
	s.endpoints[id] = e
	return true, nil
}

func (s *fakeWebhookStore) attemptsOf(endpointID string) []models.WebhookAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []models.WebhookAttempt
	for _, a := range s.attempts {
		if a.EndpointID == endpointID {
			out = append(out, a)
		}
	}
	return out
}

// scriptedSender answers each URL with its script of statuses (the last
// one repeats) and keeps every request.
type scriptedSender struct {
	mu       sync.Mutex
	scripts  map[string][]int
	requests []sentRequest
}

type sentRequest struct {
	url    string
	header http.Header
	body   []byte
}

func (s *scriptedSender) Send(_ context.Context, _ models.Mode, url string, header http.Header, body []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, sentRequest{url, header.Clone(), append([]byte(nil), body...)})
	script := s.scripts[url]
	st := script[0]
	if len(script) > 1 {
		s.scripts[url] = script[1:]
	}
	return st, nil
}

const (
	eventID = "evt_Xq3LbT8nRcVw2ZyKpM5sJd0F"
	epA     = "we_AAAAAAAAAAAAAAAAAAAAAAAA"
	epB     = "we_BBBBBBBBBBBBBBBBBBBBBBBB"
	secretA = "whsec_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	secretB = "whsec_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// webhookHarness runs WebhookEvent workflows against the real activities
// with a fake store and a scripted sender.
type webhookHarness struct {
	t      *testing.T
	env    *testsuite.TestWorkflowEnvironment
	store  *fakeWebhookStore
	sender *scriptedSender
	mu     sync.Mutex
	starts map[string][]time.Time // DeliverWebhook attempt starts per endpoint, on the suite's clock
	infos  []*activity.Info       // every DeliverWebhook attempt's
}

func newWebhookHarness(t *testing.T, scripts map[string][]int) *webhookHarness {
	t.Helper()
	env := newTestEnv(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}), t0)
	h := &webhookHarness{
		t: t, env: env, starts: map[string][]time.Time{},
		store: &fakeWebhookStore{
			event: models.Event{ID: eventID, Type: models.EventOrderPaid, Mode: models.ModeTest, Payload: []byte(`{"id":"` + eventID + `","type":"order.paid"}`)},
			endpoints: map[string]models.WebhookEndpoint{
				epA: {ID: epA, Mode: models.ModeTest, URL: "https://a.example.com/hook", Secret: secretA},
				epB: {ID: epB, Mode: models.ModeTest, URL: "https://b.example.com/hook", Secret: secretB},
			},
			targets:     []string{epA, epB},
			deleteAfter: map[string]int{},
		},
		sender: &scriptedSender{scripts: scripts},
	}
	env.RegisterWorkflowWithOptions(workflows.WebhookEvent, workflow.RegisterOptions{Name: workflows.WebhookEventWorkflowName})
	registerActivities(t, env, actParts{Webhooks: h.store, Sender: h.sender, Now: env.Now})
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name != "DeliverWebhook" {
			return
		}
		var in activities.DeliverWebhookInput
		require.NoError(t, args.Get(&in))
		h.mu.Lock()
		defer h.mu.Unlock()
		h.starts[in.EndpointID] = append(h.starts[in.EndpointID], env.Now())
		h.infos = append(h.infos, info)
	})
	return h
}

func (h *webhookHarness) run(id string, in workflows.WebhookEventInput) workflows.WebhookEventResult {
	h.t.Helper()
	h.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
	h.env.ExecuteWorkflow(workflows.WebhookEventWorkflowName, in)
	require.True(h.t, h.env.IsWorkflowCompleted())
	require.NoError(h.t, h.env.GetWorkflowError())
	var res workflows.WebhookEventResult
	require.NoError(h.t, h.env.GetWorkflowResult(&res))
	return res
}

func gaps(ts []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i].Sub(ts[i-1]))
	}
	return out
}

func TestWebhookEventRetriesWithBackoffThenDelivers(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{
		"https://a.example.com/hook": {500, 503, 200},
		"https://b.example.com/hook": {204},
	})
	wfID := workflows.WebhookEventWorkflowID(eventID)
	res := h.run(wfID, workflows.WebhookEventInput{EventID: eventID})
	assert.ElementsMatch(t, []string{epA, epB}, res.Delivered)
	assert.Empty(t, res.Failed)
	assert.Empty(t, res.Disabled)

	assert.Equal(t, []time.Duration{30 * time.Second, time.Minute}, gaps(h.starts[epA]), "30 s, then doubled")
	require.Len(t, h.starts[epB], 1, "the other endpoint was not held up")
	assert.True(t, t0.Equal(h.starts[epB][0]), h.starts[epB][0])

	as := h.store.attemptsOf(epA)
	require.Len(t, as, 3, "each attempt records itself")
	wantDelivery := models.DeliveryID(wfID, epA)
	for i, a := range as {
		assert.Equal(t, i+1, a.Attempt)
		assert.Equal(t, wantDelivery, a.DeliveryID)
		assert.Equal(t, eventID, a.EventID)
		assert.False(t, a.Resend)
	}
	assert.Equal(t, 500, as[0].ResponseStatus)
	assert.Equal(t, "the endpoint answered HTTP 500", as[0].Error)
	require.NotNil(t, as[0].NextRetryAt)
	assert.Equal(t, 30*time.Second, as[0].NextRetryAt.Sub(as[0].At))
	require.NotNil(t, as[1].NextRetryAt)
	assert.Equal(t, time.Minute, as[1].NextRetryAt.Sub(as[1].At))
	assert.True(t, as[2].Succeeded)
	assert.Equal(t, 200, as[2].ResponseStatus)
	assert.Nil(t, as[2].NextRetryAt)
	assert.Empty(t, as[2].Error)
	for _, d := range h.store.dispatches {
		assert.Equal(t, wfID, d)
	}

	// Every request is signed with its endpoint's secret over its body.
	require.Len(t, h.sender.requests, 4)
	for _, r := range h.sender.requests {
		secret := secretA
		if strings.HasPrefix(r.url, "https://b.") {
			secret = secretB
		}
		assert.Equal(t, eventID, r.header.Get(models.WebhookEventIDHeader))
		assert.Equal(t, "order.paid", r.header.Get(models.WebhookEventTypeHeader))
		assert.Equal(t, h.store.event.Payload, r.body)
		ts := signedAt(t, r.header.Get(models.WebhookSignatureHeader))
		require.NoError(t, models.VerifyWebhookSignature(secret, r.header.Get(models.WebhookSignatureHeader), r.body, ts, models.WebhookTolerance))
		other := secretB
		if secret == secretB {
			other = secretA
		}
		assert.ErrorIs(t, models.VerifyWebhookSignature(other, r.header.Get(models.WebhookSignatureHeader), r.body, ts, models.WebhookTolerance), models.ErrWebhookSignatureMismatch)
	}
	// Signed at the attempt's time (the suite's clock): 0 s, 30 s, 90 s.
	var signed []time.Time
	for _, r := range h.sender.requests {
		if strings.HasPrefix(r.url, "https://a.") {
			signed = append(signed, signedAt(t, r.header.Get(models.WebhookSignatureHeader)))
		}
	}
	assert.Equal(t, []time.Duration{30 * time.Second, time.Minute}, gaps(signed))
}

// signedAt reads t= of a signature header.
func signedAt(t *testing.T, header string) time.Time {
	t.Helper()
	ts, _, ok := strings.Cut(strings.TrimPrefix(header, "t="), ",")
	require.True(t, ok, header)
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err)
	return time.Unix(sec, 0)
}

func TestWebhookEventDisablesAnEndpointFailingForThreeDays(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{
		"https://a.example.com/hook": {200},
		"https://b.example.com/hook": {503},
	})
	res := h.run(workflows.WebhookEventWorkflowID(eventID), workflows.WebhookEventInput{EventID: eventID})
	assert.Equal(t, []string{epA}, res.Delivered)
	assert.Equal(t, []string{epB}, res.Failed)
	assert.Equal(t, []string{epB}, res.Disabled)

	starts := h.starts[epB]
	// 30 s doubling: 30s 1m 2m 4m 8m 16m 32m 64m 128m 256m, then 6 h.
	want := time.Duration(0)
	for i, g := range gaps(starts) {
		want = min(30*time.Second<<i, 6*time.Hour)
		assert.Equalf(t, want, g, "wait before attempt %d", i+2)
	}
	assert.Equal(t, 6*time.Hour, want, "the waits reach the 6 h cap")
	span := starts[len(starts)-1].Sub(starts[0])
	assert.GreaterOrEqual(t, span, models.WebhookDisableAfter, "retried for at least three days")
	assert.LessOrEqual(t, span, workflows.DefaultWebhookRetry.Expiration)
	t.Logf("%d attempts over %s", len(starts), span)

	require.Len(t, h.store.disables, 1)
	d := h.store.disables[0]
	assert.Equal(t, epB, d.endpointID)
	assert.True(t, t0.Equal(d.failingSince), "failing since the delivery began: %s", d.failingSince)
	assert.Contains(t, d.reason, "the endpoint answered HTTP 503")
	assert.Contains(t, d.reason, t0.Format(time.RFC3339))
	assert.NotNil(t, h.store.endpoints[epB].DisabledAt)
	assert.Nil(t, h.store.endpoints[epA].DisabledAt)

	as := h.store.attemptsOf(epB)
	require.Len(t, as, len(starts))
	assert.Nil(t, as[len(as)-1].NextRetryAt, "the last attempt announces no retry")
	assert.NotNil(t, as[len(as)-2].NextRetryAt)
}

func TestWebhookEventStopsForADeletedEndpoint(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{
		"https://a.example.com/hook": {500},
		"https://b.example.com/hook": {200},
	})
	h.store.deleteAfter[epA] = 2
	res := h.run(workflows.WebhookEventWorkflowID(eventID), workflows.WebhookEventInput{EventID: eventID})
	assert.Equal(t, []string{epA}, res.Skipped)
	assert.Equal(t, []string{epB}, res.Delivered)
	assert.Empty(t, res.Disabled)
	assert.Empty(t, h.store.disables, "a deleted endpoint is not disabled")
	assert.Len(t, h.store.attemptsOf(epA), 2, "no attempt after the deletion")
}

func TestWebhookEventNotDisabledWhenAnotherDeliverySucceeded(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://a.example.com/hook": {500}})
	h.store.targets = []string{epA}
	// Another event's delivery reached the endpoint meanwhile.
	h.env.RegisterDelayedCallback(func() {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		e := h.store.endpoints[epA]
		at := h.env.Now()
		e.LastSuccessAt = &at
		h.store.endpoints[epA] = e
	}, 24*time.Hour)
	res := h.run(workflows.WebhookEventWorkflowID(eventID), workflows.WebhookEventInput{EventID: eventID})
	assert.Equal(t, []string{epA}, res.Failed)
	assert.Empty(t, res.Disabled, "it answered since this delivery began failing")
	require.Len(t, h.store.disables, 1)
	assert.Nil(t, h.store.endpoints[epA].DisabledAt)
}

// TestWebhookEventBlamesNoEndpointForOurFailures: deliveries that never
// reached the endpoint (here a secret the worker cannot open) give up
// after the schedule without disabling it.
func TestWebhookEventBlamesNoEndpointForOurFailures(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://a.example.com/hook": {200}})
	h.store.targets = []string{epA}
	h.store.deliveryErr = errors.New("webhook secret is encrypted with a key this process does not have")
	res := h.run(workflows.WebhookEventWorkflowID(eventID), workflows.WebhookEventInput{EventID: eventID})
	assert.Equal(t, []string{epA}, res.Failed)
	assert.Empty(t, res.Disabled)
	assert.Empty(t, h.store.disables, "not the endpoint's fault")
	assert.Empty(t, h.sender.requests)
	assert.GreaterOrEqual(t, gaps(h.starts[epA])[0], 30*time.Second, "retried on the same schedule")
}

func TestWebhookResendGoesToOneEndpoint(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://b.example.com/hook": {200}})
	wfID := workflows.WebhookResendWorkflowID(eventID, "x1")
	res := h.run(wfID, workflows.WebhookEventInput{EventID: eventID, EndpointID: epB})
	assert.Equal(t, []string{epB}, res.Delivered)
	assert.Zero(t, h.store.targetCalls, "a resend names its endpoint")
	as := h.store.attemptsOf(epB)
	require.Len(t, as, 1)
	assert.True(t, as[0].Resend)
	assert.Equal(t, models.DeliveryID(wfID, epB), as[0].DeliveryID)
	assert.NotEqual(t, models.DeliveryID(workflows.WebhookEventWorkflowID(eventID), epB), as[0].DeliveryID, "a resend is a delivery of its own")
}

func TestWebhookEventForAMissingEvent(t *testing.T) {
	h := newWebhookHarness(t, nil)
	res := h.run("webhook-event-evt_gone", workflows.WebhookEventInput{EventID: "evt_000000000000000000000000"})
	assert.Equal(t, workflows.WebhookEventResult{}, res)
	assert.Empty(t, h.sender.requests)
}

func TestWebhookRetryNext(t *testing.T) {
	r := activities.WebhookRetry{InitialInterval: 30 * time.Second, BackoffCoefficient: 2, MaximumInterval: 6 * time.Hour}
	assert.Equal(t, 30*time.Second, r.Next(1))
	assert.Equal(t, time.Minute, r.Next(2))
	assert.Equal(t, 256*time.Minute, r.Next(10))
	assert.Equal(t, 6*time.Hour, r.Next(11))
	assert.Equal(t, 6*time.Hour, r.Next(500))
}

// Each delivery attempt has a heartbeat timeout under its attempt timeout:
// an attempt lost with its worker is retried within seconds.
func TestWebhookDeliveryAttemptsHeartbeat(t *testing.T) {
	h := newWebhookHarness(t, map[string][]int{"https://a.example.com/hook": {500, 200}, "https://b.example.com/hook": {204}})
	h.run(workflows.WebhookEventWorkflowID(eventID), workflows.WebhookEventInput{EventID: eventID})
	require.Len(t, h.infos, 3)
	for _, info := range h.infos {
		assert.Positive(t, info.HeartbeatTimeout, "no heartbeat timeout")
		assert.LessOrEqual(t, info.HeartbeatTimeout, 15*time.Second)
		assert.GreaterOrEqual(t, info.HeartbeatTimeout, 3*mcworker.HeartbeatSendInterval, "a live attempt's beats must have time to reach the server")
		assert.Greater(t, info.StartToCloseTimeout, info.HeartbeatTimeout, "the heartbeat timeout must come first")
	}
}
