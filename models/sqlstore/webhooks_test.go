package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// fakeRenderer writes what it was given, so a test sees the order (and
// the refund) as the recording transaction saw it.
type fakeRenderer struct{}

// ClaimURL is the claim page of token on an example host.
func (r *fakeRenderer) ClaimURL(token string) string { return "https://pay.example/claim/" + token }

func (r *fakeRenderer) RenderEvent(ev models.Event, s models.EventSubject) ([]byte, error) {
	o := s.Order
	m := map[string]any{
		"id": ev.ID, "type": ev.Type, "created_at": ev.CreatedAt.Format(time.RFC3339), "order_id": o.ID,
		"status": o.Status, "payment_status": o.PaymentStatus, "amount_received": o.AmountReceived.String(),
	}
	if p := s.Payment; p != nil {
		m["payment_id"], m["outcome"] = p.ID, p.Outcome
	}
	if rf := s.Refund; rf != nil {
		m["refund_id"], m["refund_status"] = rf.ID, rf.Status
		m["transaction_hash"], m["failure_reason"] = rf.TransactionHash, rf.FailureReason
	}
	return json.Marshal(m)
}

func newEndpoint(t *testing.T, st *sqlstore.Store, accountID string, mode models.Mode, events ...models.EventType) models.WebhookEndpoint {
	t.Helper()
	e, err := st.CreateWebhookEndpoint(context.Background(), models.WebhookEndpoint{
		AccountID: accountID, Mode: mode, URL: "https://hooks.example.com/" + accountID, EnabledEvents: events,
		Secret: "whsec_" + strings.Repeat("s", 32), CreatedAt: t0.Add(-time.Hour),
	})
	require.NoError(t, err)
	require.True(t, models.ValidID("we", e.ID), e.ID)
	return e
}

func payload(t *testing.T, ev models.Event) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(ev.Payload, &m), string(ev.Payload))
	return m
}

// eventsOf returns an order's undispatched events with their bodies, by type.
func eventsOf(t *testing.T, st *sqlstore.Store, orderID string) map[models.EventType]models.Event {
	t.Helper()
	ctx := context.Background()
	pending, err := st.PendingOrderWebhookEvents(ctx, orderID)
	require.NoError(t, err)
	out := map[models.EventType]models.Event{}
	for _, p := range pending {
		assert.Empty(t, p.Payload, "pending lists leave the body out")
		ev, err := st.WebhookEvent(ctx, p.ID)
		require.NoError(t, err)
		_, dup := out[ev.Type]
		require.Falsef(t, dup, "two %s events for one order", ev.Type)
		out[ev.Type] = ev
	}
	return out
}

