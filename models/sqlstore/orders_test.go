package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// newAccount ensures the account named name, created at t0.
func newAccount(t testing.TB, st *sqlstore.Store, name string) models.Account {
	t.Helper()
	a, err := st.EnsureAccount(context.Background(), name, t0)
	require.NoError(t, err)
	return a
}

// seedCart stores a ready cart for the account and returns its id.
func seedCart(t *testing.T, st *sqlstore.Store, accountID, id string) {
	t.Helper()
	d := decimal.RequireFromString
	require.NoError(t, st.CreateCart(context.Background(), models.Cart{
		ID: id, AccountID: accountID, Mode: models.ModeTest, Status: models.CartReady, ShipToCountry: "US",
		Quote:     models.Quote{Currency: "USD", Subtotal: d("10.00"), Shipping: d("1.00"), Tax: d("0.50"), ServiceFee: d("1.00"), Total: d("12.50")},
		Items:     []models.CartItem{{ProductURL: "https://www.amazon.com/dp/B000000001", Marketplace: models.MarketplaceAmazon, ProductID: "B000000001", Title: "x", ImageURL: "y", Quantity: 1, UnitPrice: d("10.00"), LineTotal: d("10.00")}},
		CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
	}))
}

var numberSeq atomic.Int64

func orderRequest(accountID, cartID, key, hash string) models.OrderRequest {
	return models.OrderRequest{
		AccountID: accountID, Mode: models.ModeTest, CartID: cartID, IdempotencyKey: key, RequestHash: hash, Now: t0.Add(time.Minute),
		Build: func(c models.Cart) (models.Order, error) {
			return models.Order{
				ID: "ord_" + c.ID, AccountID: c.AccountID, Mode: c.Mode, CartID: c.ID,
				Status: models.OrderCreated, PaymentStatus: models.PaymentPending, CustomerEmail: "a@example.com",
				Address:  models.ShippingAddress{Name: "A", Line1: "1 Main St", City: "Springfield", Region: "IL", PostalCode: "62701", Country: "US"},
				Currency: c.Currency, Total: c.Total, PaymentAsset: "USDC", PaymentAmount: c.Total,
				PaymentAddress: "GADDR", PaymentExpiresAt: t0.Add(31 * time.Minute), AmountReceived: decimal.Zero,
				CreatedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Minute),
			}, nil
		},
		NewNumber: func() (string, error) { return fmt.Sprintf("%011d", 10000000000+numberSeq.Add(1)), nil },
	}
}

func TestCreateOrderExactlyOncePerCart(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		seedCart(t, st, a.ID, "crt_race")

		const n = 8
		var wg sync.WaitGroup
		ids := make([]string, n)
		createdCount := atomic.Int32{}
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, created, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_race", "", "same-body"))
				ids[i], errs[i] = o.ID, err
				if created {
					createdCount.Add(1)
				}
			}()
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			assert.Equal(t, ids[0], ids[i], "every concurrent request sees the same order")
		}
		assert.Equal(t, int32(1), createdCount.Load(), "exactly one request created the order")

		o, err := st.Order(ctx, ids[0])
		require.NoError(t, err)
		assert.Equal(t, o.Number, o.PaymentMemo, "the memo is the order number")
		require.Len(t, o.Items, 1, "items come from the cart")
		assert.Contains(t, o.Steps, models.OrderCreated)

		cart, err := st.Cart(ctx, a.ID, models.ModeTest, "crt_race")
		require.NoError(t, err)
		assert.Equal(t, models.CartOrdered, cart.Status)
	})
}

// keyedOrder is the fixture of the tests of CreateOrder's refusals:
// accounts a and b, a's ready carts crt_1 and crt_2, and the order a
// created of crt_1 under Idempotency-Key key-1 (request hash h1).
func keyedOrder(t *testing.T, st *sqlstore.Store) (a, b models.Account, first models.Order) {
	t.Helper()
	a, b = newAccount(t, st, "a"), newAccount(t, st, "b")
	seedCart(t, st, a.ID, "crt_1")
	seedCart(t, st, a.ID, "crt_2")
	first, created, err := st.CreateOrder(context.Background(), orderRequest(a.ID, "crt_1", "key-1", "h1"))
	require.NoError(t, err)
	require.True(t, created)
	return a, b, first
}

