package zinc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/zinc"
	"github.com/memocart/memocart/activities/zinc/zinctest"
	"github.com/memocart/memocart/models"
)

// fulfiller mirrors the activities package's Fulfiller interface, which
// this package may not import; the assertion keeps the signatures in step.
type fulfiller interface {
	Place(ctx context.Context, o models.Order, attempt int) (models.Placement, error)
	Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error)
	Schedule() models.PollSchedule
}

var _ fulfiller = (*zinc.Fulfiller)(nil)

var (
	t0      = time.Date(2026, 3, 2, 17, 4, 5, 0, time.UTC)
	timings = zinctest.DefaultTimings
)

type stack struct {
	srv  *zinctest.Server
	ful  *zinc.Fulfiller
	logs *bytes.Buffer
}

func newStack(t *testing.T) *stack {
	t.Helper()
	srv := zinctest.New()
	t.Cleanup(srv.Close)
	srv.SetNow(t0)
	return &stack{srv: srv}
}

// fulfiller returns a fulfiller reaching s with key, logging to s.logs.
func (s *stack) fulfiller(t *testing.T, key string, timeout time.Duration) *zinc.Fulfiller {
	t.Helper()
	c, err := zinc.NewClient(zinc.ClientConfig{BaseURL: s.srv.URL, APIKey: key, Timeout: timeout})
	require.NoError(t, err)
	s.logs = &bytes.Buffer{}
	f, err := zinc.NewFulfiller(zinc.FulfillerConfig{Client: c, Logger: slog.New(slog.NewTextHandler(s.logs, nil))})
	require.NoError(t, err)
	return f
}

func (s *stack) ready(t *testing.T) *stack {
	s.ful = s.fulfiller(t, s.srv.APIKey(), time.Second)
	return s
}

// liveOrder is a paid live order of one product.
func liveOrder(id, productURL string) models.Order {
	mp := models.MarketplaceAmazon
	if strings.Contains(productURL, "ebay.") {
		mp = models.MarketplaceEbay
	}
	return models.Order{
		ID: id, Number: "40000000019", Currency: "USD", SupplierBudget: decimal.RequireFromString("31.25"),
		Items: []models.CartItem{{ProductURL: productURL, Marketplace: mp, Quantity: 1}},
		Address: models.ShippingAddress{
			Name: "Ada Lovelace", Phone: "+1 212 555 0100", Line1: "12 St James's Square",
			City: "New York", Region: "NY", PostalCode: "10001", Country: "US",
		},
	}
}

const normalURL = "https://www.amazon.com/dp/B07JGBW826"

func amazon(asin string) string { return "https://www.amazon.com/dp/" + asin }
func ebay(item string) string   { return "https://www.ebay.com/itm/" + item }

// advanceTo moves the server's clock to d after t0.
func (s *stack) advanceTo(d time.Duration) { s.srv.SetNow(t0.Add(d)) }

func (s *stack) check(t *testing.T, o models.Order, ref string) models.Fulfilment {
	t.Helper()
	f, err := s.ful.Check(t.Context(), o, ref)
	require.NoError(t, err)
	assert.Equal(t, ref, f.Ref)
	return f
}

func TestSchedule(t *testing.T) {
	s := newStack(t).ready(t)
	assert.Equal(t, zinc.DefaultSchedule, s.ful.Schedule())
	assert.Equal(t, 7*time.Minute, zinc.DefaultSchedule.First)

	c, err := zinc.NewClient(zinc.ClientConfig{APIKey: "zn_test_x"})
	require.NoError(t, err)
	f, err := zinc.NewFulfiller(zinc.FulfillerConfig{Client: c, Schedule: models.PollSchedule{Pending: time.Minute}})
	require.NoError(t, err)
	assert.Equal(t, models.PollSchedule{First: 7 * time.Minute, Pending: time.Minute, Ordered: 30 * time.Minute, Shipped: time.Hour}, f.Schedule())

	_, err = zinc.NewFulfiller(zinc.FulfillerConfig{})
	assert.Error(t, err)
}

