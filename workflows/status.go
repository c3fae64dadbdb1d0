package workflows

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// Search attributes (all Keyword) the workflow keeps current, so operators
// can list orders by number and status in the Temporal UI. Whoever runs
// the Temporal server registers them on the namespace.
var (
	SearchAttrOrderNumber   = temporal.NewSearchAttributeKeyKeyword("OrderNumber")
	SearchAttrOrderStatus   = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
	SearchAttrPaymentStatus = temporal.NewSearchAttributeKeyKeyword("PaymentStatus")
)

// StatusView is what QueryStatus returns: a small snapshot for operators
// and the API.
type StatusView struct {
	Status          models.OrderStatus
	PaymentStatus   models.PaymentStatus
	AmountDue       decimal.Decimal
	AmountReceived  decimal.Decimal
	AmountRemaining decimal.Decimal // zero once the order no longer waits for payment
	PaymentDeadline time.Time
	PaymentsCounted int // payments credited towards the amount due
	Shipment        models.Shipment
	// Cancellation says why a cancelled order was cancelled.
	Cancellation models.CancellationReason `json:",omitempty"`
}

// view answers QueryStatus.
func (o *order) view() (StatusView, error) {
	v := StatusView{
		Status:          o.status,
		PaymentStatus:   o.paymentStatus(),
		AmountDue:       o.in.PaymentAmount,
		AmountReceived:  o.tally.Received,
		AmountRemaining: decimal.Zero,
		PaymentDeadline: o.in.PaymentDeadline,
		PaymentsCounted: len(o.tally.Seen),
		Shipment:        o.shipment,
		Cancellation:    o.cancellation,
	}
	if o.status == models.OrderCreated {
		v.AmountRemaining = o.tally.Remaining()
	}
	return v, nil
}

// setDetails sets the note shown under the order's state in the
// workflow's current details.
func (o *order) setDetails(note string) {
	o.note = note
	o.showDetails()
}

// showDetails sets the workflow's current details, which the Temporal UI
// shows on the workflow's page (Current Details): the order's state in
// words and the note. It records nothing in the history, so it may change
// freely without a version.
func (o *order) showDetails() {
	note := o.note
	d := fmt.Sprintf("**%s**, payment **%s**, received %s of %s %s", o.status, o.paymentStatus(),
		o.tally.Received.String(), o.in.PaymentAmount.String(), o.in.PaymentAsset)
	if o.reason != "" {
		d += "\n\nReason: " + o.reason
	}
	if note != "" {
		d += "\n\n" + note
	}
	workflow.SetCurrentDetails(o.bg, d)
}
