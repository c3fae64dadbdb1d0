package sqlstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// TestMigration0005FillsCancellationReasons: orders cancelled before
// cancellation_reason existed get the reason their workflow's words imply,
// and read back with it; other orders get none.
func TestMigration0005FillsCancellationReasons(t *testing.T) {
	eachDialectAt(t, 4, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()

		require.NoError(t, st.Exec(ctx, `INSERT INTO accounts (id, name, created_at) VALUES ('acct_old', 'old', ?)`, t0))
		for i, o := range []struct{ id, status, paymentStatus, reason string }{
			{"ord_expired", "cancelled", "expired", "payment deadline passed"},
			{"ord_underpaid", "cancelled", "refund_due", "payment deadline passed"},
			{"ord_operator", "cancelled", "cancelled", "cancelled by ops@memocart.com: fraud"},
			{"ord_wfcancel", "cancelled", "cancelled", "workflow cancelled"},
			{"ord_open", "created", "pending", ""},
			{"ord_failed", "failed", "refund_due", "out of stock"},
		} {
			cart, number := "crt_"+o.id, fmt.Sprint(20000000000+i)
			require.NoError(t, st.Exec(ctx, `INSERT INTO carts (id, account_id, mode, status, currency, ship_to_country,
				subtotal, shipping, tax, service_fee, total, created_at, expires_at)
				VALUES (?, 'acct_old', 'test', 'ordered', 'USD', 'US', 1, 0, 0, 0, 1, ?, ?)`, cart, t0, t0))
			require.NoError(t, st.Exec(ctx, `INSERT INTO orders (id, number, account_id, mode, cart_id, status, payment_status,
				status_reason, customer_email, ship_name, ship_line1, ship_city, ship_country, currency, total,
				payment_asset, payment_amount, payment_address, payment_memo, payment_expires_at, request_hash, created_at, updated_at)
				VALUES (?, ?, 'acct_old', 'test', ?, ?, ?, ?, 'a@example.com', 'A B', '1 Main St', 'X', 'US', 'USD', 1,
				'USDC', 1, 'G', ?, ?, 'h', ?, ?)`,
				o.id, number, cart, o.status, o.paymentStatus, o.reason, number, t0, t0, t0))
		}

		_, err := st.Migrate(ctx)
		require.NoError(t, err)
		for id, want := range map[string]models.CancellationReason{
			"ord_expired":   models.CancellationPaymentWindowExpired,
			"ord_underpaid": models.CancellationPaymentWindowExpired,
			"ord_operator":  models.CancellationByOperator,
			"ord_wfcancel":  models.CancellationByOperator,
			"ord_open":      "",
			"ord_failed":    "",
		} {
			o, err := st.OrderForAccount(ctx, "acct_old", models.ModeTest, id)
			require.NoError(t, err)
			assert.Equal(t, want, o.Cancellation, id)
			assert.Nil(t, o.Metadata, "%s: no metadata", id)
		}
	})
}