func TestNormalOrderFromPendingToDelivered(t *testing.T) {
	s := newStack(t).ready(t)
	o := liveOrder("ord_normal000000000000000001", normalURL)

	p, err := s.ful.Place(t.Context(), o, 1)
	require.NoError(t, err)
	require.NotEmpty(t, p.Ref)
	assert.Equal(t, zinc.DefaultSchedule.First, p.CheckAfter)
	rec := s.srv.Orders()
	require.Len(t, rec, 1)
	assert.Equal(t, int64(3125), rec[0].MaxPrice)
	assert.Equal(t, o.ID, rec[0].IdempotencyKey)

	eta := t0.Add(timings.Delivered).Format(time.DateOnly)
	steps := []struct {
		at          time.Duration
		stage       models.FulfilmentStage
		provider    string
		parcel      models.ParcelStatus // "" for no parcel
		checkpoints int
		progress    models.OrderStatus
	}{
		{0, models.FulfilmentPending, "pending", "", 0, models.OrderPaid},
		{timings.Processing, models.FulfilmentPending, "in_progress", "", 0, models.OrderPaid},
		{timings.Placed, models.FulfilmentPlaced, "order_placed", "", 0, models.OrderOrdered},
		{timings.Shipped, models.FulfilmentPlaced, "order_placed", models.ParcelPending, 1, models.OrderShipped},
		{timings.InTransit, models.FulfilmentPlaced, "order_placed", models.ParcelInTransit, 2, models.OrderShipped},
		{(timings.InTransit + timings.Delivered) / 2, models.FulfilmentPlaced, "order_placed", models.ParcelInTransit, 3, models.OrderShipped},
		{timings.Delivered, models.FulfilmentPlaced, "order_placed", models.ParcelDelivered, 4, models.OrderDelivered},
	}
	for _, st := range steps {
		s.advanceTo(st.at)
		f := s.check(t, o, p.Ref)
		assert.Equal(t, st.stage, f.Stage, "at %s", st.at)
		assert.Equal(t, st.provider, f.ProviderStatus, "at %s", st.at)
		assert.Equal(t, st.progress, f.Progress().Status, "at %s", st.at)
		if st.parcel == "" {
			assert.Empty(t, f.Parcels, "at %s", st.at)
			continue
		}
		require.Len(t, f.Parcels, 1, "at %s", st.at)
		pc := f.Parcels[0]
		assert.Equal(t, st.parcel, pc.Status, "at %s", st.at)
		assert.Equal(t, "ups", pc.Carrier)
		assert.NotEmpty(t, pc.TrackingNumber)
		assert.Contains(t, pc.TrackingURL, "https://")
		assert.Equal(t, eta, pc.EstimatedDelivery, "the provider's date, fixed from the start")
		require.Len(t, pc.Checkpoints, st.checkpoints, "at %s", st.at)
		assert.Equal(t, t0.Add(st.at), pc.Checkpoints[0].At, "the most recent checkpoint first")
		if st.stage == models.FulfilmentPlaced {
			require.NotNil(t, f.Price)
			assert.True(t, f.Price.Total.Equal(decimal.RequireFromString("28.12")), "90%% of max_price, got %s", f.Price.Total)
			assert.True(t, f.Price.Breakdown)
			assert.True(t, f.Price.Subtotal.Add(f.Price.Shipping).Add(f.Price.Tax).Equal(f.Price.Total))
			assert.Len(t, f.MerchantOrderIDs, 1)
		}
	}
}

