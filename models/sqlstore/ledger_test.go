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

// The refunds are the one ledger of money owed back: money a refund covers
// is never listed as due by hand, an operator's hand-sent record of it is
// refused, and a payment whose refund settles is refunded.
func TestMoneyARefundCoversIsNotOwedByHand(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")

		// An overpaid order: its excess refund waits for a destination.
		o := overpaidOrder(t, st, a.ID, "crt_over", "p-over", nil)
		excess := owedRefund(t, st, o.ID, t0)

		due, err := st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, due, "the excess is its refund's, not an operator's to send")
		err = st.MarkOrderRefunded(ctx, o.Number, payoutTx, t0)
		assert.Equal(t, models.CodeInvalidRefundState, models.CodeOf(err), "mark-refunded --order is refused: %v", err)
		assert.ErrorContains(t, err, excess.ID)
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Nil(t, got.RefundedAt, "nothing recorded by hand")
		assert.Equal(t, models.PaymentOverpaid, got.PaymentStatus)

		// A late payment to a closed order: its refund is created with it.
		closed := paidLateOrder(t, st, a.ID, "crt_closed", "p-late", "12.50")
		due, err = st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, due, "the late payment is its refund's")
		err = st.MarkPaymentRefunded(ctx, "p-late", payoutTx, t0)
		assert.Equal(t, models.CodeInvalidRefundState, models.CodeOf(err), "mark-refunded --payment is refused: %v", err)
		payments, err := st.PaymentsForOrder(ctx, closed.ID)
		require.NoError(t, err)
		require.Len(t, payments, 1)
		assert.Equal(t, sqlstore.PaymentLate, payments[0].Status)
		assert.Nil(t, payments[0].RefundedAt)

		// The late payment's refund is paid: the payment is refunded, and
		// the order owes nothing more.
		lateRefund := models.RefundID(models.PaymentRefundKey("p-late"))
		sentAt := t0.Add(2 * time.Hour)
		for _, move := range []func(models.Refund) (models.Refund, error){
			func(r models.Refund) (models.Refund, error) { return models.SetRefundDestination(r, toSender) },
			func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, sentAt) },
			func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, payoutTx, sentAt) },
		} {
			_, err := st.UpdateRefund(ctx, lateRefund, sentAt, move)
			require.NoError(t, err)
		}
		payments, err = st.PaymentsForOrder(ctx, closed.ID)
		require.NoError(t, err)
		assert.Equal(t, sqlstore.PaymentRefunded, payments[0].Status)
		assert.Equal(t, payoutTx, payments[0].RefundTx)
		if assert.NotNil(t, payments[0].RefundedAt) {
			assert.True(t, sentAt.Equal(*payments[0].RefundedAt))
		}
		got, err = st.Order(ctx, closed.ID)
		require.NoError(t, err)
		assert.Equal(t, models.PaymentRefunded, got.PaymentStatus)
		assert.True(t, models.AmountDueBack(got).IsZero(), "nothing is due back: %s", models.AmountDueBack(got))
		due, err = st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, due)
	})
}

// An order whose workflow predates refund payouts waits for an operator's
// mark-refunded: a late payment to it creates that payment's own refund
// and never one of the order's money, so the two paths never both pay it.
func TestLegacyRefundWaitKeepsTheOrdersMoneyWithTheOperator(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := failedOrder(t, st, a.ID, "crt_legacy", &toSender)

		require.NoError(t, st.SaveMatch(ctx, livePayment("p-after", o.Number, "USDC", "2"), o.ID, time.Now()))
		require.NoError(t, st.MarkRecordedPaymentLate(ctx, "p-after", t0.Add(time.Hour)))
		rs, err := st.RefundsForOrder(ctx, o.ID)
		require.NoError(t, err)
		require.Len(t, rs, 1, "the late payment's refund only")
		assert.Equal(t, models.PaymentRefundKey("p-after"), rs[0].Key)

		due, err := st.RefundsDue(ctx)
		require.NoError(t, err)
		require.Len(t, due, 1, "the order's money is still the operator's")
		assert.Equal(t, o.Number, due[0].OrderNumber)
		assert.Equal(t, "12.5", due[0].Amount.String())

		require.NoError(t, st.MarkOrderRefunded(ctx, o.Number, payoutTx, t0.Add(2*time.Hour)))
		rs, err = st.CreateOwedRefunds(ctx, o.ID, t0.Add(3*time.Hour))
		require.NoError(t, err)
		assert.Len(t, rs, 1, "the order's money recorded by hand is never refunded again")
	})
}

