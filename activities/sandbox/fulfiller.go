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
// order's last recorded step. Every answer is a function of the order (its
// id and its recorded steps) and the clock, so Place and Check are
// idempotent and survive restarts with no state of their own. The reserved
// FailSourcingASIN makes Place refuse the order; Move makes a test
// helper's step or failure happen now.
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

// Check reports how far the order has come: one step (ordered, then
// shipped in one Sandbox Express parcel, then delivered) every StepDelay
// after the last step the order recorded from paid on. Counting from the
// order's own record, not from its payment alone, lets a test helper's
// step (Move) be where the next one counts from.
func (f *Fulfiller) Check(ctx context.Context, o models.Order, ref string) (models.Fulfilment, error) {
	if err := ctx.Err(); err != nil {
		return models.Fulfilment{}, err
	}
	return f.snapshot(o, ref, false), nil
}

// Move makes a test helper's move now: the order's next step happens (one
// step past both its record and the clock's count), or sourcing fails
// for the move's failure code, as a retailer cancelling the purchase.
func (f *Fulfiller) Move(ctx context.Context, o models.Order, ref string, m models.TestMove) (models.Fulfilment, error) {
	if err := ctx.Err(); err != nil {
		return models.Fulfilment{}, err
	}
	if m.Fail != "" {
		return models.Fulfilment{Ref: ref, Stage: models.FulfilmentFailed, ProviderStatus: "cancelled",
			FailureCode: m.Fail, FailureReason: models.FulfilmentFailureReason(m.Fail)}, nil
	}
	return f.snapshot(o, ref, m.Advance), nil
}

// snapshot is the order at the provider now, one step further if advance.
func (f *Fulfiller) snapshot(o models.Order, ref string, advance bool) models.Fulfilment {
	now := f.clock()
	paidAt, ok := o.Steps[models.OrderPaid]
	if !ok {
		paidAt = now
	}
	// The last step recorded, from paid on, and the steps since it.
	last, lastAt := 0, paidAt
	for i, step := range sandboxSteps {
		if at, ok := o.Steps[step]; ok {
			last, lastAt = i, at
		}
	}
	reached := len(sandboxSteps) - 1
	if f.StepDelay > 0 {
		reached = min(last+int(now.Sub(lastAt)/f.StepDelay), reached)
	}
	if advance {
		reached = min(max(reached, last+1), len(sandboxSteps)-1)
	}
	// When a step not recorded yet happened: StepDelay after the one
	// before it, or now if a move made it early.
	at := func(i int) time.Time {
		if t, ok := o.Steps[sandboxSteps[i]]; ok {
			return t.UTC()
		}
		t := lastAt.Add(time.Duration(i-last) * f.StepDelay)
		if t.After(now) {
			t = now
		}
		return t.UTC()
	}

	out := models.Fulfilment{Ref: ref, Stage: models.FulfilmentPending, ProviderStatus: "pending"}
	if reached < 1 {
		return out
	}
	out.Stage, out.ProviderStatus, out.MerchantOrderIDs = models.FulfilmentPlaced, "placed", []string{"SBX-M-" + o.ID}
	if reached < 2 {
		return out
	}
	parcel := models.Parcel{
		Carrier:        Carrier,
		TrackingNumber: TrackingNumber(o.ID),
		Status:         models.ParcelInTransit,
		// The provider's date: a function of the order, never of the
		// moment it is asked.
		EstimatedDelivery: paidAt.UTC().AddDate(0, 0, transitDays).Format(time.DateOnly),
		Checkpoints:       []models.Checkpoint{{At: at(2), Status: "in_transit", Message: "Picked up by Sandbox Express"}},
	}
	if reached >= 3 {
		parcel.Status = models.ParcelDelivered
		parcel.Checkpoints = append([]models.Checkpoint{{At: at(3), Status: "delivered", Message: "Delivered"}}, parcel.Checkpoints...)
	}
	out.Parcels = []models.Parcel{parcel}
	return out
}

// sandboxSteps are the steps the sandbox moves an order through, by index:
// the tracking steps from paid on.
var sandboxSteps = models.OrderSteps[1:]

func (f *Fulfiller) clock() time.Time {
	if f.now != nil {
		return f.now()
	}
	return time.Now()
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