func TestScenarios(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		at       time.Duration
		stage    models.FulfilmentStage
		provider string
		code     string
		retry    bool
		parcels  []models.ParcelStatus
		progress models.OrderStatus
	}{
		{"out of stock at purchase", amazon(zinctest.OutOfStockASIN), timings.Placed, models.FulfilmentFailed, "order_failed", "product_out_of_stock", false, nil, models.OrderFailed},
		{"out of stock, eBay", ebay(zinctest.OutOfStockItem), timings.Placed, models.FulfilmentFailed, "order_failed", "product_out_of_stock", false, nil, models.OrderFailed},
		{"price above max_price", amazon(zinctest.PriceAboveMaxASIN), timings.Placed, models.FulfilmentFailed, "order_failed", "max_price_exceeded", false, nil, models.OrderFailed},
		{"still buying before Placed", amazon(zinctest.OutOfStockASIN), timings.Placed - time.Second, models.FulfilmentPending, "in_progress", "", false, nil, models.OrderPaid},
		{"retailer cancels: placed first", amazon(zinctest.RetailerCancelsASIN), timings.Placed, models.FulfilmentPlaced, "order_placed", "", false, nil, models.OrderOrdered},
		{"retailer cancels", ebay(zinctest.RetailerCancelsItem), timings.Shipped, models.FulfilmentFailed, "cancelled_by_retailer", "cancelled_by_retailer", false, nil, models.OrderFailed},
		{"split: first parcel", amazon(zinctest.SplitShipmentASIN), timings.Shipped, models.FulfilmentPlaced, "order_placed", "", false,
			[]models.ParcelStatus{models.ParcelPending}, models.OrderShipped},
		{"split: both parcels", amazon(zinctest.SplitShipmentASIN), timings.InTransit + timings.SplitLag, models.FulfilmentPlaced, "order_placed", "", false,
			[]models.ParcelStatus{models.ParcelInTransit, models.ParcelInTransit}, models.OrderShipped},
		{"split: one delivered", amazon(zinctest.SplitShipmentASIN), timings.Delivered, models.FulfilmentPlaced, "order_placed", "", false,
			[]models.ParcelStatus{models.ParcelDelivered, models.ParcelInTransit}, models.OrderShipped},
		{"split: both delivered", amazon(zinctest.SplitShipmentASIN), timings.Delivered + timings.SplitLag, models.FulfilmentPlaced, "order_placed", "", false,
			[]models.ParcelStatus{models.ParcelDelivered, models.ParcelDelivered}, models.OrderDelivered},
		{"undeliverable", amazon(zinctest.UndeliverableASIN), timings.Delivered, models.FulfilmentPlaced, "order_placed", "", false,
			[]models.ParcelStatus{models.ParcelUndeliverable}, models.OrderFailed},
		{"undeliverable, still moving", ebay(zinctest.UndeliverableItem), timings.InTransit, models.FulfilmentPlaced, "order_placed", "", false,
			[]models.ParcelStatus{models.ParcelInTransit}, models.OrderShipped},
		{"rate limited on the first attempt", amazon(zinctest.RateLimitedOnceASIN), timings.Placed, models.FulfilmentFailed, "order_failed", "retailer_rate_limited", true, nil, models.OrderFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t).ready(t)
			o := liveOrder("ord_scenario0000000000000001", tt.url)
			p, err := s.ful.Place(t.Context(), o, 1)
			require.NoError(t, err)
			s.advanceTo(tt.at)
			f := s.check(t, o, p.Ref)
			assert.Equal(t, tt.stage, f.Stage)
			assert.Equal(t, tt.provider, f.ProviderStatus)
			assert.Equal(t, tt.code, f.FailureCode)
			assert.Equal(t, tt.retry, f.Retryable)
			if tt.code != "" {
				assert.Equal(t, models.FulfilmentFailureReason(tt.code), f.FailureReason)
			}
			var got []models.ParcelStatus
			for _, pc := range f.Parcels {
				got = append(got, pc.Status)
			}
			assert.Equal(t, tt.parcels, got)
			assert.Equal(t, tt.progress, f.Progress().Status)
			if len(f.Parcels) == 2 {
				assert.Equal(t, "ups", f.Parcels[0].Carrier)
				assert.Equal(t, "fedex", f.Parcels[1].Carrier)
				assert.Len(t, f.MerchantOrderIDs, 2)
			}
		})
	}
}

func TestRateLimitedOnceSucceedsOnTheNextAttempt(t *testing.T) {
	s := newStack(t).ready(t)
	o := liveOrder("ord_ratelimited0000000000001", amazon(zinctest.RateLimitedOnceASIN))

	first, err := s.ful.Place(t.Context(), o, 1)
	require.NoError(t, err)
	s.advanceTo(timings.Placed)
	f := s.check(t, o, first.Ref)
	require.Equal(t, models.FulfilmentFailed, f.Stage)
	require.True(t, f.Retryable, "nothing was bought: placing again may work")

	second, err := s.ful.Place(t.Context(), o, 2)
	require.NoError(t, err)
	assert.NotEqual(t, first.Ref, second.Ref)
	assert.Equal(t, 1, s.srv.OrdersCreated(o.ID+"-2"))
	s.advanceTo(2 * timings.Placed)
	f = s.check(t, o, second.Ref)
	assert.Equal(t, models.FulfilmentPlaced, f.Stage)
}

