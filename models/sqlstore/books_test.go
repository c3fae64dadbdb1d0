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

// bookedOrders are the ids of the orders writeBooks writes.
type bookedOrders struct {
	failed, overpaid, closed, legacy string
}

// writeBooks writes books through the store's own write paths in which
// money is in every place: an order's refund sent, an overpayment's refund
// cancelled, a late payment's refund owed, a wrong-asset payment's refund
// owed (in XLM), an order refunded by hand, an unmatched and a received
// payment.
func writeBooks(t *testing.T, st *sqlstore.Store) bookedOrders {
	t.Helper()
	ctx := context.Background()
	a, err := st.EnsureAccount(ctx, "a", t0)
	require.NoError(t, err)
	move := func(id string, moves ...func(models.Refund) (models.Refund, error)) {
		t.Helper()
		for _, m := range moves {
			_, err := st.UpdateRefund(ctx, id, t0, m)
			require.NoError(t, err)
		}
	}

	// Failed: its 12.50 refund is sent.
	failed := failedOrder(t, st, a.ID, "crt_failed", nil)
	rs, err := st.CreateOwedRefunds(ctx, failed.ID, t0)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	move(rs[0].ID,
		func(r models.Refund) (models.Refund, error) { return models.SetRefundDestination(r, toSender) },
		func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, t0) },
		func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, payoutTx, t0) })

	// Overpaid by 1: its refund is cancelled; a payment in XLM is owed back.
	over := newOrder(t, st, a.ID, "crt_over", nil)
	require.NoError(t, st.RecordPayment(ctx, over.ID, livePayment("p-over", over.Number, "USDC", "13.50")))
	require.NoError(t, st.RecordTransition(ctx, over.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentOverpaid,
		At: t0, AmountReceived: decimal.RequireFromString("13.50")}))
	require.NoError(t, st.RecordPayment(ctx, over.ID, livePayment("p-xlm", over.Number, "XLM", "40")))
	rs, err = st.CreateOwedRefunds(ctx, over.ID, t0)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for _, r := range rs {
		if r.Reason == models.RefundOverpaid {
			move(r.ID, func(r models.Refund) (models.Refund, error) { return models.CancelRefund(r, t0) })
		}
	}

	// Closed, then paid late: the late payment's refund is owed.
	closed := newOrder(t, st, a.ID, "crt_closed", nil)
	require.NoError(t, st.RecordTransition(ctx, closed.ID, models.Transition{Status: models.OrderCancelled, PaymentStatus: models.PaymentExpired, At: t0}))
	require.NoError(t, st.SaveMatch(ctx, livePayment("p-late", closed.Number, "USDC", "2"), closed.ID))
	late, err := st.MarkPaymentLate(ctx, "p-late", t0.Add(time.Hour))
	require.NoError(t, err)
	require.True(t, late)

	// Failed before refunds were paid out: refunded by hand.
	legacy := failedOrder(t, st, a.ID, "crt_legacy", nil)
	require.NoError(t, st.MarkOrderRefunded(ctx, legacy.Number, strings.Repeat("cd", 32), t0))

	require.NoError(t, st.SaveMatch(ctx, livePayment("p-stray", "nobody", "USDC", "3"), ""))
	_, err = st.SavePayment(ctx, livePayment("p-new", "x", "USDC", "0.5"))
	require.NoError(t, err)
	return bookedOrders{failed: failed.ID, overpaid: over.ID, closed: closed.ID, legacy: legacy.ID}
}

