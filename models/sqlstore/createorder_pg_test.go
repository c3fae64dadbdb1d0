package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
	"github.com/memocart/memocart/models/sqlstore/sqlstoretest"
)

// onPostgres runs fn against a fresh Postgres store; the pipelined
// creation path exists on Postgres only.
func onPostgres(t *testing.T, fn func(t *testing.T, st *sqlstore.Store)) {
	t.Helper()
	for _, d := range sqlstoretest.Dialects() {
		if d == sqlstore.DialectPostgres {
			fn(t, sqlstoretest.Open(t, d))
			return
		}
	}
	t.Skipf("Postgres only: set %s", sqlstoretest.EnvPostgresURL)
}

// noOpenTransaction fails the test if a session of the store's database
// sits in a transaction (and so holds the locks it took).
func noOpenTransaction(t *testing.T, st *sqlstore.Store) {
	t.Helper()
	n, err := st.OpenTransactions(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "sessions idle in a transaction")
}

// A new order takes the pipelined path and is stored as the general
// transaction stores it.
func TestPipelinedCreateWritesWhatTheGeneralPathWrites(t *testing.T) {
	onPostgres(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, err := st.EnsureAccount(ctx, "a", t0)
		require.NoError(t, err)
		seedCart(t, st, a.ID, "crt_pipe")
		seedCart(t, st, a.ID, "crt_gen")
		// An endpoint that does not want order.created keeps the common case.
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderPaid)

		piped, err := st.CreateOrderPipelined(ctx, orderRequest(a.ID, "crt_pipe", "key-pipe", "h"))
		require.NoError(t, err, "a new order of a usable cart is the common case")
		general, created, err := st.CreateOrderGeneral(ctx, orderRequest(a.ID, "crt_gen", "key-gen", "h"))
		require.NoError(t, err)
		require.True(t, created)
		noOpenTransaction(t, st)

		readPiped, err := st.Order(ctx, piped.ID)
		require.NoError(t, err)
		readGeneral, err := st.Order(ctx, general.ID)
		require.NoError(t, err)
		assert.Equal(t, readPiped.Number, readPiped.PaymentMemo)
		require.Len(t, readPiped.Steps, 1)
		assert.Contains(t, readPiped.Steps, models.OrderCreated)
		// What differs by construction: the cart, and what the cart names.
		for _, o := range []*models.Order{&readPiped, &readGeneral, &piped, &general} {
			o.ID, o.CartID, o.Number, o.PaymentMemo = "", "", "", ""
		}
		assert.Equal(t, readGeneral, readPiped, "the same order, read back")
		assert.Equal(t, general, piped, "the same order, as returned")

		cart, err := st.Cart(ctx, a.ID, models.ModeTest, "crt_pipe")
		require.NoError(t, err)
		assert.Equal(t, models.CartOrdered, cart.Status)
	})
}