func TestPlaceIsExactlyOnce(t *testing.T) {
	tests := []struct {
		name  string
		crash func(srv *zinctest.Server)
	}{
		{"500 after creating", func(srv *zinctest.Server) { srv.FailAfterCreate(1) }},
		{"connection cut after creating", func(srv *zinctest.Server) { srv.DropAfterCreate(1) }},
		{"no crash: the activity is retried anyway", func(*zinctest.Server) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t).ready(t)
			o := liveOrder("ord_crash0000000000000000001", normalURL)
			tt.crash(s.srv)

			first, err := s.ful.Place(t.Context(), o, 1)
			crashed := err != nil
			if crashed {
				assert.NotErrorIs(t, err, models.ErrSourcingFailed)
				assert.True(t, zinc.Transient(errors.Unwrap(err)) || zinc.Transient(err))
			}
			again, err := s.ful.Place(t.Context(), o, 1)
			require.NoError(t, err)

			orders := s.srv.Orders()
			require.Len(t, orders, 1, "one order, however many times it was placed")
			assert.Equal(t, orders[0].ID, again.Ref)
			if !crashed {
				assert.Equal(t, first.Ref, again.Ref)
			}
			assert.Equal(t, 1, s.srv.OrdersCreated(o.ID))
			assert.Equal(t, 2, s.srv.CreateRequests(o.ID))
			assert.Equal(t, zinc.DefaultSchedule.First, again.CheckAfter)
		})
	}
}

func TestPlaceRecoveryPicksTheAttemptsOrder(t *testing.T) {
	s := newStack(t).ready(t)
	o := liveOrder("ord_attempts0000000000000001", normalURL)
	var refs []string
	for attempt := 1; attempt <= 3; attempt++ {
		p, err := s.ful.Place(t.Context(), o, attempt)
		require.NoError(t, err)
		refs = append(refs, p.Ref)
	}
	for attempt := 1; attempt <= 3; attempt++ {
		p, err := s.ful.Place(t.Context(), o, attempt)
		require.NoError(t, err)
		assert.Equal(t, refs[attempt-1], p.Ref, "attempt %d", attempt)
	}
	assert.Len(t, s.srv.Orders(), 3)
}

// Recovering a lost create answer must not depend on GET /orders's
// metadata filter, which only Zinc's newest SDK documents: where it is
// ignored, the fulfiller pages back through the orders created since the
// Memocart order and matches their metadata itself.
func TestPlaceRecoveryWithoutTheMetadataFilter(t *testing.T) {
	srv := zinctest.New(zinctest.WithoutMetadataFilter())
	t.Cleanup(srv.Close)
	srv.SetNow(t0)
	s := (&stack{srv: srv}).ready(t)

	o := liveOrder("ord_lostanswer0000000000001", normalURL)
	o.CreatedAt = t0.Add(-time.Minute)
	srv.DropAfterCreate(1)
	_, err := s.ful.Place(t.Context(), o, 1)
	require.Error(t, err, "the create answer was lost")

	// More orders than one page of the listing are placed after it.
	for i := range 150 {
		other := liveOrder(fmt.Sprintf("ord_busy%019d", i), normalURL)
		_, err := s.ful.Place(t.Context(), other, 1)
		require.NoError(t, err)
	}

	p, err := s.ful.Place(t.Context(), o, 1)
	require.NoError(t, err, s.logs.String())
	var want string
	for _, zo := range srv.Orders() {
		if zo.IdempotencyKey == o.ID {
			want = zo.ID
		}
	}
	assert.Equal(t, want, p.Ref)
	assert.Equal(t, 1, srv.OrdersCreated(o.ID), "never placed again")
}

