package models

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
)

func TestFulfilmentProgress(t *testing.T) {
	ups := func(status ParcelStatus, eta string) Parcel {
		return Parcel{Carrier: "ups", TrackingNumber: "1Z1", Status: status, EstimatedDelivery: eta}
	}
	fedex := func(status ParcelStatus, eta string) Parcel {
		return Parcel{Carrier: "fedex", TrackingNumber: "77", Status: status, EstimatedDelivery: eta}
	}
	placed := func(ps ...Parcel) Fulfilment { return Fulfilment{Stage: FulfilmentPlaced, Parcels: ps} }
	tests := []struct {
		name string
		f    Fulfilment
		want Progress
	}{
		{"pending at the provider", Fulfilment{Stage: FulfilmentPending}, Progress{Status: OrderPaid}},
		{"unknown stage is still being bought", Fulfilment{}, Progress{Status: OrderPaid}},
		{"placed, no parcels yet", placed(), Progress{Status: OrderOrdered}},
		{"label without tracking number", placed(Parcel{Carrier: "ups", Status: ParcelPending}), Progress{Status: OrderOrdered}},
		{"label created with tracking number", placed(ups(ParcelPending, "")),
			Progress{Status: OrderShipped, Shipment: Shipment{Carrier: "ups", TrackingNumber: "1Z1"}}},
		{"in transit", placed(ups(ParcelInTransit, "2026-11-30")),
			Progress{Status: OrderShipped, Shipment: Shipment{Carrier: "ups", TrackingNumber: "1Z1", EstimatedDelivery: "2026-11-30"}}},
		{"delivered", placed(ups(ParcelDelivered, "2026-11-30")),
			Progress{Status: OrderDelivered, Shipment: Shipment{Carrier: "ups", TrackingNumber: "1Z1", EstimatedDelivery: "2026-11-30"}}},
		{"split: the least advanced parcel shows", placed(ups(ParcelDelivered, "2026-11-28"), fedex(ParcelInTransit, "2026-12-02")),
			Progress{Status: OrderShipped, Shipment: Shipment{Carrier: "fedex", TrackingNumber: "77", EstimatedDelivery: "2026-12-02"}}},
		{"split: one parcel not yet with a carrier", placed(ups(ParcelInTransit, ""), Parcel{Status: ParcelPending}), Progress{Status: OrderOrdered}},
		{"split: delivered only when all are", placed(fedex(ParcelDelivered, ""), ups(ParcelDelivered, "")),
			Progress{Status: OrderDelivered, Shipment: Shipment{Carrier: "fedex", TrackingNumber: "77"}}},
		{"an undeliverable parcel fails the order", placed(ups(ParcelDelivered, ""), fedex(ParcelUndeliverable, "")),
			Progress{Status: OrderFailed, Reason: FulfilmentFailureReason("undeliverable")}},
		{"provider failure with its code", Fulfilment{Stage: FulfilmentFailed, FailureCode: "max_price_exceeded"},
			Progress{Status: OrderFailed, Reason: "The retailer's price rose above what was paid for the order."}},
		{"provider failure with a reason", Fulfilment{Stage: FulfilmentFailed, FailureCode: "x", FailureReason: "Seller gone."},
			Progress{Status: OrderFailed, Reason: "Seller gone."}},
		{"retryable failure", Fulfilment{Stage: FulfilmentFailed, FailureCode: "retailer_rate_limited", Retryable: true},
			Progress{Status: OrderFailed, Reason: FulfilmentFailureReason("retailer_rate_limited"), Retry: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.f.Progress())
		})
	}
}

func TestFulfilmentFailureReasonNeverEmpty(t *testing.T) {
	for code, reason := range fulfilmentFailureReasons {
		assert.NotEmpty(t, reason, code)
	}
	assert.Equal(t, "The retailer could not complete the purchase.", FulfilmentFailureReason("checkout_blocked"))
}

func TestPollScheduleNext(t *testing.T) {
	s := PollSchedule{First: 7 * time.Minute, Pending: 4 * time.Minute, Ordered: 30 * time.Minute, Shipped: time.Hour}
	assert.Equal(t, 4*time.Minute, s.Next(OrderPaid))
	assert.Equal(t, 30*time.Minute, s.Next(OrderOrdered))
	assert.Equal(t, time.Hour, s.Next(OrderShipped))
	assert.Equal(t, 4*time.Minute, s.Next(OrderDelivered), "anything else falls back to the pending interval")
	assert.Equal(t, 4*time.Minute, PollSchedule{Pending: 4 * time.Minute}.Next(OrderShipped), "unset falls back too")
}