func TestWebhookEndpointsAreScopedAndLimited(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		b := newAccount(t, st, "b")
		ea := newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderPaid, models.EventOrderShipped)
		eb := newEndpoint(t, st, b.ID, models.ModeTest, models.EventAll)
		live := newEndpoint(t, st, a.ID, models.ModeLive, models.EventAll)

		got, err := st.WebhookEndpoint(ctx, a.ID, models.ModeTest, ea.ID)
		require.NoError(t, err)
		assert.Equal(t, []models.EventType{models.EventOrderPaid, models.EventOrderShipped}, got.EnabledEvents)
		assert.Equal(t, ea.URL, got.URL)
		assert.Empty(t, got.Secret, "reads never carry the secret")
		assert.True(t, got.Active())

		for name, q := range map[string]struct {
			account string
			mode    models.Mode
			id      string
		}{
			"another account's": {a.ID, models.ModeTest, eb.ID},
			"another mode's":    {a.ID, models.ModeTest, live.ID},
			"unknown":           {a.ID, models.ModeTest, "we_000000000000000000000000"},
		} {
			_, err := st.WebhookEndpoint(ctx, q.account, q.mode, q.id)
			assert.ErrorIs(t, err, models.ErrWebhookEndpointNotFound, name)
			_, err = st.DeleteWebhookEndpoint(ctx, q.account, q.mode, q.id, t0)
			assert.ErrorIs(t, err, models.ErrWebhookEndpointNotFound, name)
		}
		list, err := st.WebhookEndpoints(ctx, a.ID, models.ModeTest)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, ea.ID, list[0].ID)

		// Up to the limit per account and mode, then refused.
		for range models.MaxWebhookEndpoints - 1 {
			newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		}
		_, err = st.CreateWebhookEndpoint(ctx, models.WebhookEndpoint{AccountID: a.ID, Mode: models.ModeTest, URL: "https://x.example.com/", EnabledEvents: []models.EventType{models.EventAll}, Secret: "s", CreatedAt: t0})
		assert.Equal(t, models.CodeWebhookEndpointLimit, models.CodeOf(err), "%v", err)
		// Deleting one makes room; a deleted endpoint is gone for the API.
		deleted, err := st.DeleteWebhookEndpoint(ctx, a.ID, models.ModeTest, ea.ID, t0)
		require.NoError(t, err)
		require.NotNil(t, deleted.DeletedAt)
		_, err = st.WebhookEndpoint(ctx, a.ID, models.ModeTest, ea.ID)
		assert.ErrorIs(t, err, models.ErrWebhookEndpointNotFound)
		_, err = st.DeleteWebhookEndpoint(ctx, a.ID, models.ModeTest, ea.ID, t0)
		assert.ErrorIs(t, err, models.ErrWebhookEndpointNotFound, "deleted twice")
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		list, err = st.WebhookEndpoints(ctx, a.ID, models.ModeTest)
		require.NoError(t, err)
		assert.Len(t, list, models.MaxWebhookEndpoints)

		// Operators see every endpoint, deleted ones included, by account.
		all, err := st.AllWebhookEndpoints(ctx, "a")
		require.NoError(t, err)
		assert.Len(t, all, models.MaxWebhookEndpoints+2) // + the deleted one and the live one
		ids := map[string]bool{}
		for _, e := range all {
			assert.Equal(t, "a", e.AccountName)
			assert.True(t, models.ValidID("we", e.ID), e.ID)
			assert.Equal(t, a.ID, e.AccountID)
			assert.NotEmpty(t, e.URL)
			assert.NotEmpty(t, e.EnabledEvents)
			assert.Empty(t, e.Secret)
			ids[e.ID] = true
		}
		assert.True(t, ids[ea.ID], "the deleted one is listed")
		assert.True(t, ids[live.ID], "and the live one")
		for _, e := range all {
			if e.ID == ea.ID {
				assert.NotNil(t, e.DeletedAt)
			}
		}
		everyone, err := st.AllWebhookEndpoints(ctx, "")
		require.NoError(t, err)
		assert.Len(t, everyone, models.MaxWebhookEndpoints+3, "with b's")
	})
}

func TestWebhookSecretsAreSealed(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(d, func(t *testing.T) {
			ctx := context.Background()
			dsn := sqlstoretest.DSN(t, d)
			key := bytes.Repeat([]byte{7}, 32)
			keyed, plain := openMigrated(t, dsn, key), openMigrated(t, dsn, nil)
			assert.Error(t, keyed.SetSecretKey([]byte("short")), "a key must be 32 bytes")
			a := newAccount(t, keyed, "a")

			sealed := newEndpoint(t, keyed, a.ID, models.ModeTest, models.EventAll)
			other := newEndpoint(t, keyed, a.ID, models.ModeTest, models.EventAll)
			unsealed := newEndpoint(t, plain, a.ID, models.ModeTest, models.EventAll)
			stored, err := keyed.StoredWebhookSecret(ctx, sealed.ID)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(stored, "v1:"), stored)
			assert.NotContains(t, stored, strings.Repeat("s", 8), "the database holds no trace of the secret")
			stored2, err := keyed.StoredWebhookSecret(ctx, other.ID)
			require.NoError(t, err)
			assert.NotEqual(t, stored, stored2, "a fresh nonce per secret")

			// An event to deliver, so WebhookDelivery can be asked.
			keyed.SetEventRenderer(&fakeRenderer{})
			seedCart(t, keyed, a.ID, "crt_sealed")
			o, _, err := keyed.CreateOrder(ctx, orderRequest(a.ID, "crt_sealed", "", "h"))
			require.NoError(t, err)
			ev := eventsOf(t, keyed, o.ID)[models.EventOrderCreated]
			require.NotEmpty(t, ev.ID)

			_, e, err := keyed.WebhookDelivery(ctx, ev.ID, sealed.ID, time.Now())
			require.NoError(t, err)
			assert.Equal(t, "whsec_"+strings.Repeat("s", 32), e.Secret)
			_, e, err = keyed.WebhookDelivery(ctx, ev.ID, unsealed.ID, time.Now())
			require.NoError(t, err, "a secret stored before the key was set still opens")
			assert.Equal(t, "whsec_"+strings.Repeat("s", 32), e.Secret)

			_, _, err = plain.WebhookDelivery(ctx, ev.ID, sealed.ID, time.Now())
			assert.ErrorIs(t, err, sqlstore.ErrSecretKeyNeeded, "without the key")
			wrong := openMigrated(t, dsn, bytes.Repeat([]byte{8}, 32))
			_, _, err = wrong.WebhookDelivery(ctx, ev.ID, sealed.ID, time.Now())
			assert.ErrorIs(t, err, sqlstore.ErrSecretKeyNeeded, "with another key")
			// A sealed secret copied to another endpoint's row does not open.
			require.NoError(t, keyed.SetStoredWebhookSecret(ctx, other.ID, stored))
			_, _, err = keyed.WebhookDelivery(ctx, ev.ID, other.ID, time.Now())
			assert.ErrorIs(t, err, sqlstore.ErrSecretKeyNeeded)
		})
	}
}

