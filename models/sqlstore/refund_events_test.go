package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// refundEventsOf returns an order's undispatched refund events with their
// bodies, in the order they were recorded.
func refundEventsOf(t *testing.T, st *sqlstore.Store, orderID string) []models.Event {
	t.Helper()
	ctx := context.Background()
	pending, err := st.PendingOrderWebhookEvents(ctx, orderID)
	require.NoError(t, err)
	var out []models.Event
	for _, p := range pending {
		if !strings.HasPrefix(string(p.Type), "refund.") {
			continue
		}
		ev, err := st.WebhookEvent(ctx, p.ID)
		require.NoError(t, err)
		out = append(out, ev)
	}
	return out
}

// eventTypes lists the types of evs, in order.
func eventTypes(evs []models.Event) []models.EventType {
	out := make([]models.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// allEvents counts every event recorded so far.
func allEvents(t *testing.T, st *sqlstore.Store) int {
	t.Helper()
	evs, err := st.PendingWebhookEvents(context.Background(), time.Now().Add(time.Hour), 1000)
	require.NoError(t, err)
	return len(evs)
}

// A refund's facts (created, sent, failed) record their events in the
// transaction that writes them, only for an account subscribed to them,
// once per fact: a retried write records nothing new, and each failure is
// its own event.
func TestRefundFactsRecordEventsOnceForSubscribers(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		st.SetEventRenderer(&fakeRenderer{})
		a := newAccount(t, st, "a")
		created := t0.Add(time.Hour)
		at := func(m int) time.Time { return t0.Add(2*time.Hour + time.Duration(m)*time.Minute) }
		move := func(id string, m int, mv func(models.Refund, time.Time) (models.Refund, error)) models.Refund {
			t.Helper()
			r, err := st.UpdateRefund(ctx, id, at(m), func(r models.Refund) (models.Refund, error) { return mv(r, at(m)) })
			require.NoError(t, err)
			return r
		}
		approve := func(r models.Refund, now time.Time) (models.Refund, error) { return models.ApproveRefund(r, now) }
		fail := func(reason string) func(models.Refund, time.Time) (models.Refund, error) {
			return func(r models.Refund, now time.Time) (models.Refund, error) { return models.FailRefund(r, reason, now) }
		}
		sent := func(r models.Refund, now time.Time) (models.Refund, error) {
			return models.MarkRefundSent(r, txOf(r.ID), now)
		}

		// Subscribed to other types only: the refund's facts record nothing.
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderFailed)
		newEndpoint(t, st, a.ID, models.ModeLive, models.EventAll)
		unheard := failedOrder(t, st, a.ID, "crt_unheard", &toAccount)
		rs, err := st.CreateOwedRefunds(ctx, unheard.ID, created)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		move(rs[0].ID, 1, approve)
		move(rs[0].ID, 2, fail("no trustline"))
		move(rs[0].ID, 3, func(r models.Refund, _ time.Time) (models.Refund, error) {
			return models.SetRefundDestination(r, toSender)
		})
		move(rs[0].ID, 4, approve)
		move(rs[0].ID, 5, sent)
		assert.Empty(t, eventTypes(refundEventsOf(t, st, unheard.ID)), "nobody subscribes to refund events")

		// Subscribed.
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventRefundCreated, models.EventRefundSent, models.EventRefundFailed)
		o := failedOrder(t, st, a.ID, "crt_heard", &toAccount)
		require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment("p-xlm", o.Number, "XLM", "40"), time.Now()))

		// refund.created: one per refund created, however often asked.
		rs, err = st.CreateOwedRefunds(ctx, o.ID, created)
		require.NoError(t, err)
		require.Len(t, rs, 2)
		_, err = st.CreateOwedRefunds(ctx, o.ID, created.Add(time.Minute))
		require.NoError(t, err)
		own, xlm := refundByKey(t, rs, "order:"+o.ID+":1"), refundByKey(t, rs, "payment:p-xlm")
		evs := refundEventsOf(t, st, o.ID)
		require.Equal(t, []models.EventType{models.EventRefundCreated, models.EventRefundCreated}, eventTypes(evs))
		byRefund := map[string]models.Event{}
		for _, ev := range evs {
			byRefund[payload(t, ev)["refund_id"].(string)] = ev
		}
		require.Len(t, byRefund, 2, "one event for each refund")
		ev := byRefund[own.ID]
		assert.Equal(t, models.EventID(models.EventRefundCreated, own.ID), ev.ID, "keyed by the refund")
		assert.Equal(t, a.ID, ev.AccountID)
		assert.Equal(t, models.ModeTest, ev.Mode)
		assert.Equal(t, o.ID, ev.OrderID)
		assert.Empty(t, ev.PaymentID)
		assert.Equal(t, created, ev.CreatedAt, "when the refund was created")
		body := payload(t, ev)
		assert.Equal(t, "awaiting_approval", body["refund_status"], "the refund as stored, with the order's destination")
		assert.Equal(t, o.ID, body["order_id"])
		assert.Equal(t, "refund_due", body["payment_status"])
		assert.Equal(t, models.EventID(models.EventRefundCreated, xlm.ID), byRefund[xlm.ID].ID)

		// Approval is no event; a failure is.
		move(own.ID, 1, approve)
		assert.Len(t, eventTypes(refundEventsOf(t, st, o.ID)), 2, "approved: no event")
		move(own.ID, 2, fail("no trustline"))
		// A retried write of the failure changes nothing and records nothing.
		move(own.ID, 3, func(r models.Refund, now time.Time) (models.Refund, error) {
			if r.Status == models.RefundFailed {
				return r, nil
			}
			return models.FailRefund(r, "no trustline", now)
		})
		evs = refundEventsOf(t, st, o.ID)
		require.Len(t, eventTypes(evs), 3)
		failed1 := evs[2]
		assert.Equal(t, models.EventRefundFailed, failed1.Type)
		assert.Equal(t, models.EventID(models.EventRefundFailed, own.ID+"/"+at(2).Format(time.RFC3339Nano)), failed1.ID,
			"keyed by the refund and the failure's time")
		assert.Equal(t, at(2), failed1.CreatedAt)
		assert.Equal(t, "failed", payload(t, failed1)["refund_status"])
		assert.Equal(t, "no trustline", payload(t, failed1)["failure_reason"])

		// A new destination, a second failure: a second event.
		move(own.ID, 4, func(r models.Refund, _ time.Time) (models.Refund, error) {
			return models.SetRefundDestination(r, toSender)
		})
		move(own.ID, 5, approve)
		move(own.ID, 6, fail("no account"))
		evs = refundEventsOf(t, st, o.ID)
		require.Len(t, eventTypes(evs), 4)
		failed2 := evs[3]
		assert.Equal(t, models.EventRefundFailed, failed2.Type)
		assert.NotEqual(t, failed1.ID, failed2.ID, "each failure is its own event")
		assert.Equal(t, at(6), failed2.CreatedAt)
		assert.Equal(t, "no account", payload(t, failed2)["failure_reason"])
		assert.Equal(t, "no trustline", payload(t, failed1)["failure_reason"], "the first body stays a snapshot")

		// Cancelling is no event; sent is, once, after the order's payment
		// status has followed it.
		move(xlm.ID, 7, func(r models.Refund, now time.Time) (models.Refund, error) { return models.CancelRefund(r, now) })
		move(own.ID, 8, approve)
		move(own.ID, 9, sent)
		move(own.ID, 10, sent) // a retried write
		evs = refundEventsOf(t, st, o.ID)
		require.Equal(t, []models.EventType{models.EventRefundCreated, models.EventRefundCreated, models.EventRefundFailed,
			models.EventRefundFailed, models.EventRefundSent}, eventTypes(evs))
		sentEv := evs[4]
		assert.Equal(t, models.EventID(models.EventRefundSent, own.ID), sentEv.ID)
		assert.Equal(t, at(9), sentEv.CreatedAt)
		body = payload(t, sentEv)
		assert.Equal(t, "sent", body["refund_status"])
		assert.Equal(t, txOf(own.ID), body["transaction_hash"])
		assert.Equal(t, "refunded", body["payment_status"], "the order as the write left it")

		// An operator marking sent from awaiting its destination: sent too.
		p := failedOrder(t, st, a.ID, "crt_manual", nil)
		rs, err = st.CreateOwedRefunds(ctx, p.ID, created)
		require.NoError(t, err)
		move(rs[0].ID, 1, sent)
		assert.Equal(t, []models.EventType{models.EventRefundCreated, models.EventRefundSent}, eventTypes(refundEventsOf(t, st, p.ID)))

		// A refund created directly for an order (CreateRefund) records
		// its refund.created once; an unmatched payment's refund, of no
		// account, records nothing whatever it does.
		key := "payment:p-direct"
		direct := models.Refund{
			ID: models.RefundID(key), Key: key, OrderID: p.ID, AccountID: a.ID, Mode: models.ModeTest, PaymentIDs: []string{"p-direct"},
			Reason: models.RefundLatePayment, Amount: decimal.RequireFromString("1"), Asset: "USDC",
			Status: models.RefundAwaitingDestination, CreatedAt: at(2),
		}
		for range 2 {
			_, _, err = st.CreateRefund(ctx, direct)
			require.NoError(t, err)
		}
		assert.Equal(t, []models.EventType{models.EventRefundCreated, models.EventRefundSent, models.EventRefundCreated},
			eventTypes(refundEventsOf(t, st, p.ID)))
		before := allEvents(t, st)
		require.NoError(t, st.SaveMatch(ctx, livePayment("p-unmatched", "nothing", "XLM", "3"), "", time.Now()))
		key = "payment:p-unmatched"
		unmatched, isNew, err := st.CreateRefund(ctx, models.Refund{
			Key: key, Mode: models.ModeTest, PaymentIDs: []string{"p-unmatched"}, Reason: models.RefundUnmatchedPayment,
			Amount: decimal.RequireFromString("3"), Asset: "USDC", Status: models.RefundAwaitingDestination, CreatedAt: created,
		})
		require.NoError(t, err)
		require.True(t, isNew)
		move(unmatched.ID, 1, func(r models.Refund, _ time.Time) (models.Refund, error) {
			return models.SetRefundDestination(r, toAccount)
		})
		move(unmatched.ID, 2, approve)
		move(unmatched.ID, 3, fail("no trustline"))
		move(unmatched.ID, 4, approve)
		move(unmatched.ID, 5, sent)
		assert.Equal(t, before, allEvents(t, st), "an unmatched payment's refund has no event")
	})
}

// A refund's move and its event commit together, or neither: without a
// renderer a subscribed fact cannot be recorded, and the move is not
// written either.
func TestRefundMoveAndItsEventCommitTogether(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		st.SetEventRenderer(&fakeRenderer{})
		a := newAccount(t, st, "a")
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		o := failedOrder(t, st, a.ID, "crt_tx", &toAccount)
		r := owedRefund(t, st, o.ID, t0.Add(time.Hour))
		now := t0.Add(2 * time.Hour)
		_, err := st.UpdateRefund(ctx, r.ID, now, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) })
		require.NoError(t, err)

		st.SetEventRenderer(nil)
		_, err = st.UpdateRefund(ctx, r.ID, now, func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, txOf(r.ID), now) })
		require.Error(t, err, "a subscribed fact is not written without its event")
		got, err := st.Refund(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, models.RefundSending, got.Status, "the move rolled back with its event")
		assert.Equal(t, models.PaymentRefundDue, paymentStatusOf(t, st, o.ID))
	})
}