// A payment an operator decided to refund is no longer unmatched: it is
// not listed to attach, and attaching it is refused; one attached first
// cannot be refunded as unmatched.
func TestRefundingAnUnmatchedPaymentTakesIt(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_attach", nil)

		stray := livePayment("p-stray", "nothing", "USDC", "12.50")
		r := unmatchedRefund(t, st, stray)

		unmatched, err := st.Payments(ctx, sqlstore.PaymentUnmatched)
		require.NoError(t, err)
		assert.Empty(t, unmatched, "being refunded, it is no longer unmatched")
		_, err = st.AttachUnmatched(ctx, "p-stray", o.Number)
		assert.ErrorContains(t, err, "being refunded")
		due, err := st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, due, "its refund covers it")
		_, created, err := st.CreateRefund(ctx, r)
		require.NoError(t, err)
		assert.False(t, created, "deciding twice creates it once")

		typo := livePayment("p-typo", "1234", "USDC", "12.50")
		require.NoError(t, st.SaveMatch(ctx, typo, "", time.Now()))
		_, err = st.AttachUnmatched(ctx, "p-typo", o.Number)
		require.NoError(t, err)
		r, err = models.RefundOfUnmatchedPayment(typo, models.PaymentStateUnmatched, t0)
		require.NoError(t, err)
		_, _, err = st.CreateRefund(ctx, r)
		assert.ErrorContains(t, err, "not unmatched", "read as unmatched before it was attached, refused after")
		_, err = st.Refund(ctx, r.ID)
		assert.ErrorIs(t, err, models.ErrRefundNotFound, "nothing stored")
	})
}

// The daily maximum of automatic approvals is a mode's own: test-mode
// approvals never spend the live budget.
func TestDailyMaxIsPerMode(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		day := t0.Truncate(24 * time.Hour)
		max := decimal.RequireFromString("10")
		for i, mode := range []models.Mode{models.ModeTest, models.ModeLive} {
			key := []string{"p-test-budget", "p-live-budget"}[i]
			p := livePayment(key, "nothing", "USDC", "10")
			p.Mode = mode
			require.NoError(t, st.SaveMatch(ctx, p, "", time.Now()))
			r, _, err := st.CreateRefund(ctx, models.Refund{
				Key: models.PaymentRefundKey(key), Mode: mode, PaymentIDs: []string{key}, Reason: models.RefundUnmatchedPayment,
				Amount: decimal.RequireFromString("10"), Asset: "USDC", Value: dec("10"), Status: models.RefundAwaitingApproval,
				Destination: &toSender, CreatedAt: t0,
			})
			require.NoError(t, err)
			_, ok, err := st.ApproveRefundWithinDailyMax(ctx, r.ID, t0, day, max)
			require.NoError(t, err)
			assert.True(t, ok, "%s: 10 of 10, whatever the other mode approved", mode)
		}
	})
}

// One transaction returns one refund's money: a refund is never recorded
// sent in a transaction that already settles another refund, or money an
// operator recorded refunded by hand.
func TestATransactionSettlesOneRefund(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		first := failedOrder(t, st, a.ID, "crt_first", &toSender)
		second := failedOrder(t, st, a.ID, "crt_second", &toSender)
		legacy := failedOrder(t, st, a.ID, "crt_legacy", &toSender)
		require.NoError(t, st.MarkOrderRefunded(ctx, legacy.Number, "legacy-hash", t0))

		var ids []string
		for _, o := range []models.Order{first, second} {
			rs, err := st.CreateOwedRefunds(ctx, o.ID, t0)
			require.NoError(t, err)
			require.Len(t, rs, 1)
			ids = append(ids, rs[0].ID)
		}
		markSent := func(hash string) func(models.Refund) (models.Refund, error) {
			return func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, hash, t0) }
		}
		_, err := st.UpdateRefund(ctx, ids[0], t0, markSent(payoutTx))
		require.NoError(t, err)
		_, err = st.UpdateRefund(ctx, ids[0], t0, markSent(payoutTx))
		require.NoError(t, err, "the same refund marked again with its own hash: a retried write")

		_, err = st.UpdateRefund(ctx, ids[1], t0, markSent(payoutTx))
		require.Error(t, err)
		assert.Equal(t, models.CodeInvalidRequest, models.CodeOf(err), "%v", err)
		assert.ErrorContains(t, err, ids[0])
		r, err := st.Refund(ctx, ids[1])
		require.NoError(t, err)
		assert.Equal(t, models.RefundAwaitingApproval, r.Status, "nothing written")

		legacyHash := strings.Repeat("0b", 32)
		require.NoError(t, st.Exec(ctx, `UPDATE orders SET refund_tx = ? WHERE id = ?`, legacyHash, legacy.ID))
		_, err = st.UpdateRefund(ctx, ids[1], t0, markSent(legacyHash))
		assert.ErrorContains(t, err, legacy.Number, "an order refunded by hand in that transaction")
	})
}