func TestOrderFactsRecordEventsOnceForSubscribers(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		d := decimal.RequireFromString
		r := &fakeRenderer{}
		st.SetEventRenderer(r)
		a := newAccount(t, st, "a")
		b := newAccount(t, st, "b")

		// No endpoint: no events, and nothing rendered.
		quiet := newOrder(t, st, b.ID, "crt_quiet", nil)
		require.NoError(t, st.RecordTransition(ctx, quiet.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: t0.Add(2 * time.Minute), AmountReceived: d("12.50")}, time.Now()))
		assert.Empty(t, eventsOf(t, st, quiet.ID))
		// A live endpoint of the same account does not hear test orders,
		// nor does a disabled one.
		newEndpoint(t, st, a.ID, models.ModeLive, models.EventAll)
		off := newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		ok, err := st.DisableWebhookEndpoint(ctx, off.ID, t0, t0, "test")
		require.NoError(t, err)
		require.True(t, ok)
		unheard := newOrder(t, st, a.ID, "crt_unheard", nil)
		assert.Empty(t, eventsOf(t, st, unheard.ID))
		// Every fact is still kept for the events API: those nobody hears
		// are stored dispatched, with nothing to deliver.
		for _, o := range []struct{ account, order string }{{b.ID, quiet.ID}, {a.ID, unheard.ID}} {
			kept := listedEvents(t, st, models.EventListQuery{AccountID: o.account, Mode: models.ModeTest, OrderID: o.order, Limit: 10})
			assert.Equal(t, models.EventOrderCreated, kept[len(kept)-1].Type, "oldest last")
			for _, ev := range kept {
				assert.NotNil(t, ev.DispatchedAt, "%s is not in the outbox", ev.Type)
			}
		}

		// Subscribed to some types: those are recorded, once each.
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderCreated, models.EventOrderPaid, models.EventPaymentReceived, models.EventPaymentPartial, models.EventPaymentOverpaid)
		seedCart(t, st, a.ID, "crt_heard")
		req := orderRequest(a.ID, "crt_heard", "", "h")
		o, created, err := st.CreateOrder(ctx, req)
		require.NoError(t, err)
		require.True(t, created)
		_, created, err = st.CreateOrder(ctx, req)
		require.NoError(t, err)
		require.False(t, created, "a replay")
		evs := eventsOf(t, st, o.ID)
		require.Len(t, evs, 1)
		ev := evs[models.EventOrderCreated]
		assert.Equal(t, models.EventID(models.EventOrderCreated, o.ID), ev.ID)
		assert.Equal(t, a.ID, ev.AccountID)
		assert.Equal(t, models.ModeTest, ev.Mode)
		assert.Equal(t, o.ID, ev.OrderID)
		assert.Equal(t, o.CreatedAt, ev.CreatedAt)
		assert.Equal(t, "created", payload(t, ev)["status"])

		// A partial payment: payment.received once (the activity retried),
		// payment.partial with the amount; a status write with the same
		// amount is no new fact.
		pay := models.Payment{ID: "sandbox_p1", Mode: models.ModeTest, Asset: "USDC", Amount: d("5"), Memo: o.Number, ReceivedAt: t0.Add(90 * time.Second)}
		for range 2 {
			require.NoError(t, st.RecordPayment(ctx, o.ID, pay, time.Now()))
		}
		partial := models.Transition{Status: models.OrderCreated, PaymentStatus: models.PaymentPartial, At: t0.Add(time.Minute), AmountReceived: d("5")}
		for range 2 {
			require.NoError(t, st.RecordTransition(ctx, o.ID, partial, time.Now()))
		}
		evs = eventsOf(t, st, o.ID)
		require.Len(t, evs, 3)
		recv := evs[models.EventPaymentReceived]
		assert.Equal(t, models.EventID(models.EventPaymentReceived, "sandbox_p1"), recv.ID)
		assert.Equal(t, "sandbox_p1", recv.PaymentID)
		assert.Equal(t, pay.ReceivedAt, recv.CreatedAt)
		assert.Equal(t, "credited", payload(t, recv)["outcome"])
		part := evs[models.EventPaymentPartial]
		assert.Equal(t, "partial", payload(t, part)["payment_status"], "the body shows the order after the write")
		assert.Equal(t, "5", payload(t, part)["amount_received"])

		// Paid, overpaid, in one write: both facts.
		paid := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentOverpaid, At: t0.Add(3 * time.Minute), AmountReceived: d("20")}
		for range 2 {
			require.NoError(t, st.RecordTransition(ctx, o.ID, paid, time.Now()))
		}
		evs = eventsOf(t, st, o.ID)
		require.Len(t, evs, 5)
		assert.Equal(t, "paid", payload(t, evs[models.EventOrderPaid])["status"])
		assert.Equal(t, t0.Add(3*time.Minute), evs[models.EventOrderPaid].CreatedAt, "an order event's time is the step's")
		assert.Equal(t, "overpaid", payload(t, evs[models.EventPaymentOverpaid])["payment_status"])
		// Not subscribed: ordered.
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderOrdered, PaymentStatus: models.PaymentOverpaid, At: t0.Add(4 * time.Minute), AmountReceived: d("20")}, time.Now()))
		assert.Len(t, eventsOf(t, st, o.ID), 5)

		// Dispatched events leave the outbox.
		for _, ev := range evs {
			require.NoError(t, st.MarkWebhookEventDispatched(ctx, ev.ID, t0))
		}
		assert.Empty(t, eventsOf(t, st, o.ID))
		ev, err = st.WebhookEvent(ctx, evs[models.EventOrderPaid].ID)
		require.NoError(t, err)
		require.NotNil(t, ev.DispatchedAt)
		_, err = st.WebhookEventForAccount(ctx, b.ID, models.ModeTest, ev.ID)
		assert.ErrorIs(t, err, models.ErrEventNotFound, "another account's event")
		_, err = st.WebhookEventForAccount(ctx, a.ID, models.ModeLive, ev.ID)
		assert.ErrorIs(t, err, models.ErrEventNotFound, "another mode's event")
		_, err = st.WebhookEventForAccount(ctx, a.ID, models.ModeTest, ev.ID)
		assert.NoError(t, err)
	})
}

