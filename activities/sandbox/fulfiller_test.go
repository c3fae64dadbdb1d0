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

// The next step counts from the last one the order recorded, so a step a
// test helper made early is where the clock counts from.
func TestFulfillerCheckCountsFromTheLastRecordedStep(t *testing.T) {
	paid := time.Date(2026, 12, 30, 23, 30, 0, 0, time.UTC)
	const step = 2 * time.Second
	ordered := paid.Add(100 * time.Millisecond) // moved early by a test helper
	o := sandboxOrder("ord_1", "B0ABC12345")
	o.Steps = map[models.OrderStatus]time.Time{models.OrderPaid: paid, models.OrderOrdered: ordered}
	for _, tc := range []struct {
		after  time.Duration
		status models.OrderStatus
	}{
		{0, models.OrderOrdered}, // never behind the record
		{step - time.Millisecond, models.OrderOrdered},
		{step, models.OrderShipped},
		{2 * step, models.OrderDelivered},
	} {
		f := &Fulfiller{StepDelay: step, now: func() time.Time { return ordered.Add(tc.after) }}
		snap, err := f.Check(t.Context(), o, "SBX-ord_1")
		require.NoError(t, err)
		assert.Equal(t, tc.status, snap.Progress().Status, "%s after the ordered step", tc.after)
	}
	f := &Fulfiller{StepDelay: step, now: func() time.Time { return ordered.Add(2 * step) }}
	snap, err := f.Check(t.Context(), o, "SBX-ord_1")
	require.NoError(t, err)
	require.Len(t, snap.Parcels, 1)
	assert.Equal(t, []time.Time{ordered.Add(2 * step), ordered.Add(step)},
		[]time.Time{snap.Parcels[0].Checkpoints[0].At, snap.Parcels[0].Checkpoints[1].At}, "delivered, then picked up, a step apart")
}

func TestFulfillerMove(t *testing.T) {
	paid := time.Date(2026, 12, 30, 23, 30, 0, 0, time.UTC)
	now := paid.Add(time.Second)
	f := &Fulfiller{StepDelay: time.Hour, now: func() time.Time { return now }}
	o := sandboxOrder("ord_1", "B0ABC12345")
	o.Steps = map[models.OrderStatus]time.Time{models.OrderPaid: paid}
	for _, want := range []models.OrderStatus{models.OrderOrdered, models.OrderShipped, models.OrderDelivered, models.OrderDelivered} {
		snap, err := f.Move(t.Context(), o, "SBX-ord_1", models.TestMove{Advance: true})
		require.NoError(t, err)
		p := snap.Progress()
		assert.Equal(t, want, p.Status, "one step past %v", o.Steps)
		if want == models.OrderShipped {
			assert.Equal(t, now, snap.Parcels[0].Checkpoints[0].At, "picked up now")
		}
		o.Steps[want] = now // as the workflow records it
		// A check made after it is never behind it.
		checked, err := f.Check(t.Context(), o, "SBX-ord_1")
		require.NoError(t, err)
		assert.Equal(t, want, checked.Progress().Status)
	}

	snap, err := f.Move(t.Context(), sandboxOrder("ord_2"), "SBX-ord_2", models.TestMove{Fail: "product_out_of_stock"})
	require.NoError(t, err)
	p := snap.Progress()
	assert.Equal(t, models.OrderFailed, p.Status)
	assert.Equal(t, models.FulfilmentFailureReason("product_out_of_stock"), p.Reason)
	assert.False(t, p.Retry, "a failure placing again cannot cure")
}
