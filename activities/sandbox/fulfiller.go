package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/memocart/memocart/models"
)

// Carrier is the carrier every sandbox shipment travels with.
const Carrier = "Sandbox Express"

// transitDays is how far out a sandbox shipment's estimated delivery is.
const transitDays = 3

// Fulfiller is the test-mode fulfiller: it "buys", ships and delivers any
// order after StepDelay per step, without touching a marketplace. Every
// answer is derived from the order id, so retries are idempotent. The
// reserved FailSourcingASIN makes Source refuse the order.
//
// The one exception to the package's no-clock rule is the estimated
// delivery date, which is relative to the day the order ships.
type Fulfiller struct {
	// StepDelay is how long each step (source, ship, deliver) takes, so
	// clients polling a test order see it move through every status.
	StepDelay time.Duration

	now func() time.Time // tests pin the clock
}

// NewFulfiller returns a sandbox fulfiller whose steps each take stepDelay.
func NewFulfiller(stepDelay time.Duration) *Fulfiller {
	return &Fulfiller{StepDelay: stepDelay}
}

// Source pretends to buy the order's items and returns "SBX-<order id>".
// An order containing FailSourcingASIN is refused with an error wrapping
// models.ErrSourcingFailed, after the same delay a real refusal would take.
func (f *Fulfiller) Source(ctx context.Context, o models.Order) (string, error) {
	if err := f.wait(ctx); err != nil {
		return "", err
	}
	for _, it := range o.Items {
		if it.ProductID == FailSourcingASIN {
			return "", fmt.Errorf("sandbox fulfiller: order %s: product %s cannot be sourced: %w",
				o.ID, it.ProductID, models.ErrSourcingFailed)
		}
	}
	return "SBX-" + o.ID, nil
}

// Ship waits StepDelay and returns a Sandbox Express shipment whose
// tracking number is derived from the order id.
func (f *Fulfiller) Ship(ctx context.Context, o models.Order) (models.Shipment, error) {
	if err := f.wait(ctx); err != nil {
		return models.Shipment{}, err
	}
	now := time.Now
	if f.now != nil {
		now = f.now
	}
	return models.Shipment{
		Carrier:           Carrier,
		TrackingNumber:    TrackingNumber(o.ID),
		EstimatedDelivery: now().UTC().AddDate(0, 0, transitDays).Format(time.DateOnly),
	}, nil
}

// Deliver waits StepDelay; every sandbox parcel arrives.
func (f *Fulfiller) Deliver(ctx context.Context, o models.Order) error {
	return f.wait(ctx)
}

// TrackingNumber returns the sandbox tracking number of an order: "SBX"
// and twelve digits from a hash of the order id. Exported so tests
// elsewhere can predict it.
func TrackingNumber(orderID string) string {
	sum := sha256.Sum256([]byte("tracking:" + orderID))
	return fmt.Sprintf("SBX%012d", binary.BigEndian.Uint64(sum[:8])%1_000_000_000_000)
}

// wait sleeps StepDelay or until ctx is done, whichever comes first.
func (f *Fulfiller) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.StepDelay <= 0 {
		return nil
	}
	t := time.NewTimer(f.StepDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
