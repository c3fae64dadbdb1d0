package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

func livePayment(id, memo, asset, amount string) models.Payment {
	return models.Payment{ID: id, Mode: models.ModeTest, Asset: asset, Amount: decimal.RequireFromString(amount),
		Memo: memo, MemoType: "text", Sender: "GSENDER", TxHash: "tx-" + id, ReceivedAt: t0}
}

func TestStellarPaymentsAndCursorAreSavedTogether(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		cur, err := st.StellarCursor(ctx, "testnet", "GACCOUNT")
		require.NoError(t, err)
		assert.Empty(t, cur, "no cursor before the first start")

		page := []models.Payment{livePayment("stellar:testnet:1", "x", "USDC", "1"), livePayment("stellar:testnet:2", "y", "XLM", "2.5")}
		require.NoError(t, st.SaveStellarPayments(ctx, "testnet", "GACCOUNT", page, "200", time.Now()))
		// The same page again (a re-read after a crash) stores nothing twice.
		require.NoError(t, st.SaveStellarPayments(ctx, "testnet", "GACCOUNT", page, "200", time.Now()))
		require.NoError(t, st.SaveStellarPayments(ctx, "testnet", "GACCOUNT", nil, "300", time.Now()))

		cur, err = st.StellarCursor(ctx, "testnet", "GACCOUNT")
		require.NoError(t, err)
		assert.Equal(t, "300", cur)
		other, err := st.StellarCursor(ctx, "pubnet", "GACCOUNT")
		require.NoError(t, err)
		assert.Empty(t, other, "cursors are per network")

		counts, err := st.PaymentCounts(ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{sqlstore.PaymentReceived: 2}, counts)
		ps, err := st.Payments(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 2)
		for _, p := range ps {
			assert.Equal(t, sqlstore.PaymentReceived, p.Status)
			assert.Equal(t, "text", p.MemoType)
			assert.Equal(t, "tx-"+p.ID, p.TxHash)
		}
	})
}

func TestWrongAssetRefundsAndAttach(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_r", nil)

		// A wrong-asset payment recorded by the workflow is due back.
		require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment("p-xlm", o.Number, "XLM", "40"), time.Now()))
		// An overpaid order owes its excess.
		require.NoError(t, st.RecordPayment(ctx, o.ID, livePayment("p-usdc", o.Number, "USDC", "13.50"), time.Now()))
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentOverpaid, At: t0, AmountReceived: decimal.RequireFromString("13.50")}, time.Now()))

		refunds, err := st.RefundsDue(ctx)
		require.NoError(t, err)
		require.Len(t, refunds, 2)
		assert.Equal(t, "p-xlm", refunds[0].PaymentID)
		assert.Equal(t, "40", refunds[0].Amount.String())
		assert.Equal(t, o.Number, refunds[0].OrderNumber)
		assert.Equal(t, "1", refunds[1].Amount.String(), "the excess: 13.50 received for 12.50 due")
		assert.Equal(t, []string{"GSENDER"}, refunds[1].Senders)

		require.NoError(t, st.MarkPaymentRefunded(ctx, "p-xlm", "refund-tx-1", t0))
		assert.ErrorIs(t, st.MarkPaymentRefunded(ctx, "p-xlm", "refund-tx-1", t0), models.ErrNothingToRefund, "refunded once")
		assert.ErrorIs(t, st.MarkPaymentRefunded(ctx, "p-usdc", "x", t0), models.ErrNothingToRefund, "a credited payment is not refunded alone")
		require.NoError(t, st.MarkOrderRefunded(ctx, o.Number, "refund-tx-2", t0))
		require.NoError(t, st.MarkOrderRefunded(ctx, o.Number, "refund-tx-2", t0), "the same refund recorded again (a retried activity)")
		assert.ErrorIs(t, st.MarkOrderRefunded(ctx, o.Number, "refund-tx-3", t0), models.ErrNothingToRefund, "a second, different refund")
		refunds, err = st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, refunds)
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, models.PaymentOverpaid, got.PaymentStatus, "an overpaid order stays overpaid once its excess is returned")
		assert.Equal(t, "refund-tx-2", got.RefundTx)

		// An unmatched payment attached by an operator.
		_, err = st.SavePayment(ctx, livePayment("p-typo", "1234", "USDC", "5"), time.Now())
		require.NoError(t, err)
		_, err = st.AttachUnmatched(ctx, "p-typo", o.Number)
		assert.Error(t, err, "a payment the matcher has not processed yet cannot be attached")
		require.NoError(t, st.SaveMatch(ctx, livePayment("p-typo", "1234", "USDC", "5"), "", time.Now()))
		p, err := st.AttachUnmatched(ctx, "p-typo", o.Number)
		require.NoError(t, err)
		assert.Equal(t, o.ID, p.OrderID)
		_, err = st.AttachUnmatched(ctx, "p-typo", o.Number)
		assert.Error(t, err, "attached once")
	})
}

