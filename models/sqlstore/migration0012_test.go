package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// TestMigration0012PaymentsFollowTheirRefunds: books written before the
// refunds became the one ledger read as the ledger says once migrated: a
// payment whose refund was sent is refunded with its transaction, an
// unmatched payment being refunded is no longer unmatched, and the order's
// amount refunded counts its own money only, so nothing reads as due back
// twice or not at all.
func TestMigration0012PaymentsFollowTheirRefunds(t *testing.T) {
	eachDialectAt(t, 11, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()

		a := newAccount(t, st, "a")
		o := failedOrder(t, st, a.ID, "crt_m12", nil)
		require.NoError(t, st.SaveMatch(ctx, livePayment("p-late", o.Number, "USDC", "2"), o.ID, time.Now()))
		require.NoError(t, st.SaveMatch(ctx, livePayment("p-stray", "nothing", "USDC", "3"), "", time.Now()))
		hash := strings.Repeat("0a", 32)
		sentAt := t0.Add(time.Hour)
		require.NoError(t, st.Exec(ctx, `UPDATE payments SET status = 'late' WHERE id = 'p-late'`))
		for _, r := range []struct{ key, order, reason, amount, status, tx string }{
			{"order:" + o.ID + ":1", o.ID, "order_failed", "12.50", "sent", hash},
			{"payment:p-late", o.ID, "late_payment", "2", "sent", hash},
			{"payment:p-stray", "", "unmatched_payment", "3", "awaiting_destination", ""},
		} {
			var order, account any
			if r.order != "" {
				order, account = r.order, a.ID
			}
			var sent any
			if r.status == "sent" {
				sent = sentAt
			}
			require.NoError(t, st.Exec(ctx, `INSERT INTO refunds (id, "key", order_id, account_id, mode, reason, amount, asset,
				status, transaction_hash, created_at, updated_at, sent_at) VALUES (?, ?, ?, ?, 'test', ?, ?, 'USDC', ?, ?, ?, ?, ?)`,
				models.RefundID(r.key), r.key, order, account, r.reason, r.amount, r.status, r.tx, t0, sentAt, sent))
		}
		// What the order's refunds returned, as counted before: the
		// late payment's refund included.
		require.NoError(t, st.Exec(ctx, `UPDATE orders SET amount_refunded = '14.5', payment_status = 'refunded' WHERE id = ?`, o.ID))

		_, err := st.Migrate(ctx)
		require.NoError(t, err)

		late, err := st.PaymentsForOrder(ctx, o.ID)
		require.NoError(t, err)
		var p sqlstore.StoredPayment
		for _, q := range late {
			if q.ID == "p-late" {
				p = q
			}
		}
		assert.Equal(t, sqlstore.PaymentRefunded, p.Status)
		assert.Equal(t, hash, p.RefundTx)
		if assert.NotNil(t, p.RefundedAt) {
			assert.True(t, sentAt.Equal(*p.RefundedAt), "%s", p.RefundedAt)
		}
		assert.Equal(t, sqlstore.PaymentRefundDue, paymentStatus(t, st, "p-stray"), "being refunded: no longer unmatched")
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, "12.5", got.AmountRefunded.String(), "the order's own money")
		assert.True(t, models.AmountDueBack(got).IsZero(), "nothing due back: %s", models.AmountDueBack(got))
		due, err := st.RefundsDue(ctx)
		require.NoError(t, err)
		assert.Empty(t, due)
	})
}