func TestCreateOrderIdempotencyAndConflicts(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, b, first := keyedOrder(t, st)

		again, created, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_1", "key-1", "h1"))
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, first.ID, again.ID, "same key, same body: the same order")

		_, _, err = st.CreateOrder(ctx, orderRequest(a.ID, "crt_2", "key-1", "h2"))
		assert.Equal(t, models.CodeIdempotencyMismatch, models.CodeOf(err), "same key, different body")

		noKey, created, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_1", "", "h1"))
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, first.ID, noKey.ID, "a retry without a key finds the cart's order")

		_, _, err = st.CreateOrder(ctx, orderRequest(a.ID, "crt_1", "", "different"))
		assert.Equal(t, models.CodeCartAlreadyOrdered, models.CodeOf(err))

		_, _, err = st.CreateOrder(ctx, orderRequest(b.ID, "crt_2", "", "h"))
		assert.ErrorIs(t, err, models.ErrCartNotFound, "another account's cart")

		late := orderRequest(a.ID, "crt_2", "", "h")
		late.Now = t0.Add(31 * time.Minute)
		_, _, err = st.CreateOrder(ctx, late)
		assert.ErrorIs(t, err, models.ErrCartNotFound, "expired cart")

		_, err = st.OrderForAccount(ctx, b.ID, models.ModeTest, first.ID)
		assert.ErrorIs(t, err, models.ErrOrderNotFound, "another account cannot read the order by id")
		_, err = st.OrderForAccount(ctx, b.ID, models.ModeTest, first.Number)
		assert.ErrorIs(t, err, models.ErrOrderNotFound, "nor by number")
		_, err = st.OrderForAccount(ctx, a.ID, models.ModeLive, first.Number)
		assert.ErrorIs(t, err, models.ErrOrderNotFound, "nor in the other mode")
		byNum, err := st.OrderForAccount(ctx, a.ID, models.ModeTest, first.Number)
		require.NoError(t, err)
		assert.Equal(t, first.ID, byNum.ID)
	})
}

func TestRecordTransitionIsMonotonicAndIdempotent(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_t", nil)
		d := decimal.RequireFromString

		paidAt := t0.Add(5 * time.Minute)
		paid := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: paidAt, AmountReceived: d("12.50")}
		require.NoError(t, st.RecordTransition(ctx, o.ID, paid, time.Now()))
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: paidAt.Add(time.Hour), AmountReceived: d("12.50")}, time.Now()), "retry")
		// A stale partial-payment write arriving after the paid one changes nothing.
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderCreated, PaymentStatus: models.PaymentPartial, At: t0, AmountReceived: d("5")}, time.Now()))
		// Skipping a step is refused silently (the workflow never does it).
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderDelivered, At: paidAt}, time.Now()))

		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, models.OrderPaid, got.Status)
		assert.Equal(t, models.PaymentConfirmed, got.PaymentStatus)
		assert.Equal(t, "12.5", got.AmountReceived.String())
		assert.True(t, paidAt.Equal(got.Steps[models.OrderPaid]), "first timestamp wins: %v", got.Steps[models.OrderPaid])
		assert.NotContains(t, got.Steps, models.OrderDelivered)

		ship := models.Shipment{Carrier: "Sandbox Express", TrackingNumber: "SBX1", EstimatedDelivery: "2026-11-25"}
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderOrdered, At: paidAt.Add(time.Second)}, time.Now()))
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderShipped, At: paidAt.Add(2 * time.Second), Shipment: &ship}, time.Now()))
		got, err = st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, models.OrderShipped, got.Status)
		assert.Equal(t, ship, got.Shipment)
		steps := got.TrackingSteps()
		require.Len(t, steps, 5)
		assert.True(t, steps[3].Completed)
		assert.False(t, steps[4].Completed)
		assert.Nil(t, steps[4].At)

		assert.ErrorIs(t, st.RecordTransition(ctx, "ord_missing", paid, time.Now()), models.ErrOrderNotFound)
	})
}