func TestBooksWrittenByTheStoreBalance(t *testing.T) {
	sqlstore.SetBooksPage(t, 2) // several pages of every table
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		writeBooks(t, st)

		b, err := st.Books(ctx, models.ModeTest)
		require.NoError(t, err)
		assert.Len(t, b.Payments, 7)
		assert.Len(t, b.Refunds, 4)
		assert.Len(t, b.Orders, 4)
		ledgers, found := models.Reconcile(b)
		assert.Empty(t, found)
		require.Len(t, ledgers, 2)
		d := decimal.RequireFromString
		usdc, xlm := ledgers[0], ledgers[1]
		require.Equal(t, "USDC", usdc.Asset)
		for name, c := range map[string]struct{ got, want decimal.Decimal }{
			"received":     {usdc.Received, d("44")},
			"kept":         {usdc.Kept, d("12.5")},
			"sent":         {usdc.Sent, d("12.5")},
			"sent by hand": {usdc.SentByHand, d("12.5")},
			"cancelled":    {usdc.Cancelled, d("1")},
			"owed":         {usdc.Owed, d("2")},
			"unmatched":    {usdc.Unmatched, d("3")},
			"pending":      {usdc.Pending, d("0.5")},
			"difference":   {usdc.Difference, decimal.Zero},
			"xlm owed":     {xlm.Owed, d("40")},
		} {
			assert.True(t, c.want.Equal(c.got), "%s: %s, want %s", name, c.got, c.want)
		}

		live, err := st.Books(ctx, models.ModeLive)
		require.NoError(t, err)
		assert.Empty(t, live.Payments, "test-mode books only")
		assert.Empty(t, live.Refunds)
	})
}

func TestBooksFindACorruptedRow(t *testing.T) {
	cases := []struct {
		name string
		sql  func(o bookedOrders) (string, []any)
		want models.DiscrepancyKind
		id   func(o bookedOrders, d models.Discrepancy) bool
	}{
		{"amount_received off", func(o bookedOrders) (string, []any) {
			return "UPDATE orders SET amount_received = 1 WHERE id = ?", []any{o.closed}
		}, models.DiscrepancyCreditMismatch, func(o bookedOrders, d models.Discrepancy) bool { return d.OrderID == o.closed }},
		{"refund sent without its hash", func(o bookedOrders) (string, []any) {
			return "UPDATE refunds SET transaction_hash = '' WHERE order_id = ? AND status = 'sent'", []any{o.failed}
		}, models.DiscrepancySentWithoutTransaction, func(o bookedOrders, d models.Discrepancy) bool { return d.OrderID == o.failed }},
		{"a late payment marked refunded while its refund is owed", func(o bookedOrders) (string, []any) {
			return "UPDATE payments SET status = 'refunded' WHERE id = ?", []any{"p-late"}
		}, models.DiscrepancyPaymentRefundState, func(o bookedOrders, d models.Discrepancy) bool {
			return assert.ObjectsAreEqual([]string{"p-late"}, d.PaymentIDs)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				o := writeBooks(t, st)
				q, args := c.sql(o)
				require.NoError(t, st.Exec(ctx, q, args...))
				b, err := st.Books(ctx, "")
				require.NoError(t, err)
				_, found := models.Reconcile(b)
				require.Len(t, found, 1, "%+v", found)
				assert.Equal(t, c.want, found[0].Kind)
				assert.True(t, c.id(o, found[0]), "%+v", found[0])
			})
		})
	}
}

// TestBooksReadWhatTheChainIsComparedWith: the books carry what
// models.CompareChain compares with the chain: each payment's sender, each
// refund's destination, and whether the service's payout recorded an
// envelope (a mark, not the envelope).
func TestBooksReadWhatTheChainIsComparedWith(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, err := st.EnsureAccount(ctx, "a", t0)
		require.NoError(t, err)
		failed := failedOrder(t, st, a.ID, "crt_chain", nil)
		rs, err := st.CreateOwedRefunds(ctx, failed.ID, t0)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		dest := models.RefundDestination{Address: models.StellarAccountID([32]byte{8}), MemoType: "id", Memo: "7"}
		for _, m := range []func(models.Refund) (models.Refund, error){
			func(r models.Refund) (models.Refund, error) { return models.SetRefundDestination(r, dest) },
			func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, t0) },
			func(r models.Refund) (models.Refund, error) {
				return models.RecordRefundTransaction(r, payoutTx, strings.Repeat("QUFB", 100))
			},
			func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, payoutTx, t0) },
		} {
			_, err := st.UpdateRefund(ctx, rs[0].ID, t0, m)
			require.NoError(t, err)
		}

		b, err := st.Books(ctx, "")
		require.NoError(t, err)
		require.Len(t, b.Refunds, 1)
		r := b.Refunds[0]
		assert.Equal(t, &dest, r.Destination)
		assert.Equal(t, "recorded", r.Envelope, "a mark that the payout recorded one")
		require.NotEmpty(t, b.Payments)
		for _, p := range b.Payments {
			assert.Equal(t, "GSENDER", p.Sender, p.ID)
		}
	})
}
