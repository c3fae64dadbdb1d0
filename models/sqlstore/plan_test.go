package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// TestOrderLookupIsAnIndexLookup: with 10,000 orders in one account and no
// statistics (no ANALYZE has run), reading an order by id and by number
// is an index lookup on Postgres, never a scan of the account's orders
// (what "(id = ? OR number = ?) AND account_id = ?" planned).
func TestOrderLookupIsAnIndexLookup(t *testing.T) {
	ctx := context.Background()
	st, dsn := openPostgres(t)
	acct := newAccount(t, st, "big")
	o := newOrder(t, st, acct.ID, "crt_tmpl", nil)

	// 10,000 copies of the order (and of its cart) straight in SQL.
	raw, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer raw.Close()
	const n = 10000
	copyRows(t, raw, "carts", "crt_tmpl", n, map[string]string{"id": "t.id || '_' || g"})
	copyRows(t, raw, "orders", o.ID, n, map[string]string{
		"id": "t.id || '_' || g", "number": "(50000000000 + g)::text", "cart_id": "t.cart_id || '_' || g", "idempotency_key": "NULL",
	})
	var count int
	require.NoError(t, raw.QueryRow("SELECT count(*) FROM orders WHERE account_id = $1", acct.ID).Scan(&count))
	require.Equal(t, n+1, count)

	for _, ref := range []string{o.ID, o.Number, "ord_missing", "50000000042"} {
		plan, err := st.OrderLookupPlan(ctx, ref)
		require.NoError(t, err)
		t.Logf("plan for %s:\n%s", ref, plan)
		assert.Contains(t, plan, "Index Scan", "ref %s", ref)
		assert.NotContains(t, plan, "Seq Scan", "ref %s", ref)
		assert.NotContains(t, plan, "orders_account_idx", "ref %s: not the account's orders", ref)
		// The order's payments: by order id, and the ones not attached yet
		// by memo, never by reading every unmatched payment.
		assert.Contains(t, plan, "payments_order_idx", "ref %s", ref)
		assert.Contains(t, plan, "payments_unattached_memo_idx", "ref %s", ref)
	}
	got, err := st.OrderForAccount(ctx, acct.ID, models.ModeTest, "50000000042")
	require.NoError(t, err)
	assert.Equal(t, o.ID+"_42", got.ID)
	// The account and the mode still decide: checked on the row.
	_, err = st.OrderForAccount(ctx, "acct_other", models.ModeTest, "50000000042")
	require.ErrorIs(t, err, models.ErrOrderNotFound)
	_, err = st.OrderForAccount(ctx, acct.ID, models.ModeLive, "50000000042")
	require.ErrorIs(t, err, models.ErrOrderNotFound)
}

// copyRows inserts n copies of table's row id, with some columns computed
// from g (1..n) instead of copied.
func copyRows(t testing.TB, db *sql.DB, table, id string, n int, override map[string]string) {
	t.Helper()
	rows, err := db.Query("SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position", table)
	require.NoError(t, err)
	var cols, exprs []string
	for rows.Next() {
		var c string
		require.NoError(t, rows.Scan(&c))
		cols = append(cols, c)
		if e, ok := override[c]; ok {
			exprs = append(exprs, e)
		} else {
			exprs = append(exprs, "t."+c)
		}
	}
	require.NoError(t, rows.Err())
	q := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s t, generate_series(1, %d) g WHERE t.id = $1",
		table, strings.Join(cols, ", "), strings.Join(exprs, ", "), table, n)
	_, err = db.Exec(q, id)
	require.NoError(t, err)
}
