package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// TestStatusObserverCountsEachTransitionOnce: the observer hears every
// status an order enters, once, however often a write is repeated, and
// nothing for writes that change no status.
func TestStatusObserverCountsEachTransitionOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		var mu sync.Mutex
		var heard []models.OrderStatus
		st.SetStatusObserver(func(s models.OrderStatus) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, s)
		})
		ctx := context.Background()
		a := newAccount(t, st, "a")
		seedCart(t, st, a.ID, "crt_obs")
		o, created, err := st.CreateOrder(ctx, orderRequest(a.ID, "crt_obs", "", "h"))
		require.NoError(t, err)
		require.True(t, created)
		_, created, err = st.CreateOrder(ctx, orderRequest(a.ID, "crt_obs", "", "h"))
		require.NoError(t, err)
		require.False(t, created, "the same request again returns the order")

		d := decimal.RequireFromString
		paid := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: t0.Add(time.Minute), AmountReceived: d("12.50")}
		require.NoError(t, st.RecordTransition(ctx, o.ID, paid, time.Now()))
		require.NoError(t, st.RecordTransition(ctx, o.ID, paid, time.Now()), "an activity retried after its commit")
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderCreated, PaymentStatus: models.PaymentPartial, AmountReceived: d("5")}, time.Now()), "stale")
		require.NoError(t, st.RecordTransition(ctx, o.ID, models.Transition{Status: models.OrderOrdered, At: t0.Add(2 * time.Minute)}, time.Now()))

		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []models.OrderStatus{models.OrderCreated, models.OrderPaid, models.OrderOrdered}, heard)
	})
}