func TestLatePaymentMarksOrderRefundDue(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := paidLateOrder(t, st, a.ID, "crt_l", "p-late", "12.50")

		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, models.PaymentRefundDue, got.PaymentStatus)
		assert.Equal(t, models.OrderCancelled, got.Status)
		refunds, err := st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, refunds, "the late payment's refund, created with the mark, covers it")
		rs, err := st.RefundsForOrder(ctx, o.ID)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		assert.Equal(t, []string{"p-late"}, rs[0].PaymentIDs)
	})
}

func TestAlerts(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		require.NoError(t, st.RaiseAlert(ctx, "stellar_before_history", "cursor 123 is older than history", t0))
		require.NoError(t, st.RaiseAlert(ctx, "stellar_before_history", "cursor 123 is older than history", t0.Add(time.Minute)))
		as, err := st.OpenAlerts(ctx)
		require.NoError(t, err)
		require.Len(t, as, 1)
		assert.Equal(t, 2, as[0].Count)
		assert.True(t, t0.Add(time.Minute).Equal(as[0].LastAt))
		require.NoError(t, st.ClearAlert(ctx, "stellar_before_history", t0))
		as, err = st.OpenAlerts(ctx)
		require.NoError(t, err)
		assert.Empty(t, as)
	})
}

func TestSaveMatchIsIdempotentAndKeepsFinalStates(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o1, o2 := newOrder(t, st, a.ID, "crt_m1", nil), newOrder(t, st, a.ID, "crt_m2", nil)

		p := livePayment("p-m", o1.Number, "USDC", "1")
		require.NoError(t, st.SaveMatch(ctx, p, o1.ID, time.Now()), "new payment, stored and attached in one write")
		require.NoError(t, st.SaveMatch(ctx, p, o1.ID, time.Now()), "again: no change")
		require.NoError(t, st.SaveMatch(ctx, p, o2.ID, time.Now()), "never moved to another order")
		require.NoError(t, st.SaveMatch(ctx, p, "", time.Now()), "never turned unmatched")
		ps, err := st.PaymentsForOrder(ctx, o1.ID)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		assert.Equal(t, sqlstore.PaymentMatched, ps[0].Status)

		if late, err := st.MarkPaymentLate(ctx, "p-m", t0); assert.NoError(t, err) {
			assert.True(t, late, "marked late")
		}
		require.NoError(t, st.SaveMatch(ctx, p, o1.ID, time.Now()), "a re-delivery after it went late")
		assert.Equal(t, sqlstore.PaymentLate, paymentStatus(t, st, "p-m"), "late stays late")

		_, err = st.SavePayment(ctx, livePayment("p-u", "zzz", "USDC", "1"), time.Now())
		require.NoError(t, err)
		require.NoError(t, st.SaveMatch(ctx, livePayment("p-u", "zzz", "USDC", "1"), "", time.Now()))
		assert.Equal(t, sqlstore.PaymentUnmatched, paymentStatus(t, st, "p-u"))
	})
}

// TestMarkPaymentLateSparesARecordedPayment: a payment the workflow
// recorded, delivered again after the order closed (a source replaying it,
// a test payment retried under its Idempotency-Key), is not late money.
func TestMarkPaymentLateSparesARecordedPayment(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_r", nil)
		p := livePayment("p-r", o.Number, "USDC", "12.50")
		require.NoError(t, st.SaveMatch(ctx, p, o.ID, time.Now()))
		require.NoError(t, st.RecordPayment(ctx, o.ID, p, time.Now()))
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: t0}, time.Now()))

		late, err := st.MarkPaymentLate(ctx, "p-r", t0.Add(time.Hour))
		require.NoError(t, err)
		assert.False(t, late)
		assert.Equal(t, sqlstore.PaymentMatched, paymentStatus(t, st, "p-r"))
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, models.PaymentConfirmed, got.PaymentStatus, "not refund_due")
		refunds, err := st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, refunds)
	})
}