func TestStepReached(t *testing.T) {
	assert.True(t, StepReached(OrderShipped, OrderOrdered))
	assert.True(t, StepReached(OrderShipped, OrderShipped))
	assert.False(t, StepReached(OrderOrdered, OrderShipped))
	assert.False(t, StepReached(OrderFailed, OrderPaid))
	assert.False(t, StepReached(OrderPaid, OrderFailed))
}

func TestCheckLiveBuyable(t *testing.T) {
	tests := []struct {
		url, country string
		want         Code
	}{
		{"https://www.amazon.com/dp/B0ABC12345", "US", ""},
		{"https://www.ebay.com/itm/123456789012?var=5", "US", ""},
		{"https://www.amazon.de/dp/B0ABC12345", "US", CodeProductUnavailable},
		{"https://www.ebay.co.uk/itm/123456789012", "US", CodeProductUnavailable},
		{"https://www.amazon.com/dp/B0ABC12345", "DE", CodeShippingUnavailable},
		{"", "US", CodeProductUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.url+" to "+tc.country, func(t *testing.T) {
			err := CheckLiveBuyable(Product{ProductURL: tc.url}, tc.country)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tc.want, CodeOf(err))
		})
	}
}

func TestApplyTransition(t *testing.T) {
	d := decimal.RequireFromString
	ship := &Shipment{Carrier: "ups", TrackingNumber: "1Z"}
	tests := []struct {
		name     string
		status   OrderStatus
		received string
		t        Transition
		want     TransitionEffect
	}{
		{"a step forward with its payment", OrderCreated, "0",
			Transition{Status: OrderPaid, PaymentStatus: PaymentConfirmed, AmountReceived: d("10")},
			TransitionEffect{Status: OrderPaid, Payment: true, Step: true}},
		{"a retried write of the current status", OrderPaid, "10",
			Transition{Status: OrderPaid, PaymentStatus: PaymentConfirmed, AmountReceived: d("10")},
			TransitionEffect{Payment: true, Step: true}},
		{"never backwards", OrderShipped, "10",
			Transition{Status: OrderPaid, PaymentStatus: PaymentConfirmed, AmountReceived: d("10")},
			TransitionEffect{}},
		{"a late, smaller amount does not lower what was received", OrderPaid, "12",
			Transition{Status: OrderPaid, PaymentStatus: PaymentConfirmed, AmountReceived: d("10")},
			TransitionEffect{Step: true}},
		{"more money is taken even with a stale status", OrderShipped, "10",
			Transition{Status: OrderOrdered, PaymentStatus: PaymentOverpaid, AmountReceived: d("11")},
			TransitionEffect{Payment: true}},
		{"failed with its reason, refund due", OrderShipped, "10",
			Transition{Status: OrderFailed, PaymentStatus: PaymentRefundDue, AmountReceived: d("10"), Reason: "gone"},
			TransitionEffect{Status: OrderFailed, Reason: "gone", Payment: true, Step: true}},
		{"no skipping along the line", OrderPaid, "10",
			Transition{Status: OrderShipped, PaymentStatus: PaymentConfirmed, AmountReceived: d("10"), Shipment: ship},
			TransitionEffect{Shipment: ship}},
		{"cancelled only from created", OrderPaid, "10",
			Transition{Status: OrderCancelled, PaymentStatus: PaymentRefundDue, AmountReceived: d("10")},
			TransitionEffect{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ApplyTransition(tc.status, d(tc.received), tc.t)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want.Status != "" || tc.want.Payment || tc.want.Shipment != nil, got.Changes())
		})
	}
}

