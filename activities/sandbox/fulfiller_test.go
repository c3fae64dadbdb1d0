package sandbox

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

func sandboxOrder(id string, productIDs ...string) models.Order {
	o := models.Order{ID: id, Mode: models.ModeTest}
	for _, p := range productIDs {
		o.Items = append(o.Items, models.CartItem{Marketplace: models.MarketplaceAmazon, ProductID: p, Quantity: 1})
	}
	return o
}

func TestFulfillerPlace(t *testing.T) {
	tests := []struct {
		name    string
		order   models.Order
		attempt int
		wantRef string
		wantErr error
	}{
		{name: "ordinary items", order: sandboxOrder("ord_1", "B0ABC12345", "B0XYZ98765"), attempt: 1, wantRef: "SBX-ord_1"},
		{name: "second attempt", order: sandboxOrder("ord_1", "B0ABC12345"), attempt: 2, wantRef: "SBX-ord_1-2"},
		{name: "no items", order: sandboxOrder("ord_2"), attempt: 1, wantRef: "SBX-ord_2"},
		{name: "reserved failing product", order: sandboxOrder("ord_3", "B0ABC12345", FailSourcingASIN), attempt: 1, wantErr: models.ErrSourcingFailed},
	}
	f := NewFulfiller(time.Second)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.Place(t.Context(), tt.order, tt.attempt)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Equal(t, models.CodeSourcingFailed, models.CodeOf(err))
				assert.Empty(t, p.Ref)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantRef, p.Ref)
			assert.Equal(t, time.Second, p.CheckAfter)
			// Idempotent: a retry gets the same reference.
			again, err := f.Place(t.Context(), tt.order, tt.attempt)
			require.NoError(t, err)
			assert.Equal(t, p, again)
		})
	}
}

func TestFulfillerCheckFollowsTheClockFromPayment(t *testing.T) {
	paid := time.Date(2026, 12, 30, 23, 30, 0, 0, time.UTC)
	o := sandboxOrder("ord_1", "B0ABC12345")
	o.Steps = map[models.OrderStatus]time.Time{models.OrderPaid: paid}
	const step = 2 * time.Second
	tests := []struct {
		after  time.Duration
		status models.OrderStatus
	}{
		{0, models.OrderPaid},
		{step - time.Millisecond, models.OrderPaid},
		{step, models.OrderOrdered},
		{2 * step, models.OrderShipped},
		{3 * step, models.OrderDelivered},
		{time.Hour, models.OrderDelivered},
	}
	for _, tc := range tests {
		t.Run(tc.after.String(), func(t *testing.T) {
			f := &Fulfiller{StepDelay: step, now: func() time.Time { return paid.Add(tc.after) }}
			snap, err := f.Check(t.Context(), o, "SBX-ord_1")
			require.NoError(t, err)
			assert.Equal(t, "SBX-ord_1", snap.Ref)
			p := snap.Progress()
			assert.Equal(t, tc.status, p.Status)
			if models.StepReached(tc.status, models.OrderShipped) {
				assert.Equal(t, Carrier, p.Shipment.Carrier)
				assert.Regexp(t, regexp.MustCompile(`^SBX\d{12}$`), p.Shipment.TrackingNumber)
				assert.Equal(t, TrackingNumber("ord_1"), p.Shipment.TrackingNumber)
				// Three days after payment, whenever it is asked.
				assert.Equal(t, "2027-01-02", p.Shipment.EstimatedDelivery)
			} else {
				assert.Zero(t, p.Shipment)
			}
		})
	}
}

func TestFulfillerCheckWithoutDelayIsDeliveredAtOnce(t *testing.T) {
	snap, err := NewFulfiller(0).Check(t.Context(), sandboxOrder("ord_1"), "SBX-ord_1")
	require.NoError(t, err)
	assert.Equal(t, models.OrderDelivered, snap.Progress().Status)
}

func TestFulfillerScheduleIsTheStepDelay(t *testing.T) {
	s := NewFulfiller(3 * time.Second).Schedule()
	for _, st := range []models.OrderStatus{models.OrderPaid, models.OrderOrdered, models.OrderShipped} {
		assert.Equal(t, 3*time.Second, s.Next(st))
	}
	assert.Equal(t, 3*time.Second, s.First)
}

func TestFulfillerRefusesAnExpiredContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f := NewFulfiller(0)
	_, err := f.Place(ctx, sandboxOrder("ord_1"), 1)
	require.ErrorIs(t, err, context.Canceled)
	_, err = f.Check(ctx, sandboxOrder("ord_1"), "SBX-ord_1")
	require.ErrorIs(t, err, context.Canceled)
}

func TestTrackingNumberPinned(t *testing.T) {
	// Pinned like ShortLinkASIN: client developers script against sandbox
	// tracking numbers.
	assert.Equal(t, "SBX856747842042", TrackingNumber("ord_1"))
	assert.Equal(t, "SBX414100294565", TrackingNumber(""))
}
