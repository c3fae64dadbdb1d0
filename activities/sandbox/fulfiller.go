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

// transitDays is how far out a sandbox shipment's estimated delivery is,
// counted from the day the order was paid.
const transitDays = 3

// Fulfiller is the test-mode fulfiller: it "buys", ships and delivers any
// order without touching a marketplace, one step every StepDelay after the
// order was paid. Every answer is a function of the order (its id and the
// time of its paid step) and the clock, so Place and Check are idempotent
// and survive restarts with no state of their own. The reserved
// FailSourcingASIN makes Place refuse the order.
type Fulfiller struct {
	// StepDelay is how long each step (ordered, shipped, delivered) takes
	// after the previous one, so clients polling a test order see it move
	// through every status.
	StepDelay time.Duration

	now func() time.Time // tests pin the clock
}

// NewFulfiller returns a sandbox fulfiller whose steps each take stepDelay.
func NewFulfiller(stepDelay time.Duration) *Fulfiller {
	return &Fulfiller{StepDelay: stepDelay}
}

// Place pretends to buy the order's items and returns "SBX-<order id>"
// (with "-<attempt>" after the first attempt). An order containing
// FailSourcingASIN is refused with an error wrapping
// models.ErrSourcingFailed, as a buying provider refuses an item it cannot
// sell.
func (f *Fulfiller) Place(ctx context.Context, o models.Order, attempt int) (models.Placement, error) {
	if err := ctx.Err(); err != nil {
		return models.Placement{}, err
	}
	for _, it := range o.Items {
		if it.ProductID == FailSourcingASIN {
			return models.Placement{}, fmt.Errorf("sandbox fulfiller: order %s: product %s: %w", o.ID, it.ProductID,
				models.Errorf(models.CodeSourcingFailed, "%s", models.FulfilmentFailureReason("product_unavailable")))
		}
	}
	ref := "SBX-" + o.ID
	if attempt > 1 {
		ref += fmt.Sprintf("-%d", attempt)
	}
	return models.Placement{Ref: ref, CheckAfter: f.StepDelay}, nil
}

// Check reports how far the order has come: ordered one StepDelay after it
// was paid, shipped (one Sandbox Express parcel) after two, delivered after
// three.
func (f *Fulfiller) Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error) {
	if err := ctx.Err(); err != nil {
		return models.Fulfilment{}, err
	}
	now := time.Now
	if f.now != nil {
		now = f.now
	}
	paidAt, ok := o.Steps[models.OrderPaid]
	if !ok {
		paidAt = now()
	}
	steps := 3
	if f.StepDelay > 0 {
		steps = int(now().Sub(paidAt) / f.StepDelay)
	}
	out := models.Fulfilment{Ref: ref, Stage: models.FulfilmentPending, ProviderStatus: "pending"}
	if steps < 1 {
		return out, nil
	}
	out.Stage, out.ProviderStatus, out.MerchantOrderIDs = models.FulfilmentPlaced, "placed", []string{"SBX-M-" + o.ID}
	if steps < 2 {
		return out, nil
	}
	parcel := models.Parcel{
		Carrier:        Carrier,
		TrackingNumber: TrackingNumber(o.ID),
		Status:         models.ParcelInTransit,
		// The provider's date: a function of the order, never of the
		// moment it is asked.
		EstimatedDelivery: paidAt.UTC().AddDate(0, 0, transitDays).Format(time.DateOnly),
		Checkpoints:       []models.Checkpoint{{At: paidAt.Add(2 * f.StepDelay).UTC(), Status: "in_transit", Message: "Picked up by Sandbox Express"}},
	}
	if steps >= 3 {
		parcel.Status = models.ParcelDelivered
		parcel.Checkpoints = append([]models.Checkpoint{{At: paidAt.Add(3 * f.StepDelay).UTC(), Status: "delivered", Message: "Delivered"}}, parcel.Checkpoints...)
	}
	out.Parcels = []models.Parcel{parcel}
	return out, nil
}

// Schedule checks once per step.
func (f *Fulfiller) Schedule() models.PollSchedule {
	return models.PollSchedule{First: f.StepDelay, Pending: f.StepDelay, Ordered: f.StepDelay, Shipped: f.StepDelay}
}

// TrackingNumber returns the sandbox tracking number of an order: "SBX"
// and twelve digits from a hash of the order id. Exported so tests
// elsewhere can predict it.
func TrackingNumber(orderID string) string {
	sum := sha256.Sum256([]byte("tracking:" + orderID))
	return fmt.Sprintf("SBX%012d", binary.BigEndian.Uint64(sum[:8])%1_000_000_000_000)
}
