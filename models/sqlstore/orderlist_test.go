package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// listFixture is an order made for the list tests.
type listFixture struct {
	id      string
	created time.Time
	status  models.OrderStatus
}

// seedListOrder creates an order of account at created, moved to status.
func seedListOrder(t testing.TB, st *sqlstore.Store, accountID string, mode models.Mode, id string, created time.Time, status models.OrderStatus) listFixture {
	t.Helper()
	ctx := context.Background()
	d := decimal.RequireFromString
	cartID := "crt_" + id
	require.NoError(t, st.CreateCart(ctx, models.Cart{
		ID: cartID, AccountID: accountID, Mode: mode, Status: models.CartReady, ShipToCountry: "US",
		Quote:     models.Quote{Currency: "USD", Subtotal: d("10.00"), Shipping: d("1.00"), Tax: d("0.50"), ServiceFee: d("1.00"), Total: d("12.50")},
		Items:     []models.CartItem{{ProductURL: "https://www.amazon.com/dp/B000000001", Marketplace: models.MarketplaceAmazon, ProductID: "B000000001", Title: "x", ImageURL: "y", Quantity: 1, UnitPrice: d("10.00"), LineTotal: d("10.00")}},
		CreatedAt: created, ExpiresAt: created.Add(30 * time.Minute),
	}))
	req := orderRequest(accountID, cartID, "", "h")
	req.Mode, req.Now = mode, created
	build := req.Build
	req.Build = func(c models.Cart) (models.Order, error) {
		o, err := build(c)
		o.ID, o.Mode, o.CreatedAt, o.UpdatedAt = id, mode, created, created
		return o, err
	}
	_, _, err := st.CreateOrder(ctx, req)
	require.NoError(t, err)
	switch status {
	case models.OrderCreated:
	case models.OrderCancelled:
		require.NoError(t, st.RecordTransition(ctx, id, models.Transition{Status: status, PaymentStatus: models.PaymentExpired, At: created.Add(time.Hour),
			Reason: "payment deadline passed", Cancellation: models.CancellationPaymentWindowExpired}, time.Now()))
	default:
		require.NoError(t, st.RecordTransition(ctx, id, models.Transition{Status: status, PaymentStatus: models.PaymentConfirmed, At: created.Add(time.Minute), AmountReceived: d("12.50")}, time.Now()))
	}
	return listFixture{id: id, created: created, status: status}
}

// newestFirst is the list's order: created_at, then id, descending.
func newestFirst(fs []listFixture) []string {
	fs = slices.Clone(fs)
	sort.Slice(fs, func(i, j int) bool {
		if !fs[i].created.Equal(fs[j].created) {
			return fs[i].created.After(fs[j].created)
		}
		return fs[i].id > fs[j].id
	})
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.id
	}
	return ids
}

// walk reads every page of q and returns the ids in order, checking
// has_more on the way.
func walk(t *testing.T, st *sqlstore.Store, q models.OrderListQuery) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100, "pagination does not end")
		page, more, err := st.ListOrders(context.Background(), q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), q.Limit)
		for _, o := range page {
			ids = append(ids, o.ID)
		}
		if !more {
			return ids
		}
		require.Len(t, page, q.Limit, "a page before the last one is full")
		q.StartingAfter = page[len(page)-1].ID
	}
}