func TestPlaceAlreadyUsedKeyWithoutItsOrderIsRetryable(t *testing.T) {
	s := newStack(t).ready(t)
	o := liveOrder("ord_orphankey000000000000001", normalURL)
	// Someone used the key without Memocart's metadata.
	c, err := zinc.NewClient(zinc.ClientConfig{BaseURL: s.srv.URL, APIKey: s.srv.APIKey()})
	require.NoError(t, err)
	_, err = c.CreateOrder(t.Context(), zinc.CreateOrderRequest{
		Products: []zinc.Product{{URL: normalURL, Quantity: 1}}, MaxPrice: 100, IdempotencyKey: o.ID,
		ShippingAddress: zinc.Address{FirstName: "A", LastName: "B", AddressLine1: "1 Road", City: "C", State: "NY", PostalCode: "10001", PhoneNumber: "5555555555", Country: "US"},
	})
	require.NoError(t, err)

	_, err = s.ful.Place(t.Context(), o, 1)
	require.Error(t, err)
	assert.NotErrorIs(t, err, models.ErrSourcingFailed)
	assert.Len(t, s.srv.Orders(), 1, "never placed again")
	assert.Contains(t, s.logs.String(), "level=ERROR")
}

func TestPlaceRefusals(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *models.Order)
		reason string
	}{
		{"422 out_of_stock at POST", func(o *models.Order) { o.Items[0].ProductURL = amazon(zinctest.RejectedASIN) },
			models.FulfilmentFailureReason("product_out_of_stock")},
		{"422 out_of_stock at POST, eBay", func(o *models.Order) {
			o.Items[0].ProductURL, o.Items[0].Marketplace = ebay(zinctest.RejectedItem), models.MarketplaceEbay
		}, models.FulfilmentFailureReason("product_out_of_stock")},
		{"422 invalid_shipping_address", func(o *models.Order) { o.Address.PostalCode = "1000" },
			"The retailer refused the shipping address."},
		{"one-word name, refused before asking", func(o *models.Order) { o.Address.Name = "Cher" },
			"The retailer needs a first and a last name in the shipping address."},
		{"not USD", func(o *models.Order) { o.Currency = "GBP" },
			"The order can only be bought from the retailer in US dollars."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t).ready(t)
			o := liveOrder("ord_refused00000000000000001", normalURL)
			tt.change(&o)
			_, err := s.ful.Place(t.Context(), o, 1)
			require.ErrorIs(t, err, models.ErrSourcingFailed)
			var me *models.Error
			require.True(t, errors.As(err, &me))
			assert.Equal(t, tt.reason, me.Message)
			assert.Empty(t, s.srv.Orders())
		})
	}
}

func TestPlaceOutagesAreRetryable(t *testing.T) {
	tests := []struct {
		name     string
		key      string // "" for the server's
		inject   func(srv *zinctest.Server)
		errorLog bool
	}{
		{"401 wrong key", "zn_live_revoked", func(*zinctest.Server) {}, true},
		{"402 insufficient funds", "", func(srv *zinctest.Server) { srv.FailNext(http.StatusPaymentRequired, 1) }, true},
		{"403 forbidden", "", func(srv *zinctest.Server) { srv.FailNext(http.StatusForbidden, 1) }, true},
		{"429 rate limited", "", func(srv *zinctest.Server) { srv.RateLimitNext(1) }, false},
		{"500", "", func(srv *zinctest.Server) { srv.FailNext(http.StatusInternalServerError, 1) }, false},
		{"502", "", func(srv *zinctest.Server) { srv.FailNext(http.StatusBadGateway, 1) }, false},
		{"503", "", func(srv *zinctest.Server) { srv.FailNext(http.StatusServiceUnavailable, 1) }, false},
		{"timeout", "", func(srv *zinctest.Server) { srv.SetLatency(500 * time.Millisecond) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t)
			key := tt.key
			if key == "" {
				key = s.srv.APIKey()
			}
			s.ful = s.fulfiller(t, key, 100*time.Millisecond)
			tt.inject(s.srv)
			o := liveOrder("ord_outage000000000000000001", normalURL)

			_, err := s.ful.Place(t.Context(), o, 1)
			require.Error(t, err)
			assert.NotErrorIs(t, err, models.ErrSourcingFailed, "never the customer's failure")
			assert.Equal(t, tt.errorLog, strings.Contains(s.logs.String(), "level=ERROR"), s.logs.String())
			assert.Equal(t, tt.errorLog, strings.Contains(s.logs.String(), "our Zinc account"), "operators are told whose problem it is")
			assert.NotContains(t, s.logs.String(), "St James", "no addresses in logs")

			if tt.key == "" {
				s.srv.SetLatency(0)
				p, err := s.ful.Place(t.Context(), o, 1)
				require.NoError(t, err, "the retry goes through")
				assert.NotEmpty(t, p.Ref)
				assert.Len(t, s.srv.Orders(), 1)
			}
		})
	}
}