func TestProgressTransitions(t *testing.T) {
	d := decimal.RequireFromString
	at := time.Date(2036, 3, 14, 9, 0, 0, 0, time.UTC)
	ship := Shipment{Carrier: "ups", TrackingNumber: "1Z", EstimatedDelivery: "2036-03-17"}
	later := ship
	later.EstimatedDelivery = "2036-03-19"
	paid := Transition{Status: OrderPaid, PaymentStatus: PaymentOverpaid, AmountReceived: d("11"), At: at.Add(-time.Hour)}
	shipped := paid
	shipped.Status, shipped.Shipment = OrderShipped, &ship
	step := func(from Transition, s OrderStatus, sh *Shipment) Transition {
		from.Status, from.At, from.Shipment = s, at, sh
		return from
	}
	tests := []struct {
		name string
		from Transition
		p    Progress
		want []Transition
	}{
		{"one step", paid, Progress{Status: OrderOrdered}, []Transition{step(paid, OrderOrdered, nil)}},
		{"steps found at once, each written, the shipment from shipped on", paid, Progress{Status: OrderDelivered, Shipment: ship},
			[]Transition{step(paid, OrderOrdered, nil), step(paid, OrderShipped, &ship), step(paid, OrderDelivered, &ship)}},
		{"a new estimate while in transit", shipped, Progress{Status: OrderShipped, Shipment: later},
			[]Transition{step(paid, OrderShipped, &later)}},
		{"delivered with a new estimate: the step, then the shipment", shipped, Progress{Status: OrderDelivered, Shipment: later},
			[]Transition{step(paid, OrderDelivered, &ship), step(paid, OrderDelivered, &later)}},
		{"shipped without a shipment yet", paid, Progress{Status: OrderShipped}, []Transition{step(paid, OrderOrdered, nil), step(paid, OrderShipped, nil)}},
		{"progress behind the order", shipped, Progress{Status: OrderOrdered}, nil},
		{"the same shipment", shipped, Progress{Status: OrderShipped, Shipment: ship}, nil},
		{"a failure is the workflow's", paid, Progress{Status: OrderFailed, Reason: "gone"}, nil},
		{"an order off the steps", Transition{Status: OrderCancelled}, Progress{Status: OrderDelivered, Shipment: ship}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.p.Transitions(tc.from, at))
		})
	}
}

func TestCheckLiveCart(t *testing.T) {
	a, e := Product{Marketplace: MarketplaceAmazon}, Product{Marketplace: MarketplaceEbay}
	assert.NoError(t, CheckLiveCart([]Product{a, a}))
	assert.NoError(t, CheckLiveCart([]Product{e}))
	err := CheckLiveCart([]Product{a, a, e})
	var me *Error
	if assert.ErrorAs(t, err, &me) {
		assert.Equal(t, CodeProductUnavailable, me.Code)
		assert.Equal(t, "items[2].product_url", me.Field)
	}
}

func TestIsCurrencyCode(t *testing.T) {
	for _, ok := range []string{"USD", "EUR", "JPY"} {
		assert.True(t, IsCurrencyCode(ok), ok)
	}
	for _, bad := range []string{"", "usd", "US", "USDC", "U$D"} {
		assert.False(t, IsCurrencyCode(bad), bad)
	}
}

func TestProgressNews(t *testing.T) {
	ship := Shipment{Carrier: "UPS", TrackingNumber: "1Z", EstimatedDelivery: "2026-12-01"}
	later := ship
	later.EstimatedDelivery = "2026-12-03"
	for _, tc := range []struct {
		name     string
		p        Progress
		status   OrderStatus
		shipment Shipment
		want     bool
	}{
		{"still pending at the provider", Progress{Status: OrderPaid}, OrderPaid, Shipment{}, false},
		{"bought", Progress{Status: OrderOrdered}, OrderPaid, Shipment{}, true},
		{"shipped at once", Progress{Status: OrderShipped, Shipment: ship}, OrderPaid, Shipment{}, true},
		{"still in transit", Progress{Status: OrderShipped, Shipment: ship}, OrderShipped, ship, false},
		{"a new estimate", Progress{Status: OrderShipped, Shipment: later}, OrderShipped, ship, true},
		{"behind the order", Progress{Status: OrderOrdered}, OrderShipped, ship, false},
		{"no shipment reported", Progress{Status: OrderShipped}, OrderShipped, ship, false},
		{"failed", Progress{Status: OrderFailed, Reason: "x"}, OrderOrdered, Shipment{}, true},
		{"failed already", Progress{Status: OrderFailed, Reason: "x"}, OrderFailed, Shipment{}, false},
		{"delivered", Progress{Status: OrderDelivered, Shipment: ship}, OrderShipped, ship, true},
		{"advice is no news", Progress{Status: OrderShipped, Shipment: ship, NextCheck: time.Hour}, OrderShipped, ship, false},
	} {
		assert.Equal(t, tc.want, tc.p.News(tc.status, tc.shipment), tc.name)
	}
}
