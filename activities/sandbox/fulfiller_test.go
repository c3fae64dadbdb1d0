package sandbox

import (
	"context"
	"errors"
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

func TestFulfillerSource(t *testing.T) {
	tests := []struct {
		name    string
		order   models.Order
		wantRef string
		wantErr error
	}{
		{name: "ordinary items", order: sandboxOrder("ord_1", "B0ABC12345", "B0XYZ98765"), wantRef: "SBX-ord_1"},
		{name: "no items", order: sandboxOrder("ord_2"), wantRef: "SBX-ord_2"},
		{name: "reserved failing product", order: sandboxOrder("ord_3", "B0ABC12345", FailSourcingASIN), wantErr: models.ErrSourcingFailed},
	}
	f := NewFulfiller(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := f.Source(t.Context(), tt.order)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Equal(t, models.CodeSourcingFailed, models.CodeOf(err))
				assert.Empty(t, ref)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantRef, ref)
			// Idempotent: a retry gets the same reference.
			again, err := f.Source(t.Context(), tt.order)
			require.NoError(t, err)
			assert.Equal(t, ref, again)
		})
	}
}

func TestFulfillerShip(t *testing.T) {
	pinned := time.Date(2026, 12, 30, 23, 30, 0, 0, time.FixedZone("UTC-5", -5*3600))
	f := &Fulfiller{now: func() time.Time { return pinned }}
	s, err := f.Ship(t.Context(), sandboxOrder("ord_1", "B0ABC12345"))
	require.NoError(t, err)
	assert.Equal(t, "Sandbox Express", s.Carrier)
	assert.Regexp(t, regexp.MustCompile(`^SBX\d{12}$`), s.TrackingNumber)
	assert.Equal(t, TrackingNumber("ord_1"), s.TrackingNumber)
	// 23:30 at UTC-5 is 04:30 UTC on the 31st; three days on is 3 January.
	assert.Equal(t, "2027-01-03", s.EstimatedDelivery)

	again, err := f.Ship(t.Context(), sandboxOrder("ord_1", "B0ABC12345"))
	require.NoError(t, err)
	assert.Equal(t, s, again, "a retried Ship returns the same shipment")

	other, err := f.Ship(t.Context(), sandboxOrder("ord_2"))
	require.NoError(t, err)
	assert.NotEqual(t, s.TrackingNumber, other.TrackingNumber)
}

func TestFulfillerShipUsesTheClock(t *testing.T) {
	before := time.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
	s, err := NewFulfiller(0).Ship(t.Context(), sandboxOrder("ord_1"))
	require.NoError(t, err)
	after := time.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
	// Either date, should the test straddle midnight UTC.
	assert.Contains(t, []string{before, after}, s.EstimatedDelivery)
}

func TestTrackingNumberPinned(t *testing.T) {
	// Pinned like ShortLinkASIN: client developers script against sandbox
	// tracking numbers.
	assert.Equal(t, "SBX856747842042", TrackingNumber("ord_1"))
	assert.Equal(t, "SBX414100294565", TrackingNumber(""))
}

func TestFulfillerStepDelay(t *testing.T) {
	steps := []struct {
		name string
		run  func(ctx context.Context, f *Fulfiller) error
	}{
		{"source", func(ctx context.Context, f *Fulfiller) error {
			_, err := f.Source(ctx, sandboxOrder("ord_1", "B0ABC12345"))
			return err
		}},
		{"source refusal", func(ctx context.Context, f *Fulfiller) error {
			_, err := f.Source(ctx, sandboxOrder("ord_1", FailSourcingASIN))
			if errors.Is(err, models.ErrSourcingFailed) {
				return nil // the refusal is the expected answer here
			}
			return err
		}},
		{"ship", func(ctx context.Context, f *Fulfiller) error {
			_, err := f.Ship(ctx, sandboxOrder("ord_1"))
			return err
		}},
		{"deliver", func(ctx context.Context, f *Fulfiller) error {
			return f.Deliver(ctx, sandboxOrder("ord_1"))
		}},
	}
	const delay = 50 * time.Millisecond
	for _, step := range steps {
		t.Run(step.name+"/takes StepDelay", func(t *testing.T) {
			start := time.Now()
			require.NoError(t, step.run(t.Context(), NewFulfiller(delay)))
			assert.GreaterOrEqual(t, time.Since(start), delay)
		})
		t.Run(step.name+"/stops when the context is cancelled", func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(20*time.Millisecond, cancel)
			start := time.Now()
			err := step.run(ctx, NewFulfiller(time.Hour))
			require.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(start), 5*time.Second)
		})
		t.Run(step.name+"/refuses an expired context", func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			require.ErrorIs(t, step.run(ctx, NewFulfiller(0)), context.Canceled)
		})
	}
}