func TestCheckErrorsAreRetryable(t *testing.T) {
	s := newStack(t).ready(t)
	o := liveOrder("ord_check00000000000000000001", normalURL)
	p, err := s.ful.Place(t.Context(), o, 1)
	require.NoError(t, err)

	_, err = s.ful.Check(t.Context(), o, "00000000-0000-4000-8000-000000000000")
	require.Error(t, err)
	assert.NotErrorIs(t, err, models.ErrSourcingFailed)
	assert.Contains(t, s.logs.String(), "level=ERROR", "a 404 on our own ref should never happen")

	s.srv.FailNext(http.StatusInternalServerError, 1)
	_, err = s.ful.Check(t.Context(), o, p.Ref)
	require.Error(t, err)
	assert.NotErrorIs(t, err, models.ErrSourcingFailed)

	other := o
	other.ID = "ord_someoneelse0000000000001"
	_, err = s.ful.Check(t.Context(), other, p.Ref)
	assert.Error(t, err, "a ref placed for another order is not this order's state")

	f, err := s.ful.Check(t.Context(), o, p.Ref)
	require.NoError(t, err)
	assert.Equal(t, models.FulfilmentPending, f.Stage)
}

func TestCancelOrder(t *testing.T) {
	s := newStack(t).ready(t)
	c, err := zinc.NewClient(zinc.ClientConfig{BaseURL: s.srv.URL, APIKey: s.srv.APIKey()})
	require.NoError(t, err)
	o := liveOrder("ord_cancel000000000000000001", normalURL)
	p, err := s.ful.Place(t.Context(), o, 1)
	require.NoError(t, err)

	require.NoError(t, c.CancelOrder(t.Context(), p.Ref))
	f := s.check(t, o, p.Ref)
	assert.Equal(t, models.FulfilmentFailed, f.Stage)
	assert.Equal(t, "cancelled", f.FailureCode)
	s.advanceTo(timings.Delivered)
	assert.Equal(t, "cancelled", s.check(t, o, p.Ref).ProviderStatus, "a cancelled order stays cancelled")

	o2 := liveOrder("ord_cancel000000000000000002", normalURL)
	p2, err := s.ful.Place(t.Context(), o2, 1)
	require.NoError(t, err)
	s.srv.Advance(timings.Processing)
	err = c.CancelOrder(t.Context(), p2.Ref)
	var ae *zinc.APIError
	require.True(t, errors.As(err, &ae), "got %v", err)
	assert.Equal(t, http.StatusConflict, ae.HTTPStatus)
	assert.Equal(t, zinc.CodeOrderNotCancellable, ae.Code)
}

// receiver is a webhook endpoint verifying deliveries like production.
type receiver struct {
	secret string
	mu     sync.Mutex
	events []zinc.WebhookEvent
	bad    int
	got    chan struct{}
}

