package checkout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
)

const cartID = "crt_0123456789abcdefghijklmn"

// staticRate answers every rate request with the same rate or error.
type staticRate struct {
	rate models.Rate
	err  error
}

func (r staticRate) Rate(_ context.Context, _, _ string) (models.Rate, error) { return r.rate, r.err }

func testSetup() map[models.Mode]checkout.PaymentSetup {
	return map[models.Mode]checkout.PaymentSetup{models.ModeTest: {Address: "GSANDBOX", Network: "sandbox", USDCIssuer: "GISSUER"}}
}

func newCreating(cfg checkout.Config, rates map[models.Mode]checkout.RateProvider) (*checkout.Orders, *fakeOrders, *fakeWorkflows, *fakeEvents) {
	st := newFakeOrders()
	st.cart = models.Cart{
		ID: cartID, Mode: models.ModeTest, Status: models.CartReady, ShipToCountry: "US",
		Quote: models.Quote{Currency: "USD", Subtotal: d("10"), Shipping: d("1"), Tax: d("0.50"), ServiceFee: d("1"), Total: d("12.50")},
	}
	st.events = 1
	wf := &fakeWorkflows{store: st}
	if cfg.Payments == nil {
		cfg.Payments = testSetup()
	}
	ev := &fakeEvents{}
	s, err := checkout.NewOrders(cfg, st, wf, ev, rates, clock, nil)
	if err != nil {
		panic(err)
	}
	return s, st, wf, ev
}

func newOrder(asset string) checkout.NewOrder {
	a, err := models.LookupAsset(asset)
	if err != nil {
		panic(err)
	}
	return checkout.NewOrder{
		AccountID: "acc_1", Mode: models.ModeTest, CartID: cartID, Email: "ada@example.com", Asset: a,
		Address:     models.ShippingAddress{Name: "Ada Lovelace", Line1: "1 Market St", City: "San Francisco", Region: "CA", PostalCode: "94107", Country: "US"},
		RequestHash: "h1",
	}
}