func TestPaymentsStoredOnceAndMatched(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		o := newOrder(t, st, a.ID, "crt_p", nil)

		p := models.Payment{ID: "sandbox:1", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("12.5000001"), Memo: o.Number, Sender: "GSENDER", ReceivedAt: t0}
		isNew, err := st.SavePayment(ctx, p, time.Now())
		require.NoError(t, err)
		assert.True(t, isNew)
		isNew, err = st.SavePayment(ctx, p, time.Now())
		require.NoError(t, err)
		assert.False(t, isNew, "the same payment seen twice is stored once")

		id, err := st.OrderIDByNumber(ctx, models.ModeTest, o.Number)
		require.NoError(t, err)
		assert.Equal(t, o.ID, id)
		_, err = st.OrderIDByNumber(ctx, models.ModeLive, o.Number)
		assert.ErrorIs(t, err, models.ErrOrderNotFound, "a test order is never matched by a live payment")

		require.NoError(t, st.SaveMatch(ctx, p, o.ID, time.Now()))
		noWait := func(int) time.Duration { return 0 }
		waiting, err := st.ClaimPaymentRedeliveries(ctx, time.Now().Add(time.Minute), time.Now(), noWait, 10)
		require.NoError(t, err)
		require.Len(t, waiting, 1)
		require.NoError(t, st.RecordPayment(ctx, o.ID, p, time.Now()), "the workflow's write acknowledges it")
		waiting, err = st.ClaimPaymentRedeliveries(ctx, time.Now().Add(time.Minute), time.Now(), noWait, 10)
		require.NoError(t, err)
		assert.Empty(t, waiting)

		manual := models.Payment{ID: "manual:ops-1", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("1"), ReceivedAt: t0.Add(time.Minute)}
		require.NoError(t, st.RecordPayment(ctx, o.ID, manual, time.Now()))
		require.NoError(t, st.RecordPayment(ctx, o.ID, manual, time.Now()))
		ps, err := st.PaymentsForOrder(ctx, o.ID)
		require.NoError(t, err)
		require.Len(t, ps, 2)
		assert.Equal(t, "12.5000001", ps[0].Amount.String(), "amounts are exact to 7 decimals")

		_, err = st.SavePayment(ctx, models.Payment{ID: "sandbox:2", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("3"), Memo: "nope", ReceivedAt: t0}, time.Now())
		require.NoError(t, err)
		toMatch, err := st.PaymentsToMatch(ctx, time.Now().Add(time.Minute), 10)
		require.NoError(t, err)
		require.Len(t, toMatch, 1, "a stored payment waits for the matcher")
		require.NoError(t, st.SaveMatch(ctx, toMatch[0], "", time.Now()))
		unmatched, err := st.Payments(ctx, sqlstore.PaymentUnmatched)
		require.NoError(t, err)
		require.Len(t, unmatched, 1)
		assert.Equal(t, "sandbox:2", unmatched[0].ID)
	})
}