func newReceiver(t *testing.T, secret string) (*receiver, string) {
	r := &receiver{secret: secret, got: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer func() { r.mu.Unlock(); r.got <- struct{}{} }()
		if err := zinc.VerifyWebhook(r.secret, req.Header, body); err != nil {
			r.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		e, err := zinc.ParseWebhook(body)
		if err != nil || req.Header.Get(zinc.EventHeader) != e.Type {
			r.bad++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.events = append(r.events, e)
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// wait waits for n deliveries.
func (r *receiver) wait(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for range n {
		select {
		case <-r.got:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %d webhook deliveries", n)
		}
	}
}

func (r *receiver) types() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, e := range r.events {
		out[e.Type]++
	}
	return out
}

const hookSecret = "zn_whsec_zinctest000000000000000"

func TestWebhooksAreSignedAndVerified(t *testing.T) {
	s, r := withWebhooks(t)
	o := liveOrder("ord_webhook00000000000000001", normalURL)

	p, err := s.ful.Place(t.Context(), o, 1)
	require.NoError(t, err)
	r.wait(t, 1)
	s.advanceTo(timings.Placed)
	r.wait(t, 1)
	s.advanceTo(timings.Delivered)
	r.wait(t, 2) // tracking received, delivered

	assert.Equal(t, map[string]int{"order.started": 1, "order.placed": 1, "order.tracking_received": 1, "order.delivered": 1}, r.types())
	assert.Zero(t, r.bad)
	assert.Equal(t, 4, s.srv.WebhooksSent())
	for _, e := range r.events {
		assert.Equal(t, p.Ref, e.Ref)
		assert.Empty(t, e.OrderID, "Zinc documents no metadata in webhooks")
	}
}

// withWebhooks is a ready stack whose server delivers its events, signed
// with hookSecret, to a new receiver.
func withWebhooks(t *testing.T) (*stack, *receiver) {
	t.Helper()
	s := newStack(t).ready(t)
	r, url := newReceiver(t, hookSecret)
	s.srv.SetWebhook(url, hookSecret)
	return s, r
}

func TestWebhooksSignedWithAnotherSecretAreRejected(t *testing.T) {
	s := newStack(t).ready(t)
	r, url := newReceiver(t, hookSecret)
	s.srv.SetWebhook(url, "zn_whsec_rotatedaway0000000000000")
	_, err := s.ful.Place(t.Context(), liveOrder("ord_webhook00000000000000002", normalURL), 1)
	require.NoError(t, err)
	r.wait(t, 1)
	assert.Equal(t, 1, r.bad)
	assert.Empty(t, r.types())
}

func TestWebhooksDuplicatedDroppedDelayed(t *testing.T) {
	t.Run("duplicated", func(t *testing.T) {
		s, r := withWebhooks(t)
		s.srv.DuplicateWebhooks(true)
		_, err := s.ful.Place(t.Context(), liveOrder("ord_webhook00000000000000003", normalURL), 1)
		require.NoError(t, err)
		r.wait(t, 2)
		require.Equal(t, map[string]int{"order.started": 2}, r.types())
		assert.Equal(t, r.events[0].ID, r.events[1].ID, "a redelivery has the same id, so it can be deduplicated")
		assert.Equal(t, 2, s.srv.WebhooksSent())
	})
	t.Run("dropped", func(t *testing.T) {
		s, r := withWebhooks(t)
		s.srv.DropWebhooks(true)
		_, err := s.ful.Place(t.Context(), liveOrder("ord_webhook00000000000000004", normalURL), 1)
		require.NoError(t, err)
		s.advanceTo(timings.Delivered)
		time.Sleep(100 * time.Millisecond)
		assert.Zero(t, s.srv.WebhooksSent())
		assert.Empty(t, r.types())
	})
	t.Run("delayed", func(t *testing.T) {
		s, r := withWebhooks(t)
		s.srv.DelayWebhooks(150 * time.Millisecond)
		start := time.Now()
		_, err := s.ful.Place(t.Context(), liveOrder("ord_webhook00000000000000005", normalURL), 1)
		require.NoError(t, err)
		r.wait(t, 1)
		assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	})
	t.Run("with metadata", func(t *testing.T) {
		srv := zinctest.New(zinctest.WithWebhookMetadata())
		t.Cleanup(srv.Close)
		s := (&stack{srv: srv}).ready(t)
		r, url := newReceiver(t, hookSecret)
		srv.SetWebhook(url, hookSecret)
		o := liveOrder("ord_webhook00000000000000006", normalURL)
		_, err := s.ful.Place(t.Context(), o, 1)
		require.NoError(t, err)
		r.wait(t, 1)
		require.Len(t, r.events, 1)
		assert.Equal(t, o.ID, r.events[0].OrderID)
	})
}
