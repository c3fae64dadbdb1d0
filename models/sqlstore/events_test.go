package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// listedEvents lists a page of events once every event written so far
// can be listed: on Postgres an event is listed once every transaction
// older than its own has ended, and the tests of other packages share the
// server, so their transactions hold the list back for a while.
func listedEvents(t *testing.T, st *sqlstore.Store, q models.EventListQuery) []models.Event {
	t.Helper()
	if st.Dialect() == sqlstore.DialectPostgres {
		db, err := st.SQLDB()
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var listable bool
			require.NoError(c, db.QueryRow(`SELECT coalesce(pg_snapshot_xmin(pg_current_snapshot()) > (SELECT max(txid) FROM webhook_events), true)`).Scan(&listable))
			assert.True(c, listable, "an older transaction is still open")
		}, time.Minute, 20*time.Millisecond)
	}
	evs, _, err := st.ListEvents(context.Background(), q, time.Now())
	require.NoError(t, err)
	return evs
}

// eventsFixture writes n orders of account a, each created then paid, in
// that order: 2n events, and one order of account b.
func eventsFixture(t *testing.T, st *sqlstore.Store, n int) (a, b models.Account, written []string) {
	t.Helper()
	ctx := context.Background()
	var err error
	a, err = st.EnsureAccount(ctx, "a", t0)
	require.NoError(t, err)
	b, err = st.EnsureAccount(ctx, "b", t0)
	require.NoError(t, err)
	for i := range n {
		cart := fmt.Sprintf("crt_ev%d", i)
		seedCart(t, st, a.ID, cart)
		o, _, err := st.CreateOrder(ctx, orderRequest(a.ID, cart, "", "h"))
		require.NoError(t, err)
		paidAt := t0.Add(time.Duration(i+2) * time.Minute)
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: paidAt, AmountReceived: decimal.RequireFromString("12.50")}, paidAt))
		written = append(written, models.EventID(models.EventOrderCreated, o.ID), models.EventID(models.EventOrderPaid, o.ID))
	}
	seedCart(t, st, b.ID, "crt_evb")
	_, _, err = st.CreateOrder(ctx, orderRequest(b.ID, "crt_evb", "", "h"))
	require.NoError(t, err)
	slices.Reverse(written) // newest first, as listed
	return a, b, written
}

func ids(evs []models.Event) []string {
	return idsOf(evs, func(ev models.Event) string { return ev.ID })
}