// TestFulfilmentAndListingSnapshotsRoundTrip: a cart line's listing
// snapshot, an order's supplier budget, failure reason and the provider's
// latest report (parcels with checkpoints, charged price) read back as
// written, on both databases.
func TestFulfilmentAndListingSnapshotsRoundTrip(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		d := decimal.RequireFromString
		a := newAccount(t, st, "a")
		item := models.CartItem{ProductURL: "https://www.ebay.com/itm/123456789012?var=42", Marketplace: models.MarketplaceEbay,
			ProductID: "123456789012", Title: "Lamp", ImageURL: "https://i.ebayimg.com/x.jpg", Quantity: 2,
			UnitPrice: d("10.25"), LineTotal: d("20.50"), Currency: "USD", UpstreamID: "v1|123456789012|42", Variation: "42", Listing: "seller_joe"}
		require.NoError(t, st.CreateCart(ctx, models.Cart{
			ID: "crt_snap", AccountID: a.ID, Mode: models.ModeLive, Status: models.CartReady, ShipToCountry: "US",
			Quote: models.Quote{Currency: "USD", Subtotal: d("20.50"), Shipping: d("1.00"), Tax: d("0.50"), ServiceFee: d("1.00"), Total: d("23.00")},
			Items: []models.CartItem{item}, CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
		}))
		cart, err := st.Cart(ctx, a.ID, models.ModeLive, "crt_snap")
		require.NoError(t, err)
		require.Len(t, cart.Items, 1)
		assert.Equal(t, item.UpstreamID, cart.Items[0].UpstreamID)
		assert.Equal(t, item.Listing, cart.Items[0].Listing)
		assert.Equal(t, item.Variation, cart.Items[0].Variation)
		assert.Equal(t, item.Currency, cart.Items[0].Currency)

		req := orderRequest(a.ID, "crt_snap", "", "h")
		req.Mode = models.ModeLive
		build := req.Build
		req.Build = func(c models.Cart) (models.Order, error) {
			o, err := build(c)
			o.SupplierBudget = d("22.00")
			return o, err
		}
		o, _, err := st.CreateOrder(ctx, req)
		require.NoError(t, err)
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.True(t, d("22.00").Equal(got.SupplierBudget), "budget %s", got.SupplierBudget)
		assert.Nil(t, got.Fulfilment, "no snapshot before the order is placed")

		f := models.Fulfilment{
			Ref: "zn_1", Stage: models.FulfilmentPlaced, ProviderStatus: "order_placed", MerchantOrderIDs: []string{"112-1", "112-2"},
			Price: &models.SupplierPrice{Currency: "USD", Subtotal: d("20.50"), Tax: d("1.10"), Total: d("21.60"), Breakdown: true},
			Parcels: []models.Parcel{{Carrier: "ups", TrackingNumber: "1Z999", TrackingURL: "https://track.example/1Z999", Status: models.ParcelInTransit,
				EstimatedDelivery: "2026-11-30", Checkpoints: []models.Checkpoint{{At: t0.Add(time.Hour), Status: "in_transit", Message: "Departed", City: "Memphis", Country: "US"}}}},
		}
		require.NoError(t, st.RecordFulfilment(ctx, o.ID, f, time.Now()))
		got, err = st.OrderForAccount(ctx, a.ID, models.ModeLive, o.Number)
		require.NoError(t, err)
		require.NotNil(t, got.Fulfilment)
		assert.Equal(t, f.Parcels, got.Fulfilment.Parcels)
		assert.Equal(t, f.MerchantOrderIDs, got.Fulfilment.MerchantOrderIDs)
		assert.True(t, f.Price.Total.Equal(got.Fulfilment.Price.Total))

		require.ErrorIs(t, st.RecordFulfilment(ctx, "ord_missing", f, time.Now()), models.ErrOrderNotFound)
	})
}

// TestClientReadMatchesActivityRead: the one-query read clients get
// (aggregates in JSON) gives exactly the order the activities' read (one
// query per table) gives: steps with their times, items in order with
// exact amounts.
func TestClientReadMatchesActivityRead(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		d := decimal.RequireFromString
		require.NoError(t, st.CreateCart(ctx, models.Cart{
			ID: "crt_two", AccountID: a.ID, Mode: models.ModeTest, Status: models.CartReady, ShipToCountry: "US",
			Quote: models.Quote{Currency: "USD", Subtotal: d("30.0123"), Shipping: d("1.00"), Tax: d("0.50"), ServiceFee: d("1.00"), Total: d("32.5123")},
			Items: []models.CartItem{
				{ProductURL: "https://www.amazon.com/dp/B000000002", Marketplace: models.MarketplaceAmazon, ProductID: "B000000002", Title: "second \"quoted\" ünï", ImageURL: "y", Quantity: 2, UnitPrice: d("10.0061"), LineTotal: d("20.0122"), Currency: "USD", UpstreamID: "u", Variation: "v", Listing: "l"},
				{ProductURL: "https://www.ebay.com/itm/123456789012", Marketplace: models.MarketplaceEbay, ProductID: "123456789012", Title: "first", ImageURL: "z", Quantity: 1, UnitPrice: d("10.0001"), LineTotal: d("10.0001")},
			},
			CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
		}))
		o, _, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_two", "", "h"))
		require.NoError(t, err)
		paidAt := t0.Add(90*time.Second + 123456*time.Microsecond)
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: paidAt, AmountReceived: d("32.5123")}, time.Now()))

		want, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		for _, ref := range []string{o.ID, o.Number} {
			got, err := st.OrderForAccount(ctx, a.ID, models.ModeTest, ref)
			require.NoError(t, err)
			assert.Equal(t, want, got, "by %s", ref)
		}
		got, err := st.OrderByNumber(ctx, o.Number)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		require.Len(t, got.Items, 2)
		assert.Equal(t, "B000000002", got.Items[0].ProductID, "items keep their order")
		assert.Equal(t, "10.0061", got.Items[0].UnitPrice.String())
	})
}