// TestListOrders: pages never skip or repeat an order, also among orders
// created in the same second; filters combine; the scope is one account
// and one mode; an unknown cursor is ErrOrderNotFound.
func TestListOrders(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		b := newAccount(t, st, "b")
		var all []listFixture
		statuses := []models.OrderStatus{models.OrderCreated, models.OrderPaid, models.OrderCancelled}
		for i := range 23 {
			// Three orders a second: ties broken by id.
			created := t0.Add(time.Duration(i/3) * time.Second)
			all = append(all, seedListOrder(t, st, a.ID, models.ModeTest, fmt.Sprintf("ord_a%02d", (i*7)%23), created, statuses[i%3]))
		}
		seedListOrder(t, st, b.ID, models.ModeTest, "ord_other_account", t0.Add(time.Hour), models.OrderCreated)
		seedListOrder(t, st, a.ID, models.ModeLive, "ord_other_mode", t0.Add(time.Hour), models.OrderCreated)

		scope := models.OrderListQuery{AccountID: a.ID, Mode: models.ModeTest}
		for _, limit := range []int{1, 3, 10, 23, 100} {
			q := scope
			q.Limit = limit
			assert.Equal(t, newestFirst(all), walk(t, st, q), "limit %d", limit)
		}

		// A page's orders are read as GET reads them.
		q := scope
		q.Limit = 2
		page, more, err := st.ListOrders(ctx, q)
		require.NoError(t, err)
		assert.True(t, more)
		require.Len(t, page, 2)
		one, err := st.OrderForAccount(ctx, a.ID, models.ModeTest, page[0].ID)
		require.NoError(t, err)
		one.Items = nil
		assert.Equal(t, one, page[0])

		// Filters.
		filter := func(keep func(listFixture) bool) []listFixture {
			var out []listFixture
			for _, f := range all {
				if keep(f) {
					out = append(out, f)
				}
			}
			return out
		}
		from, to := t0.Add(2*time.Second), t0.Add(5*time.Second)
		q = scope
		q.Limit, q.Status = 2, models.OrderCancelled
		assert.Equal(t, newestFirst(filter(func(f listFixture) bool { return f.status == models.OrderCancelled })), walk(t, st, q))
		q = scope
		q.Limit, q.CreatedGTE, q.CreatedLTE = 4, &from, &to
		assert.Equal(t, newestFirst(filter(func(f listFixture) bool { return !f.created.Before(from) && !f.created.After(to) })), walk(t, st, q),
			"both bounds inclusive")
		q.Status = models.OrderPaid
		assert.Equal(t, newestFirst(filter(func(f listFixture) bool {
			return f.status == models.OrderPaid && !f.created.Before(from) && !f.created.After(to)
		})), walk(t, st, q))
		q = scope
		q.Limit, q.Status = 10, models.OrderDelivered
		assert.Empty(t, walk(t, st, q))

		// A cursor of another account, another mode, or none at all.
		for _, cursor := range []string{"ord_other_account", "ord_other_mode", "ord_missing"} {
			q = scope
			q.Limit, q.StartingAfter = 10, cursor
			_, _, err := st.ListOrders(ctx, q)
			assert.ErrorIs(t, err, models.ErrOrderNotFound, cursor)
		}
		// The last order as a cursor: an empty page, not an error.
		q = scope
		q.Limit, q.StartingAfter = 10, newestFirst(all)[len(all)-1]
		page, more, err = st.ListOrders(ctx, q)
		require.NoError(t, err)
		assert.Empty(t, page)
		assert.False(t, more)
	})
}