// idsOf is the id of each of xs, in order.
func idsOf[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

// The list pages through an account's events newest first in the order
// they were written, forwards (starting_after) and back towards the
// newest (ending_before), with its filters, and never shows another
// account's or mode's events.
func TestListEventsPagesInWriteOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, b, written := eventsFixture(t, st, 5)
		q := models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 4}
		listedEvents(t, st, q) // every write committed and listed
		list := func(q models.EventListQuery) ([]string, bool) {
			t.Helper()
			evs, more, err := st.ListEvents(ctx, q, time.Now())
			require.NoError(t, err)
			for _, ev := range evs {
				assert.Equal(t, a.ID, ev.AccountID)
				assert.NotEmpty(t, ev.Payload, "listed with its body")
			}
			return ids(evs), more
		}

		var all []string
		page, more := list(q)
		for {
			all = append(all, page...)
			if !more {
				break
			}
			q.StartingAfter = page[len(page)-1]
			page, more = list(q)
		}
		assert.Equal(t, written, all, "newest first, every event once")

		// Back towards the newest: the events just newer than the cursor,
		// nearest first kept, shown newest first.
		page, more = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 3, EndingBefore: written[6]})
		assert.Equal(t, written[3:6], page)
		assert.True(t, more)
		page, more = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 3, EndingBefore: written[3]})
		assert.Equal(t, written[0:3], page)
		assert.False(t, more)
		page, more = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 3, EndingBefore: written[0]})
		assert.Empty(t, page, "nothing newer than the newest")
		assert.False(t, more)

		// Filters.
		page, _ = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 100, Types: []models.EventType{models.EventOrderPaid}})
		assert.Equal(t, []string{written[0], written[2], written[4], written[6], written[8]}, page)
		page, _ = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 100, Types: []models.EventType{models.EventOrderPaid, models.EventOrderCreated}})
		assert.Equal(t, written, page)
		page, _ = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 100, OrderID: "ord_crt_ev2"})
		assert.Equal(t, written[4:6], page)
		gte, lte := t0.Add(3*time.Minute), t0.Add(4*time.Minute)
		page, _ = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 100, Types: []models.EventType{models.EventOrderPaid}, CreatedGTE: &gte, CreatedLTE: &lte})
		assert.Equal(t, []string{written[4], written[6]}, page, "paid at t0+4m and t0+3m")

		// Another account's or mode's events are not there, nor are their
		// ids cursors or readable.
		page, _ = list(models.EventListQuery{AccountID: a.ID, Mode: models.ModeLive, Limit: 100})
		assert.Empty(t, page)
		bs := listedEvents(t, st, models.EventListQuery{AccountID: b.ID, Mode: models.ModeTest, Limit: 100})
		require.Len(t, bs, 1)
		_, _, err := st.ListEvents(ctx, models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 4, StartingAfter: bs[0].ID}, time.Now())
		assert.ErrorIs(t, err, models.ErrEventNotFound)
		_, _, err = st.ListEvents(ctx, models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 4, EndingBefore: bs[0].ID}, time.Now())
		assert.ErrorIs(t, err, models.ErrEventNotFound)
		_, err = st.EventForAccount(ctx, a.ID, models.ModeTest, bs[0].ID, time.Now())
		assert.ErrorIs(t, err, models.ErrEventNotFound)
		_, err = st.EventForAccount(ctx, b.ID, models.ModeLive, bs[0].ID, time.Now())
		assert.ErrorIs(t, err, models.ErrEventNotFound)
		got, err := st.EventForAccount(ctx, b.ID, models.ModeTest, bs[0].ID, time.Now())
		require.NoError(t, err)
		assert.Equal(t, bs[0].Payload, got.Payload)
	})
}

// On Postgres an event is listed only once no event can still commit
// before it: while a transaction that wrote an event is open, the events
// committed after it started are held back, and then listed after it.
// A client that pages from the newest event it saw never skips one.
func TestListEventsHoldsBackWhatAnOlderTransactionMayCommit(t *testing.T) {
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.DialectPostgres) {
		t.Fatalf("%s is not set: this test needs Postgres", sqlstoretest.EnvPostgresURL)
	}
	st := sqlstoretest.Open(t, sqlstore.DialectPostgres)
	ctx := context.Background()
	a, _, written := eventsFixture(t, st, 1)
	q := models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 10}
	require.Len(t, listedEvents(t, st, q), len(written))

	db, err := st.SQLDB()
	require.NoError(t, err)
	slow, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer slow.Rollback()
	_, err = slow.ExecContext(ctx, `INSERT INTO webhook_events (id, account_id, mode, type, created_at, recorded_at, payload, dispatched_at)
		VALUES ('evt_slowslowslowslowslowslow', $1, 'test', 'order.created', now(), now(), '{}', now())`, a.ID)
	require.NoError(t, err)

	seedCart(t, st, a.ID, "crt_fast")
	fast, _, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_fast", "", "h"))
	require.NoError(t, err)
	fastID := models.EventID(models.EventOrderCreated, fast.ID)
	evs, _, err := st.ListEvents(ctx, q, time.Now())
	require.NoError(t, err)
	assert.Equal(t, written, ids(evs), "the fast event waits for the slow transaction")
	_, err = st.EventForAccount(ctx, a.ID, models.ModeTest, fastID, time.Now())
	assert.NoError(t, err, "readable by id once committed, as its webhook may have named it")
	after := q
	after.EndingBefore = fastID
	evs, more, err := st.ListEvents(ctx, after, time.Now())
	require.NoError(t, err)
	assert.Empty(t, evs, "nothing is listed after an event not listed yet")
	assert.False(t, more)

	require.NoError(t, slow.Commit())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		evs, _, err := st.ListEvents(ctx, q, time.Now())
		require.NoError(c, err)
		assert.Equal(c, append([]string{fastID, "evt_slowslowslowslowslowslow"}, written...), ids(evs))
	}, 30*time.Second, 20*time.Millisecond)
}