// nothingLeftOpen fails the test if a call left a transaction open on the
// store's database (it would hold its locks until its connection closed)
// or a connection checked out of the pool. A transaction whose context was
// cancelled is ended by database/sql in the background, so the check
// waits a little for that.
func nothingLeftOpen(t *testing.T, st *sqlstore.Store) {
	t.Helper()
	sqlDB, err := st.SQLDB()
	require.NoError(t, err)
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Zero(c, sqlDB.Stats().InUse, "connections still checked out of the pool")
		n, err := st.OpenTransactions(context.Background())
		require.NoError(c, err)
		assert.Zero(c, n, "transactions left open")
	}, 5*time.Second, 20*time.Millisecond)
}

// sameOrder compares orders field by field, amounts by value: an amount's
// scale follows where it was read from (the request, or a numeric column).
func sameOrder(t *testing.T, want, got models.Order, msg string) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(w), string(g), msg)
}

// The order CreateOrder returns is the one it stored, as every read and
// every replay returns it: the API answers the POST with it.
func TestCreateOrderReturnsWhatItStored(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		seedCart(t, st, a.ID, "crt_1")
		req := orderRequest(a.ID, "crt_1", "key-1", "h")
		build := req.Build
		req.Build = func(c models.Cart) (models.Order, error) {
			o, err := build(c)
			o.Metadata = map[string]string{"ref": "r-1"}
			return o, err
		}

		created, ok, err := st.CreateOrder(ctx, req)
		require.NoError(t, err)
		require.True(t, ok)
		nothingLeftOpen(t, st)
		assert.Equal(t, created.Number, created.PaymentMemo, "the memo is the order number")
		assert.Equal(t, []models.OrderStatus{models.OrderCreated}, slices.Collect(maps.Keys(created.Steps)))

		read, err := st.Order(ctx, created.ID)
		require.NoError(t, err)
		sameOrder(t, read, created, "as read back")
		replay, ok, err := st.CreateOrder(ctx, req)
		require.NoError(t, err)
		require.False(t, ok)
		sameOrder(t, read, replay, "as replayed")
	})
}

// Every request CreateOrder refuses or answers with an existing order
// ends its transaction and gives its connection back: an open one would
// hold the cart's lock (Postgres) or the database's write lock (SQLite).
// On Postgres the connection goes back to the pool rather than being
// replaced, which would cost a backend start and cold caches.
func TestCreateOrderRefusalsLeaveNothingOpen(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a, b, first := keyedOrder(t, st)

		var pids []int
		if st.Dialect() == sqlstore.DialectPostgres {
			var err error
			pids, err = st.BackendPIDs(ctx)
			require.NoError(t, err)
		}
		late := orderRequest(a.ID, "crt_2", "", "h")
		late.Now = t0.Add(31 * time.Minute)
		for _, c := range []struct {
			name string
			req  models.OrderRequest
			want models.Code // "" for the existing order
		}{
			{"a replay of the cart's order", orderRequest(a.ID, "crt_1", "", "h1"), ""},
			{"a replay of the key's order", orderRequest(a.ID, "crt_1", "key-1", "h1"), ""},
			{"another request for the cart", orderRequest(a.ID, "crt_1", "", "other"), models.CodeCartAlreadyOrdered},
			{"another request under the key", orderRequest(a.ID, "crt_2", "key-1", "h2"), models.CodeIdempotencyMismatch},
			{"another account's cart", orderRequest(b.ID, "crt_2", "", "h"), models.CodeCartNotFound},
			{"no such cart", orderRequest(a.ID, "crt_none", "", "h"), models.CodeCartNotFound},
			{"the cart expired", late, models.CodeCartNotFound},
		} {
			o, created, err := st.CreateOrder(ctx, c.req)
			assert.False(t, created, c.name)
			if c.want == "" {
				assert.NoError(t, err, c.name)
				assert.Equal(t, first.ID, o.ID, c.name)
			} else {
				assert.Equal(t, c.want, models.CodeOf(err), "%s: %v", c.name, err)
			}
			nothingLeftOpen(t, st)
		}
		if pids != nil {
			after, err := st.BackendPIDs(ctx)
			require.NoError(t, err)
			assert.Subset(t, pids, after, "no connection was replaced")
		}
		cart, err := st.Cart(ctx, a.ID, models.ModeTest, "crt_2")
		require.NoError(t, err)
		assert.Equal(t, models.CartReady, cart.Status, "no refusal wrote")
	})
}