func TestLatePaymentAndTheSweep(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		st.SetEventRenderer(&fakeRenderer{})
		a := newAccount(t, st, "a")
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventPaymentLate, models.EventOrderCancelled)
		o := newOrder(t, st, a.ID, "crt_late", nil)
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderCancelled, PaymentStatus: models.PaymentExpired, At: t0.Add(31 * time.Minute), AmountReceived: decimal.Zero}, t0.Add(31*time.Minute)))
		p := models.Payment{ID: "sandbox_late", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("12.50"), Memo: o.Number, ReceivedAt: t0.Add(40 * time.Minute)}
		require.NoError(t, st.SaveMatch(ctx, p, o.ID, time.Now()))
		for range 2 {
			if late, err := st.MarkPaymentLate(ctx, p.ID, t0.Add(41*time.Minute)); assert.NoError(t, err) {
				assert.True(t, late, "marked late")
			}
		}
		evs := eventsOf(t, st, o.ID)
		require.Len(t, evs, 2)
		late := evs[models.EventPaymentLate]
		assert.Equal(t, "late", payload(t, late)["outcome"])
		assert.Equal(t, "refund_due", payload(t, late)["payment_status"])
		assert.Equal(t, t0.Add(41*time.Minute), late.CreatedAt)

		// The sweep sees events recorded (at the writers' times) before
		// its cutoff only.
		pending, err := st.PendingWebhookEvents(ctx, t0.Add(31*time.Minute), 10)
		require.NoError(t, err)
		assert.Empty(t, pending, "younger events may be being dispatched")
		pending, err = st.PendingWebhookEvents(ctx, t0.Add(42*time.Minute), 10)
		require.NoError(t, err)
		require.Len(t, pending, 2)
		pending, err = st.PendingWebhookEvents(ctx, t0.Add(42*time.Minute), 1)
		require.NoError(t, err)
		require.Len(t, pending, 1)
		require.NoError(t, st.MarkWebhookEventDispatched(ctx, pending[0].ID, time.Now()))
		pending, err = st.PendingWebhookEvents(ctx, time.Now().Add(time.Minute), 10)
		require.NoError(t, err)
		assert.Len(t, pending, 1)
	})
}

