package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// The operator's snapshot counts what waits, per mode: refunds by status,
// the oldest of each unsettled status and what they owe; unmatched
// payments; orders stuck past StuckAfter (and not the ones still within
// it, nor the ended ones); disabled endpoints and events not dispatched.
func TestOpsSnapshot(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		now := t0.Add(48 * time.Hour)
		empty, err := st.OpsSnapshot(ctx, now)
		require.NoError(t, err)
		for _, m := range []models.Mode{models.ModeTest, models.ModeLive} {
			require.NotNil(t, empty.Modes[m], "every mode, even empty")
			assert.Empty(t, empty.Modes[m].Refunds)
			assert.Zero(t, empty.Modes[m].Unmatched)
		}

		a := newAccount(t, st, "a")
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll) // every event waits for its dispatch
		off := newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		ok, err := st.DisableWebhookEndpoint(ctx, off.ID, t0, t0, "test")
		require.NoError(t, err)
		require.True(t, ok)

		newOrder(t, st, a.ID, "crt_ops_unpaid", nil) // its deadline (t0+31m) long past: stuck
		paid := func(cart string, at time.Time) models.Order {
			o := newOrder(t, st, a.ID, cart, nil)
			require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed,
				At: at, AmountReceived: decimal.RequireFromString("12.50")}, at))
			return o
		}
		paid("crt_ops_paid_long_ago", now.Add(-2*time.Hour))    // stuck
		paid("crt_ops_paid_just_now", now.Add(-10*time.Minute)) // within the hour
		failed := failedOrder(t, st, a.ID, "crt_ops_failed", nil)
		r := owedRefund(t, st, failed.ID, now.Add(-3*time.Hour))
		require.Equal(t, models.RefundAwaitingDestination, r.Status)
		require.NoError(t, st.SaveMatch(ctx, livePayment("pay_ops_unmatched", "00000000000", "USDC", "3.25"), "", now.Add(-90*time.Minute)))
		require.NoError(t, st.SaveMatch(ctx, livePayment("pay_ops_unmatched2", "00000000001", "USDC", "1.75"), "", now.Add(-30*time.Minute)))

		snap, err := st.OpsSnapshot(ctx, now)
		require.NoError(t, err)
		assert.Equal(t, now, snap.At)
		ops := snap.Modes[models.ModeTest]
		require.NotNil(t, ops)
		assert.Equal(t, map[models.RefundStatus]int{models.RefundAwaitingDestination: 1}, ops.Refunds)
		assert.Equal(t, now.Add(-3*time.Hour), ops.RefundsOldest[models.RefundAwaitingDestination])
		require.Contains(t, ops.RefundsOwed, "USDC")
		assert.Equal(t, "12.5", ops.RefundsOwed["USDC"].String())
		assert.Equal(t, 2, ops.Unmatched)
		assert.Equal(t, "5", ops.UnmatchedOwed["USDC"].String())
		assert.Equal(t, now.Add(-90*time.Minute), ops.UnmatchedOldest)
		assert.Equal(t, map[models.OrderStatus]int{models.OrderCreated: 1, models.OrderPaid: 1}, ops.OrdersStuck)
		assert.Equal(t, 1, ops.EndpointsDisabled)
		assert.Positive(t, ops.EventsWaiting)
		assert.Equal(t, t0.Add(time.Minute), ops.EventsOldestWaiting, "the first order's creation")

		live := snap.Modes[models.ModeLive]
		require.NotNil(t, live)
		assert.Empty(t, live.Refunds, "another mode's rows are not counted")
		assert.Empty(t, live.OrdersStuck)
		assert.Zero(t, live.EventsWaiting)
		assert.True(t, live.EventsOldestWaiting.IsZero())
	})
}

// The refunds sent since a time, summed by asset, of one mode.
func TestRefundsSentSince(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		dest := models.RefundDestination{Address: "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"}
		send := func(cart string, at time.Time) {
			hash := fmt.Sprintf("%064x", at.Unix())
			o := failedOrder(t, st, a.ID, cart, nil)
			r := owedRefund(t, st, o.ID, at)
			for _, move := range []func(models.Refund) (models.Refund, error){
				func(r models.Refund) (models.Refund, error) { return models.SetRefundDestination(r, dest) },
				func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, at) },
				func(r models.Refund) (models.Refund, error) {
					return models.MarkRefundSent(r, hash, at)
				},
			} {
				var err error
				r, err = st.UpdateRefund(ctx, r.ID, at, move)
				require.NoError(t, err)
			}
			require.Equal(t, models.RefundSent, r.Status)
		}
		send("crt_sent_old", t0)
		send("crt_sent_new", t0.Add(48*time.Hour))
		owedRefund(t, st, failedOrder(t, st, a.ID, "crt_not_sent", nil).ID, t0.Add(48*time.Hour))

		got, err := st.RefundsSentSince(ctx, models.ModeTest, t0.Add(24*time.Hour))
		require.NoError(t, err)
		require.Contains(t, got, "USDC")
		assert.Equal(t, "12.5", got["USDC"].String(), "the newer one only")
		got, err = st.RefundsSentSince(ctx, models.ModeTest, t0)
		require.NoError(t, err)
		assert.Equal(t, "25", got["USDC"].String())
		got, err = st.RefundsSentSince(ctx, models.ModeLive, t0)
		require.NoError(t, err)
		assert.Empty(t, got)
	})
}

// TestStuckOrdersReadOpenOrdersOnly: with 100,000 orders ended and a
// hundred on their way, statistics gathered, the stuck orders' count is
// read on the partial index of the orders on their way, never a scan of
// the orders.
func TestStuckOrdersReadOpenOrdersOnly(t *testing.T) {
	ctx := context.Background()
	st, dsn := openPostgres(t)
	a := newAccount(t, st, "big")
	seedListOrder(t, st, a.ID, models.ModeTest, "ord_tmpl", t0, models.OrderDelivered)
	raw, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer raw.Close()
	seedOrders(t, raw, "ord_tmpl", 100000, "t.account_id")
	for _, q := range []string{
		`UPDATE orders SET status = 'paid', updated_at = created_at WHERE right(number, 3) = '501'`,
		`ANALYZE`,
	} {
		_, err := raw.Exec(q)
		require.NoError(t, err)
	}
	plan, err := st.StuckOrdersPlan(ctx, t0)
	require.NoError(t, err)
	t.Logf("plan:\n%s", plan)
	assert.Contains(t, plan, "orders_open_idx")
	assert.NotContains(t, plan, "Seq Scan")
	snap, err := st.OpsSnapshot(ctx, t0.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 100, snap.Mode(models.ModeTest).OrdersStuck[models.OrderPaid])
}