// Every case but a new order is rolled back and left to the general
// transaction, which decides it as before; nothing stays locked.
func TestPipelinedCreateLeavesOtherCasesToTheGeneralPath(t *testing.T) {
	onPostgres(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, err := st.EnsureAccount(ctx, "a", t0)
		require.NoError(t, err)
		b, err := st.EnsureAccount(ctx, "b", t0)
		require.NoError(t, err)
		seedCart(t, st, a.ID, "crt_1")
		seedCart(t, st, a.ID, "crt_2")
		seedCart(t, st, a.ID, "crt_3")
		first, created, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_1", "key-1", "h1"))
		require.NoError(t, err)
		require.True(t, created)

		pids, err := st.BackendPIDs(ctx)
		require.NoError(t, err)
		late := orderRequest(a.ID, "crt_2", "", "h")
		late.Now = t0.Add(31 * time.Minute)
		for name, req := range map[string]models.OrderRequest{
			"the cart's order exists": orderRequest(a.ID, "crt_1", "", "h1"),
			"the key's order exists":  orderRequest(a.ID, "crt_2", "key-1", "h2"),
			"another account's cart":  orderRequest(b.ID, "crt_2", "", "h"),
			"no such cart":            orderRequest(a.ID, "crt_none", "", "h"),
			"the cart expired":        late,
		} {
			_, err := st.CreateOrderPipelined(ctx, req)
			assert.ErrorIs(t, err, sqlstore.ErrNotCommon, name)
			noOpenTransaction(t, st)
		}
		// Each was rolled back on its connection, which went back to the
		// pool: none was discarded for an open transaction and replaced
		// (a new backend costs a process start and cold caches).
		after, err := st.BackendPIDs(ctx)
		require.NoError(t, err)
		assert.Subset(t, pids, after, "no connection was replaced")
		// The general path still answers each as before (the full table is
		// TestCreateOrderIdempotencyAndConflicts, through CreateOrder).
		again, created, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_1", "", "h1"))
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, first.ID, again.ID)
		_, _, err = st.CreateOrder(ctx, orderRequest(a.ID, "crt_2", "key-1", "h2"))
		assert.Equal(t, models.CodeIdempotencyMismatch, models.CodeOf(err))

		// An endpoint that wants order.created: the general path records it.
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventOrderCreated)
		_, err = st.CreateOrderPipelined(ctx, orderRequest(a.ID, "crt_3", "", "h"))
		assert.ErrorIs(t, err, sqlstore.ErrNotCommon, "an endpoint wants order.created")
		noOpenTransaction(t, st)
	})
}

// A taken number rolls the pipelined attempt back; CreateOrder mints
// another and the order is created once.
func TestPipelinedCreateRetriesATakenNumber(t *testing.T) {
	onPostgres(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, err := st.EnsureAccount(ctx, "a", t0)
		require.NoError(t, err)
		seedCart(t, st, a.ID, "crt_1")
		seedCart(t, st, a.ID, "crt_2")
		first, _, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_1", "", "h"))
		require.NoError(t, err)

		taken := orderRequest(a.ID, "crt_2", "", "h")
		taken.NewNumber = func() (string, error) { return first.Number, nil }
		_, err = st.CreateOrderPipelined(ctx, taken)
		assert.ErrorIs(t, err, sqlstore.ErrNumberTaken)
		noOpenTransaction(t, st)

		calls := 0
		next := orderRequest(a.ID, "crt_2", "", "h")
		fresh := next.NewNumber
		next.NewNumber = func() (string, error) {
			calls++
			if calls == 1 {
				return first.Number, nil
			}
			return fresh()
		}
		o, created, err := st.CreateOrder(ctx, next)
		require.NoError(t, err)
		assert.True(t, created)
		assert.NotEqual(t, first.Number, o.Number)
		assert.Equal(t, 2, calls, "one number taken, one minted again")
	})
}

// A request cancelled between the two pipelines leaves no transaction
// open, the cart unordered and the pool usable.
func TestPipelinedCreateCancelledBetweenPipelines(t *testing.T) {
	onPostgres(t, func(t *testing.T, st *sqlstore.Store) {
		a, err := st.EnsureAccount(context.Background(), "a", t0)
		require.NoError(t, err)
		seedCart(t, st, a.ID, "crt_1")

		ctx, cancel := context.WithCancel(context.Background())
		req := orderRequest(a.ID, "crt_1", "", "h")
		build := req.Build
		req.Build = func(c models.Cart) (models.Order, error) {
			cancel() // the cart is locked: the client goes away now
			return build(c)
		}
		_, _, err = st.CreateOrder(ctx, req)
		require.ErrorIs(t, err, context.Canceled)
		noOpenTransaction(t, st)

		cart, err := st.Cart(context.Background(), a.ID, models.ModeTest, "crt_1")
		require.NoError(t, err)
		assert.Equal(t, models.CartReady, cart.Status, "nothing was written")
		_, created, err := st.CreateOrder(context.Background(), orderRequest(a.ID, "crt_1", "", "h"))
		require.NoError(t, err)
		assert.True(t, created, "the retry creates the order")
	})
}
