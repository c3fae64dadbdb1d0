package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api/client"
	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// offlineReceiver is an integrator's webhook receiver that can go offline:
// while offline every delivery's connection is dropped, as to a machine
// that is down. Online, it keeps each verified delivery's raw body by
// event id and answers 204.
type offlineReceiver struct {
	t       *testing.T
	mu      sync.Mutex
	secret  string
	offline bool
	dropped int
	bodies  map[string][]byte
}

func (r *offlineReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	offline, secret := r.offline, r.secret
	if offline {
		r.dropped++
	}
	r.mu.Unlock()
	if offline {
		panic(http.ErrAbortHandler) // the connection drops, no answer
	}
	body, err := io.ReadAll(req.Body)
	require.NoError(r.t, err)
	ev, err := client.ParseEvent(body, req.Header.Get(client.SignatureHeader), secret)
	if !assert.NoError(r.t, err, "every delivery verifies") {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.bodies[ev.ID] = body
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *offlineReceiver) setOffline(offline bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.offline = offline
}

func (r *offlineReceiver) body(id string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.bodies[id]
	return b, ok
}

// TestE2EOfflineCatchUp is the integrator's hour offline, scaled to
// seconds: its webhook receiver drops every connection while orders are
// paid, moved, delivered, expired and failed (the test helpers make the
// hour's events; the webhook retries run on a shortened schedule). Back
// online, the client catches up from the last event it processed with
// the Go client's EventsAfter, over small pages: every event recorded
// since, oldest first, each once, the same list the newest-first pages
// give. Then the webhook retries deliver each of those events, and every
// delivered body is byte for byte the event as GET /v1/events/{id}
// returns it and as the catch-up listed it.
func TestE2EOfflineCatchUp(t *testing.T) {
	app.TestHooks.WebhookRetry = &workflows.WebhookRetry{InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 2 * time.Second, Expiration: 5 * time.Minute}
	t.Cleanup(func() { app.TestHooks.WebhookRetry = nil })
	rcv := &offlineReceiver{t: t, bodies: map[string][]byte{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	s := startDev(t, "sqlite", map[string]string{"MEMOCART_SANDBOX_STEP_DELAY": "1h"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := client.New(s.key, client.WithBaseURL(s.baseURL))

	ep, err := c.CreateWebhookEndpoint(ctx, &client.CreateWebhookEndpointParams{URL: srv.URL + "/hooks", EnabledEvents: []client.EventType{client.EventAll}})
	require.NoError(t, err)
	rcv.mu.Lock()
	rcv.secret = ep.Secret
	rcv.mu.Unlock()

	paidOrder := func() *client.Order {
		t.Helper()
		o := s.newOrder(s.key, product)
		_, err := c.CreateTestPayment(ctx, str(o, "id"), nil)
		require.NoError(t, err)
		s.waitStatus(s.key, str(o, "number"), "paid")
		got, err := c.GetOrder(ctx, str(o, "id"))
		require.NoError(t, err)
		return got
	}

	// Online: the first order's events arrive; the client processed them
	// and keeps the newest one's id.
	a := paidOrder()
	aPaid := models.EventID(models.EventOrderPaid, a.ID)
	require.Eventually(t, func() bool { _, ok := rcv.body(aPaid); return ok }, time.Minute, 50*time.Millisecond)
	var last string
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		page, err := c.ListEvents(ctx, &client.ListEventsParams{Limit: 1})
		require.NoError(c2, err)
		require.Len(c2, page.Data, 1)
		assert.Equal(c2, aPaid, page.Data[0].ID, "order.paid is the newest event")
		last = page.Data[0].ID
	}, time.Minute, 50*time.Millisecond)

	// Offline: the hour's events.
	rcv.setOffline(true)
	_, err = c.AdvanceTestOrder(ctx, a.ID)
	require.NoError(t, err)
	b := paidOrder()
	for range 3 {
		_, err = c.AdvanceTestOrder(ctx, b.ID)
		require.NoError(t, err)
	}
	expired := s.newOrder(s.key, product)
	_, err = c.ExpireTestOrder(ctx, str(expired, "id"))
	require.NoError(t, err)
	failed := paidOrder()
	_, err = c.FailTestOrder(ctx, failed.ID, &client.FailTestOrderParams{Reason: "product_out_of_stock"})
	require.NoError(t, err)
	want := []string{
		models.EventID(models.EventOrderOrdered, a.ID),
		models.EventID(models.EventOrderCreated, b.ID), models.EventID(models.EventOrderPaid, b.ID),
		models.EventID(models.EventOrderOrdered, b.ID), models.EventID(models.EventOrderShipped, b.ID),
		models.EventID(models.EventOrderDelivered, b.ID),
		models.EventID(models.EventOrderCreated, str(expired, "id")), models.EventID(models.EventOrderCancelled, str(expired, "id")),
		models.EventID(models.EventOrderCreated, failed.ID), models.EventID(models.EventOrderPaid, failed.ID),
		models.EventID(models.EventOrderFailed, failed.ID),
	}
	require.Eventually(t, func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return rcv.dropped >= len(want)
	}, time.Minute, 50*time.Millisecond, "deliveries were tried, and dropped")

	// Back: catch up, five events a page, until every event of the hour
	// is listed (the refund the failed order owes is created by its
	// workflow, a moment after the failure).
	var caught []client.Event
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		caught = caught[:0]
		for ev, err := range c.EventsAfter(ctx, last, &client.ListEventsParams{Limit: 5}) {
			require.NoError(c2, err)
			caught = append(caught, *ev)
		}
		var types []client.EventType
		for _, ev := range caught {
			types = append(types, ev.Type)
		}
		assert.Subset(c2, ids(caught), want)
		assert.Contains(c2, types, client.EventType("refund.created"))
	}, time.Minute, 200*time.Millisecond)
	got := ids(caught)
	rcv.mu.Lock()
	t.Logf("caught up %d events over %d pages of 5; %d deliveries dropped while offline", len(got), (len(got)+4)/5, rcv.dropped)
	rcv.mu.Unlock()
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), len(got), "each event once")
	assert.NotContains(t, got, last, "only events after the last processed")
	// The same events as paging from the newest down to the cursor.
	var paged []string
	for ev, err := range c.Events(ctx, &client.ListEventsParams{Limit: 4}) {
		require.NoError(t, err)
		if ev.ID == last {
			break
		}
		paged = append(paged, ev.ID)
	}
	slices.Reverse(paged)
	assert.Equal(t, got, paged, "EventsAfter lists what the newest-first pages list, oldest first")

	// Online again: the retries deliver every event of the hour, each the
	// body the events API gives.
	rcv.setOffline(false)
	for _, ev := range caught {
		var delivered []byte
		require.Eventually(t, func() bool {
			var ok bool
			delivered, ok = rcv.body(ev.ID)
			return ok
		}, 2*time.Minute, 100*time.Millisecond, "%s %s delivered once back online", ev.Type, ev.ID)
		assert.Equal(t, string(rawGet(t, s, "/v1/events/"+ev.ID)), string(delivered)+"\n", "%s: the delivered body is the event as the API returns it", ev.Type)
		var listed client.Event
		require.NoError(t, json.Unmarshal(delivered, &listed))
		assert.Equal(t, ev, listed, "%s: as the catch-up listed it", ev.Type)
	}
}

// rawGet is the body of GET path with the stack's test key, as sent.
func rawGet(t *testing.T, s *stack, path string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.baseURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	return body
}

func ids(evs []client.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}