func TestCreateOrder(t *testing.T) {
	t.Run("new: committed, then started and marked", func(t *testing.T) {
		s, st, wf, ev := newCreating(checkout.Config{PaymentWindow: 45 * time.Minute}, nil)
		p, err := s.CreateOrder(t.Context(), newOrder("USDC"))
		require.NoError(t, err)
		assert.True(t, p.Created)
		assert.Equal(t, []string{p.Order.ID}, ev.dispatched, "its creation recorded an event, handed to its delivery")
		assert.Equal(t, "GSANDBOX", p.Order.PaymentAddress)
		assert.Equal(t, t0.Add(45*time.Minute), p.Order.PaymentExpiresAt, "the configured window, from the clock")
		assert.Equal(t, []string{"start:" + p.Order.ID}, wf.calls)
		assert.Equal(t, []string{p.Order.ID}, st.marked)
	})
	t.Run("no subscribed endpoint: nothing to dispatch", func(t *testing.T) {
		s, st, _, ev := newCreating(checkout.Config{}, nil)
		st.events = 0
		_, err := s.CreateOrder(t.Context(), newOrder("USDC"))
		require.NoError(t, err)
		assert.Empty(t, ev.dispatched)
	})
	t.Run("the cart's order exists and runs: returned, not started again", func(t *testing.T) {
		s, st, wf, _ := newCreating(checkout.Config{}, nil)
		o := awaiting()
		o.CartID = cartID
		st.orders[o.ID] = o
		p, err := s.CreateOrder(t.Context(), newOrder("USDC"))
		require.NoError(t, err)
		assert.Equal(t, checkout.Placed{Order: o}, p)
		assert.Empty(t, wf.calls)
	})
	t.Run("the workflow cannot start: the order is saved, the answer says so", func(t *testing.T) {
		s, st, wf, _ := newCreating(checkout.Config{}, nil)
		down := errors.New("temporal: connection refused")
		wf.startErr = map[string]error{"*": down}
		_, err := s.CreateOrder(t.Context(), newOrder("USDC"))
		var ns *checkout.NotStartedError
		require.ErrorAs(t, err, &ns)
		assert.ErrorIs(t, err, down)
		assert.Contains(t, st.orders, ns.OrderID, "committed")
		assert.Empty(t, st.marked)
	})

	// Refusals decided before the store is asked to create anything.
	for _, tc := range []struct {
		name string
		cfg  checkout.Config
		edit func(r *checkout.NewOrder, st *fakeOrders)
		code models.Code
		msg  string
	}{
		{"no cart has an id of that shape", checkout.Config{}, func(r *checkout.NewOrder, _ *fakeOrders) { r.CartID = "cart-1" },
			models.CodeCartNotFound, ""},
		{"the mode cannot take payments", checkout.Config{}, func(r *checkout.NewOrder, _ *fakeOrders) { r.Mode = models.ModeLive },
			models.CodeLiveUnavailable, "Live payments are not configured on this deployment"},
		{"the mode cannot buy", checkout.Config{NoPurchasing: map[models.Mode]string{models.ModeTest: "No buying provider"}}, nil,
			models.CodeLiveUnavailable, "No buying provider"},
		{"the watcher has not started", checkout.Config{Payments: map[models.Mode]checkout.PaymentSetup{
			models.ModeTest: {Address: "GLIVE", Network: "testnet", Watched: true}}}, nil,
			models.CodeLiveUnavailable, "Live payments are starting up; retry in a minute"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			s, st, wf, _ := newCreating(tc.cfg, nil)
			r := newOrder("USDC")
			if tc.edit != nil {
				tc.edit(&r, st)
			}
			_, err := s.CreateOrder(t.Context(), r)
			assert.Equal(t, tc.code, models.CodeOf(err))
			if tc.msg != "" {
				assert.ErrorContains(t, err, tc.msg)
			}
			assert.Empty(t, st.writes(), "the store is not asked")
			assert.Empty(t, wf.calls)
		})
	}

	t.Run("a watched account with a cursor takes orders", func(t *testing.T) {
		s, st, _, _ := newCreating(checkout.Config{Payments: map[models.Mode]checkout.PaymentSetup{
			models.ModeTest: {Address: "GLIVE", Network: "testnet", Watched: true}}}, nil)
		st.cursor = "123"
		_, err := s.CreateOrder(t.Context(), newOrder("USDC"))
		require.NoError(t, err)
	})
}

// An XLM order is quoted at a fresh rate, locked on the order; a stale
// or missing rate refuses a new order, never one that exists.
func TestCreateOrderRate(t *testing.T) {
	fresh := models.Rate{Base: "XLM", Quote: "USD", Price: d("0.25"), Source: "fixed", At: t0.Add(-30 * time.Second)}
	stale := fresh
	stale.At = t0.Add(-2 * time.Minute)
	rates := func(r checkout.RateProvider) map[models.Mode]checkout.RateProvider {
		return map[models.Mode]checkout.RateProvider{models.ModeTest: r}
	}

	s, _, _, _ := newCreating(checkout.Config{RateMaxAge: time.Minute}, rates(staticRate{rate: fresh}))
	p, err := s.CreateOrder(t.Context(), newOrder("XLM"))
	require.NoError(t, err)
	assert.Equal(t, "50", p.Order.PaymentAmount.String(), "12.50 USD at 0.25")
	assert.Equal(t, "fixed", p.Order.RateSource)

	for name, r := range map[string]map[models.Mode]checkout.RateProvider{
		"stale":       rates(staticRate{rate: stale}),
		"unavailable": rates(staticRate{err: errors.New("coinbase: 503")}),
		"no source":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			s, st, wf, _ := newCreating(checkout.Config{RateMaxAge: time.Minute}, r)
			_, err := s.CreateOrder(t.Context(), newOrder("XLM"))
			assert.ErrorIs(t, err, models.NewError(models.CodeRateUnavailable))
			assert.Empty(t, st.orders, "no order built")
			assert.Empty(t, wf.calls)

			// The cart's order exists: the replay needs no rate.
			o := awaiting()
			o.CartID = cartID
			st.orders[o.ID] = o
			p, err := s.CreateOrder(t.Context(), newOrder("XLM"))
			require.NoError(t, err)
			assert.Equal(t, o.ID, p.Order.ID)
		})
	}
}