// A taken order number rolls the attempt back and CreateOrder mints
// another; when every number it mints is taken it gives up after a few
// attempts, having written nothing.
func TestCreateOrderRetriesATakenNumber(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		a := newAccount(t, st, "a")
		first := newOrder(t, st, a.ID, "crt_1", nil)
		seedCart(t, st, a.ID, "crt_2")

		calls := 0
		taken := orderRequest(a.ID, "crt_2", "", "h")
		taken.NewNumber = func() (string, error) { calls++; return first.Number, nil }
		_, created, err := st.CreateOrder(ctx, taken)
		assert.ErrorIs(t, err, sqlstore.ErrNumberTaken)
		assert.False(t, created)
		assert.Greater(t, calls, 1, "a taken number is minted again")
		nothingLeftOpen(t, st)
		cart, err := st.Cart(ctx, a.ID, models.ModeTest, "crt_2")
		require.NoError(t, err)
		assert.Equal(t, models.CartReady, cart.Status, "nothing was written")

		calls = 0
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
		nothingLeftOpen(t, st)
	})
}

// A request cancelled while its transaction holds the cart writes
// nothing, leaves nothing open, and the cart can still be ordered.
func TestCreateOrderCancelledMidwayWritesNothing(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		a, err := st.EnsureAccount(context.Background(), "a", t0)
		require.NoError(t, err)
		seedCart(t, st, a.ID, "crt_1")

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := orderRequest(a.ID, "crt_1", "", "h")
		build := req.Build
		req.Build = func(c models.Cart) (models.Order, error) {
			cancel() // the cart is locked and read: the client goes away now
			return build(c)
		}
		_, created, err := st.CreateOrder(ctx, req)
		require.ErrorIs(t, err, context.Canceled)
		assert.False(t, created)
		nothingLeftOpen(t, st)

		cart, err := st.Cart(context.Background(), a.ID, models.ModeTest, "crt_1")
		require.NoError(t, err)
		assert.Equal(t, models.CartReady, cart.Status, "nothing was written")
		_, created, err = st.CreateOrder(context.Background(), orderRequest(a.ID, "crt_1", "", "h"))
		require.NoError(t, err)
		assert.True(t, created, "the retry creates the order")
	})
}

// TestWritesAtTheCallersTime: the store writes the time its caller gives
// (the workflow's activity clock, the API's), never its own: a step's
// write, a snapshot, a payment's acknowledgement and the events they
// record all carry it.
func TestWritesAtTheCallersTime(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		ctx := context.Background()
		st.SetEventRenderer(&fakeRenderer{})
		a := newAccount(t, st, "a")
		newEndpoint(t, st, a.ID, models.ModeTest, models.EventAll)
		o := newOrder(t, st, a.ID, "crt_clock", nil)
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

		require.NoError(t, st.RecordFulfilment(ctx, o.ID, models.Fulfilment{Ref: "ref"}, at(5)))
		got, err := st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, at(5), got.UpdatedAt.UTC(), "the snapshot's write")

		p := models.Payment{ID: "sandbox_clock", Mode: models.ModeTest, Asset: "USDC", Amount: decimal.RequireFromString("12.50"), Memo: o.Number, ReceivedAt: at(6)}
		require.NoError(t, st.RecordPayment(ctx, o.ID, p, at(7)))
		ps, err := st.Payments(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.NotNil(t, ps[0].SignaledAt)
		assert.Equal(t, at(7), ps[0].SignaledAt.UTC(), "acknowledged at the caller's time")

		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed,
			At: at(8), AmountReceived: decimal.RequireFromString("12.50")}, at(9)))
		got, err = st.Order(ctx, o.ID)
		require.NoError(t, err)
		assert.Equal(t, at(9), got.UpdatedAt.UTC(), "the step's write")
		evs := eventsOf(t, st, o.ID)
		assert.Equal(t, at(7), evs[models.EventPaymentReceived].RecordedAt.UTC())
		assert.Equal(t, at(9), evs[models.EventOrderPaid].RecordedAt.UTC())
	})
}