func TestEventsNeedARenderer(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		seedCart(t, st, a.ID, "crt_r")
		o, _, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_r", "", "h"))
		require.NoError(t, err)
		st.SetEventRenderer(nil)
		err = st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: t0, AmountReceived: decimal.RequireFromString("12.50")}, time.Now())
		require.Error(t, err, "a fact is not recorded without its event, subscribed to or not")
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, models.OrderCreated, got.Status, "the fact and its event commit together, or neither")
	})
}

func TestWebhookTargetsAndAttempts(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		st.SetEventRenderer(&fakeRenderer{})
		a := newAccount(t, st, "a")
		all := newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		paidOnly := newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderPaid)
		createdOnly := newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderCreated)
		gone := newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		o := newOrder(t, st, a.ID, "crt_t", nil)
		ev := eventsOf(t, st, o.ID)[models.EventOrderCreated]
		// Created after the event: does not receive it.
		_, err := st.CreateWebhookEndpoint(ctx, models.WebhookEndpoint{AccountID: a.ID, Mode: models.ModeTest, URL: "https://late.example.com/", EnabledEvents: []models.EventType{models.EventAll}, Secret: "s", CreatedAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		_, err = st.DeleteWebhookEndpoint(ctx, a.ID, models.ModeTest, gone.ID, t0)
		require.NoError(t, err)

		targets, err := st.WebhookTargets(ctx, ev.ID)
		require.NoError(t, err)
		var ids []string
		for _, e := range targets {
			ids = append(ids, e.ID)
			assert.Empty(t, e.Secret)
		}
		want := []string{all.ID, createdOnly.ID}
		if want[0] > want[1] {
			want[0], want[1] = want[1], want[0]
		}
		assert.Equal(t, want, ids, "subscribed, active, older than the event; by id")
		_, err = st.WebhookTargets(ctx, "evt_000000000000000000000000")
		assert.ErrorIs(t, err, models.ErrEventNotFound)

		_, _, err = st.WebhookDelivery(ctx, ev.ID, gone.ID, time.Now())
		assert.ErrorIs(t, err, models.ErrWebhookEndpointNotFound, "deleted")
		_, _, err = st.WebhookDelivery(ctx, ev.ID, "we_000000000000000000000000", time.Now())
		assert.ErrorIs(t, err, models.ErrWebhookEndpointNotFound)
		_, _, err = st.WebhookDelivery(ctx, "evt_000000000000000000000000", all.ID, time.Now())
		assert.ErrorIs(t, err, models.ErrEventNotFound)
		got, e, err := st.WebhookDelivery(ctx, ev.ID, all.ID, time.Now())
		require.NoError(t, err)
		assert.Equal(t, ev.Payload, got.Payload)
		assert.Equal(t, all.URL, e.URL)

		// Attempts: stored once per delivery and number; listed newest first.
		dlv := models.DeliveryID("webhook-event-"+ev.ID, all.ID)
		at := t0.Add(time.Hour)
		next := at.Add(30 * time.Second)
		fail := models.WebhookAttempt{DeliveryID: dlv, EventID: ev.ID, EndpointID: all.ID, Attempt: 1, At: at, ResponseStatus: 500, Error: "HTTP 500", Duration: 120 * time.Millisecond, NextRetryAt: &next}
		for range 2 {
			require.NoError(t, st.RecordWebhookAttempt(ctx, fail, "webhook-event-"+ev.ID))
		}
		// Failing since before the attempt, no success: disabled.
		okAt := at.Add(time.Minute)
		require.NoError(t, st.RecordWebhookAttempt(ctx, models.WebhookAttempt{DeliveryID: dlv, EventID: ev.ID, EndpointID: all.ID, Attempt: 2, At: okAt, Succeeded: true, ResponseStatus: 204, Duration: 80 * time.Millisecond}, "webhook-event-"+ev.ID))
		list, err := st.WebhookAttempts(ctx, all.ID, "", 10)
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Equal(t, 2, list[0].Attempt, "newest first")
		assert.True(t, list[0].Succeeded)
		assert.Equal(t, models.EventOrderCreated, list[0].EventType)
		assert.Equal(t, fail.Error, list[1].Error)
		assert.Equal(t, 500, list[1].ResponseStatus)
		assert.Equal(t, 120*time.Millisecond, list[1].Duration)
		require.NotNil(t, list[1].NextRetryAt)
		assert.Equal(t, next, *list[1].NextRetryAt)
		assert.Nil(t, list[0].NextRetryAt)
		list, err = st.WebhookAttempts(ctx, all.ID, "", 1)
		require.NoError(t, err)
		assert.Len(t, list, 1, "limit")
		list, err = st.WebhookAttempts(ctx, all.ID, "evt_000000000000000000000000", 10)
		require.NoError(t, err)
		assert.Empty(t, list, "another event's")
		list, err = st.WebhookAttempts(ctx, paidOnly.ID, "", 10)
		require.NoError(t, err)
		assert.Empty(t, list, "another endpoint's")

		// Disabling: not when it answered since the failures began.
		disabled, err := st.DisableWebhookEndpoint(ctx, all.ID, at, at.Add(72*time.Hour), "failing")
		require.NoError(t, err)
		assert.False(t, disabled, "a success after failingSince keeps it enabled")
		reason := fmt.Sprintf("Deliveries failed for 72h since %s; last error: HTTP 500", at.Format(time.RFC3339))
		disabled, err = st.DisableWebhookEndpoint(ctx, all.ID, okAt.Add(time.Second), okAt.Add(73*time.Hour), reason)
		require.NoError(t, err)
		assert.True(t, disabled)
		disabled, err = st.DisableWebhookEndpoint(ctx, all.ID, okAt.Add(time.Second), okAt.Add(74*time.Hour), "again")
		require.NoError(t, err)
		assert.False(t, disabled, "already disabled")
		e, err = st.WebhookEndpoint(ctx, a.ID, models.ModeTest, all.ID)
		require.NoError(t, err)
		require.NotNil(t, e.DisabledAt)
		assert.Equal(t, reason, e.DisabledReason)
		require.NotNil(t, e.LastSuccessAt)
		assert.Equal(t, okAt, *e.LastSuccessAt)
		_, _, err = st.WebhookDelivery(ctx, ev.ID, all.ID, time.Now())
		assert.Equal(t, models.CodeWebhookEndpointDisabled, models.CodeOf(err))
		targets, err = st.WebhookTargets(ctx, ev.ID)
		require.NoError(t, err)
		require.Len(t, targets, 1)
		assert.Equal(t, createdOnly.ID, targets[0].ID)
	})
}