// TestMarkRecordedPaymentLate: a payment the order's workflow recorded
// without crediting it (it arrived after the order's refund was recorded)
// is late money, due back on its own, although the workflow acknowledged
// it.
func TestMarkRecordedPaymentLate(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_l", nil)
		p := livePayment("p-after-refund", o.Number, "USDC", "3.00")
		require.NoError(t, st.RecordPayment(ctx, o.ID, p, time.Now()))

		require.NoError(t, st.MarkRecordedPaymentLate(ctx, p.ID, t0.Add(time.Hour)))
		assert.Equal(t, sqlstore.PaymentLate, paymentStatus(t, st, p.ID))
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, models.PaymentRefundDue, got.PaymentStatus)
		rs, err := st.RefundsForOrder(ctx, o.ID)
		require.NoError(t, err)
		require.Len(t, rs, 1, "its refund is created with the mark")
		assert.Equal(t, []string{p.ID}, rs[0].PaymentIDs)
	})
}

func paymentStatus(t *testing.T, st *sqlstore.Store, id string) string {
	t.Helper()
	ps, err := st.Payments(context.Background())
	require.NoError(t, err)
	for _, p := range ps {
		if p.ID == id {
			return p.Status
		}
	}
	t.Fatalf("payment %s not stored", id)
	return ""
}

// A matched payment its workflow has not recorded is claimed for
// redelivery by one caller at a time, and not again until its wait has
// passed; a recorded one is never claimed.
func TestPaymentRedeliveryIsClaimedOnceAndWaits(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_r", nil)
		p := models.Payment{ID: "sandbox:r1", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("12.5"), Memo: o.Number, ReceivedAt: t0}
		_, err := st.SavePayment(ctx, p, time.Now())
		require.NoError(t, err)
		require.NoError(t, st.SaveMatch(ctx, p, o.ID, time.Now()))

		var waits []int
		wait := func(n int) time.Duration { waits = append(waits, n); return time.Duration(n) * time.Minute }
		now := time.Now().Add(time.Minute)
		cutoff := now

		// Two replicas interleave: B claims after A has read the payment
		// and before A writes its claim (A's wait is asked in between).
		perMinute := func(n int) time.Duration { return time.Duration(n) * time.Minute }
		var byB []models.Payment
		byA, err := st.ClaimPaymentRedeliveries(ctx, cutoff, now, func(n int) time.Duration {
			if byB == nil {
				var err error
				byB, err = st.ClaimPaymentRedeliveries(ctx, cutoff, now, perMinute, 10)
				require.NoError(t, err)
			}
			return perMinute(n)
		}, 10)
		require.NoError(t, err)
		assert.Len(t, byB, 1, "B claims it")
		assert.Empty(t, byA, "A's claim finds it taken")

		ps, err := st.ClaimPaymentRedeliveries(ctx, cutoff, now.Add(59*time.Second), wait, 10)
		require.NoError(t, err)
		assert.Empty(t, ps, "not due before its wait (1 minute after the first)")
		ps, err = st.ClaimPaymentRedeliveries(ctx, cutoff, now.Add(time.Minute), wait, 10)
		require.NoError(t, err)
		require.Len(t, ps, 1, "due once its wait has passed")
		assert.Equal(t, p.ID, ps[0].ID)
		assert.Equal(t, o.ID, ps[0].OrderID)
		assert.Equal(t, []int{2}, waits, "the second claim waits wait(2)")
		ps, err = st.ClaimPaymentRedeliveries(ctx, cutoff, now.Add(3*time.Minute-time.Second), wait, 10)
		require.NoError(t, err)
		assert.Empty(t, ps, "not due before 2 more minutes")

		// A redelivery that could not be signalled is released: due at
		// once, and its count back where it was.
		require.NoError(t, st.ReleasePaymentRedelivery(ctx, p.ID))
		ps, err = st.ClaimPaymentRedeliveries(ctx, cutoff, now.Add(time.Minute+time.Second), wait, 10)
		require.NoError(t, err)
		require.Len(t, ps, 1, "due again at once after a release")
		assert.Equal(t, []int{2, 2}, waits, "claimed again as the second redelivery")

		require.NoError(t, st.RecordPayment(ctx, o.ID, p, time.Now()), "the workflow records it")
		ps, err = st.ClaimPaymentRedeliveries(ctx, cutoff, now.Add(time.Hour), wait, 10)
		require.NoError(t, err)
		assert.Empty(t, ps, "a recorded payment is never claimed")
	})
}
