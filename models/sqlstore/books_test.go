package sqlstore_test

import (
	"context"
	"strings"
	"sync"
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
	a := newAccount(t, st, "a")
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
	over := overpaidOrder(t, st, a.ID, "crt_over", "p-over", nil)
	require.NoError(t, st.RecordPayment(ctx, over.ID, livePayment("p-xlm", over.Number, "XLM", "40"), time.Now()))
	rs, err = st.CreateOwedRefunds(ctx, over.ID, t0)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for _, r := range rs {
		if r.Reason == models.RefundOverpaid {
			move(r.ID, func(r models.Refund) (models.Refund, error) { return models.CancelRefund(r, t0) })
		}
	}

	// Closed, then paid late: the late payment's refund is owed.
	closed := paidLateOrder(t, st, a.ID, "crt_closed", "p-late", "2")

	// Failed before refunds were paid out: refunded by hand.
	legacy := failedOrder(t, st, a.ID, "crt_legacy", nil)
	require.NoError(t, st.MarkOrderRefunded(ctx, legacy.Number, strings.Repeat("cd", 32), t0))

	require.NoError(t, st.SaveMatch(ctx, livePayment("p-stray", "nobody", "USDC", "3"), "", time.Now()))
	_, err = st.SavePayment(ctx, livePayment("p-new", "x", "USDC", "0.5"), time.Now())
	require.NoError(t, err)
	return bookedOrders{failed: failed.ID, overpaid: over.ID, closed: closed.ID, legacy: legacy.ID}
}

// readBooks reads the books of mode through a Bookkeeper.
func readBooks(t *testing.T, st *sqlstore.Store, mode models.Mode) ([]models.Ledger, []models.Discrepancy) {
	t.Helper()
	k := models.NewBookkeeper()
	require.NoError(t, st.ReadBooks(context.Background(), mode, k))
	return k.Finish()
}

func TestBooksWrittenByTheStoreBalance(t *testing.T) {
	sqlstore.SetBooksPage(t, 2) // several pages of every table
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		writeBooks(t, st)

		ledgers, found := readBooks(t, st, models.ModeTest)
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

		live, found := readBooks(t, st, models.ModeLive)
		assert.Empty(t, live, "test-mode books only")
		assert.Empty(t, found)
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
		{"a refund returning a payment not stored", func(o bookedOrders) (string, []any) {
			return `UPDATE refunds SET "key" = ? WHERE "key" = ?`, []any{models.PaymentRefundKey("p-gone"), models.PaymentRefundKey("p-late")}
		}, models.DiscrepancyRefundPaymentMismatch, func(o bookedOrders, d models.Discrepancy) bool {
			return strings.Contains(d.Detail, "not stored")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
				ctx := context.Background()
				o := writeBooks(t, st)
				q, args := c.sql(o)
				require.NoError(t, st.Exec(ctx, q, args...))
				_, found := readBooks(t, st, "")
				require.Len(t, found, 1, "%+v", found)
				assert.Equal(t, c.want, found[0].Kind)
				assert.True(t, c.id(o, found[0]), "%+v", found[0])
			})
		})
	}
}

// TestBooksCheckClaimedOncePerPeriod: of processes claiming the check of
// the books at once, one gets it; none again until the period has passed
// since the claim; the recorded check reads back as written.
func TestBooksCheckClaimedOncePerPeriod(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		last, err := st.LastBooksCheck(ctx)
		require.NoError(t, err)
		assert.True(t, last.CheckedAt.IsZero(), "never checked")

		const every = 15 * time.Minute
		won := make(chan bool, 8)
		var wg sync.WaitGroup
		for range cap(won) {
			wg.Go(func() {
				ok, err := st.ClaimBooksCheck(ctx, t0, every)
				assert.NoError(t, err)
				won <- ok
			})
		}
		wg.Wait()
		close(won)
		claims := 0
		for ok := range won {
			if ok {
				claims++
			}
		}
		assert.Equal(t, 1, claims, "one claim of the period")

		ok, err := st.ClaimBooksCheck(ctx, t0.Add(every-time.Second), every)
		require.NoError(t, err)
		assert.False(t, ok, "within the period")
		ok, err = st.ClaimBooksCheck(ctx, t0.Add(every), every)
		require.NoError(t, err)
		assert.True(t, ok, "the next period")

		check := models.BooksCheck{CheckedAt: t0.Add(every), Discrepancies: map[models.Mode]int{models.ModeLive: 3}}
		require.NoError(t, st.RecordBooksCheck(ctx, check))
		last, err = st.LastBooksCheck(ctx)
		require.NoError(t, err)
		assert.True(t, check.CheckedAt.Equal(last.CheckedAt))
		assert.Equal(t, map[models.Mode]int{models.ModeTest: 0, models.ModeLive: 3}, last.Discrepancies)
	})
}

// TestBooksReadWhatTheChainIsComparedWith: the books carry what
// models.CompareChain compares with the chain: each payment's sender, each
// refund's destination, and whether the service's payout recorded an
// envelope (a mark, not the envelope).
func TestBooksReadWhatTheChainIsComparedWith(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		failed := failedOrder(t, st, a.ID, "crt_chain", nil)
		owed := owedRefund(t, st, failed.ID, t0)
		dest := models.RefundDestination{Address: models.StellarAccountID([32]byte{8}), MemoType: "id", Memo: "7"}
		for _, m := range []func(models.Refund) (models.Refund, error){
			func(r models.Refund) (models.Refund, error) { return models.SetRefundDestination(r, dest) },
			func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, t0) },
			func(r models.Refund) (models.Refund, error) {
				return models.RecordRefundTransaction(r, payoutTx, strings.Repeat("QUFB", 100))
			},
			func(r models.Refund) (models.Refund, error) { return models.MarkRefundSent(r, payoutTx, t0) },
		} {
			_, err := st.UpdateRefund(ctx, owed.ID, t0, m)
			require.NoError(t, err)
		}

		var b allBooks
		require.NoError(t, st.ReadBooks(ctx, "", &b))
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

// allBooks keeps every payment and refund of the books read part by part.
type allBooks struct{ models.Books }

func (b *allBooks) Payment(p models.BookPayment, r *models.Refund) {
	b.Payments = append(b.Payments, p)
	if r != nil {
		b.Refunds = append(b.Refunds, *r)
	}
}

func (b *allBooks) Order(_ models.Order, _ []models.BookPayment, own []models.Refund) {
	b.Refunds = append(b.Refunds, own...)
}

func (b *allBooks) StrayRefunds(_ string, rs []models.Refund) { b.Refunds = append(b.Refunds, rs...) }
func (b *allBooks) StrayCredit(models.BookPayment)            {}