// A listed event's body is what a delivery at the same time sends, byte
// for byte, claim links included.
func TestListedEventIsTheDeliveredBody(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		st.SetEventRenderer(refRenderer{})
		a, err := st.EnsureAccount(ctx, "a", t0)
		require.NoError(t, err)
		ep := newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		now := t0.Add(time.Hour)
		o := failedOrder(t, st, a.ID, "crt_body", nil)
		_, err = st.CreateOwedRefunds(ctx, o.ID, now)
		require.NoError(t, err)
		evs := listedEvents(t, st, models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 100, Types: []models.EventType{models.EventRefundCreated}})
		require.Len(t, evs, 1)
		listed, _, err := st.ListEvents(ctx, models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 100, Types: []models.EventType{models.EventRefundCreated}}, now)
		require.NoError(t, err)
		delivered, _, err := st.WebhookDelivery(ctx, evs[0].ID, ep.ID, now)
		require.NoError(t, err)
		assert.Equal(t, string(delivered.Payload), string(listed[0].Payload))
		assert.Contains(t, string(listed[0].Payload), "https://pay.example/claim/", "the working link, as delivered")
		one, err := st.EventForAccount(ctx, a.ID, models.ModeTest, evs[0].ID, now)
		require.NoError(t, err)
		assert.Equal(t, string(delivered.Payload), string(one.Payload))
	})
}

// Pruning deletes events recorded before the cutoff in batches, oldest
// first, with their delivery attempts; events still owed a dispatch stay.
func TestPruneEvents(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, _, written := eventsFixture(t, st, 3) // 6 events of a and 1 of b, recorded in t0's first hour, dispatched
		ep := newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderPaid)
		require.NoError(t, st.RecordWebhookAttempt(ctx, models.WebhookAttempt{
			DeliveryID: "dlv_1", EventID: written[0], EndpointID: ep.ID, Attempt: 1, At: t0, Succeeded: true, ResponseStatus: 200,
		}, "wf"))
		// An event still owed its dispatch, recorded long ago.
		seedCart(t, st, a.ID, "crt_owed")
		owed, _, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_owed", "", "h"))
		require.NoError(t, err)
		require.NoError(t, st.RecordTransition(ctx, owed.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: t0, AmountReceived: decimal.RequireFromString("12.50")}, t0))
		owedID := models.EventID(models.EventOrderPaid, owed.ID)

		cutoff := t0.Add(time.Hour)
		var batches []int
		for {
			n, err := st.PruneEvents(ctx, cutoff, 3)
			require.NoError(t, err)
			if n == 0 {
				break
			}
			batches = append(batches, n)
		}
		assert.Equal(t, []int{3, 3, 2}, batches, "7 dispatched events and the owed order's created, 3 at a time")
		left := listedEvents(t, st, models.EventListQuery{AccountID: a.ID, Mode: models.ModeTest, Limit: 100})
		assert.Equal(t, []string{owedID}, ids(left), "the event owed its dispatch stays")
		attempts, err := st.WebhookAttempts(ctx, ep.ID, "", 10)
		require.NoError(t, err)
		assert.Empty(t, attempts, "pruned with its event")

		// Younger than the cutoff: kept.
		n, err := st.PruneEvents(ctx, t0.Add(-time.Hour), 100)
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}