// TestOrderListIsAnIndexRangeRead: with 100,000 orders in one account
// (and 20,000 in another), statistics gathered, every kind of page is a
// read of the list indexes in their order: no sort, no scan of the
// account's orders.
func TestOrderListIsAnIndexRangeRead(t *testing.T) {
	ctx := context.Background()
	st, dsn := openPostgres(t)
	big := newAccount(t, st, "big")
	small := newAccount(t, st, "small")
	seedListOrder(t, st, big.ID, models.ModeTest, "ord_tmpl", t0, models.OrderCreated)

	raw, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer raw.Close()
	const n = 100000
	seedOrders(t, raw, "ord_tmpl", n, "t.account_id")
	seedOrders(t, raw, "ord_tmpl", n/5, fmt.Sprintf("'%s'", small.ID))
	seedStepsAndPayments(t, raw)
	_, err = raw.Exec("ANALYZE")
	require.NoError(t, err)

	mid := "ord_tmpl_50000"
	from, to := t0.Add(-30*time.Hour), t0.Add(-10*time.Hour)
	scope := models.OrderListQuery{AccountID: big.ID, Mode: models.ModeTest, Limit: 10}
	for name, tc := range map[string]struct {
		q     func(q models.OrderListQuery) models.OrderListQuery
		index string
	}{
		"first page":             {func(q models.OrderListQuery) models.OrderListQuery { return q }, "orders_list_idx"},
		"a page past the cursor": {func(q models.OrderListQuery) models.OrderListQuery { q.StartingAfter = mid; return q }, "orders_list_idx"},
		"created range": {func(q models.OrderListQuery) models.OrderListQuery {
			q.CreatedGTE, q.CreatedLTE = &from, &to
			return q
		}, "orders_list_idx"},
		"a rare status past the cursor": {func(q models.OrderListQuery) models.OrderListQuery {
			q.Status, q.StartingAfter, q.Limit = models.OrderFailed, mid, 100
			return q
		}, "orders_list_status_idx"},
		// Nearly every order is delivered: either index serves it in
		// order, the planner picks one by its statistics.
		"a common status in a range": {func(q models.OrderListQuery) models.OrderListQuery {
			q.Status, q.CreatedGTE, q.CreatedLTE = models.OrderDelivered, &from, &to
			return q
		}, "orders_list_"},
	} {
		t.Run(name, func(t *testing.T) {
			plan, err := st.ListOrdersPlan(ctx, tc.q(scope))
			require.NoError(t, err)
			t.Logf("plan:\n%s", plan)
			assert.Contains(t, plan, "Index Scan using "+tc.index)
			assert.Regexp(t, `Limit\n(  InitPlan.*\n(.*\n)*)?  ->  Index Scan using orders_list_\w+ on orders o\n`, plan,
				"the page is read from a list index, under the Limit")
			assert.NotContains(t, plan, "Sort")
			assert.NotContains(t, plan, "Seq Scan")
			assert.NotContains(t, plan, "Bitmap")
		})
	}
	// And the query itself: the newest first, the cursor respected.
	page, more, err := st.ListOrders(ctx, models.OrderListQuery{AccountID: big.ID, Mode: models.ModeTest, Limit: 3, StartingAfter: mid})
	require.NoError(t, err)
	assert.True(t, more)
	assert.Equal(t, []string{"ord_tmpl_50001", "ord_tmpl_50002", "ord_tmpl_50003"}, []string{page[0].ID, page[1].ID, page[2].ID})
}

// seedOrders inserts n copies of the order tmpl (and of its cart), the
// g-th created g seconds... before it and, one in fifty, failed; the rest
// delivered.
func seedOrders(t testing.TB, db *sql.DB, tmpl string, n int, account string) {
	t.Helper()
	suffix := fmt.Sprintf("'_' || g || '_' || md5(%s)", account)
	if account == "t.account_id" {
		suffix = "'_' || g"
	}
	copyRows(t, db, "carts", "crt_"+tmpl, n, map[string]string{"id": "t.id || " + suffix, "account_id": account})
	copyRows(t, db, "orders", tmpl, n, map[string]string{
		"id": "t.id || " + suffix, "number": fmt.Sprintf("(%d + g)::text", 50000000000+seedOffset(account)), "cart_id": "t.cart_id || " + suffix,
		"account_id": account, "idempotency_key": "NULL",
		"created_at": "t.created_at - g * interval '1 second'",
		"status":     "CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'delivered' END",
	})
}

// seedStepsAndPayments gives every seeded order its created and paid
// steps, and one order in ten a payment, as real orders have: the plans of
// the steps and payments read per order are those of realistic tables.
func seedStepsAndPayments(t testing.TB, db *sql.DB) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO order_steps (order_id, name, reached_at)
			SELECT o.id, s.name, o.created_at FROM orders o, (VALUES ('paid'), ('delivered')) s(name)
			ON CONFLICT DO NOTHING`,
		`INSERT INTO payments (id, mode, asset, amount, memo, received_at, order_id, status, signaled_at, created_at)
			SELECT 'sandbox_' || o.id, o.mode, 'USDC', o.payment_amount, o.number, o.created_at, o.id, 'matched', o.created_at, o.created_at
			FROM orders o WHERE substr(o.number, 11, 1) = '7'`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
}

func seedOffset(account string) int {
	if account == "t.account_id" {
		return 0
	}
	return 1000000
}
