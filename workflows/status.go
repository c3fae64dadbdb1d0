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
// can list orders by number, status and mode in the Temporal UI. Whoever
// runs the Temporal server registers them on the namespace
// (SearchAttributes).
var (
	SearchAttrOrderNumber   = temporal.NewSearchAttributeKeyKeyword("OrderNumber")
	SearchAttrOrderStatus   = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
	SearchAttrPaymentStatus = temporal.NewSearchAttributeKeyKeyword("PaymentStatus")
	// SearchAttrOrderMode is the order's mode, test or live (models.Mode),
	// set when the run starts: test and live orders share a namespace. Not
	// "Mode": Temporal's query parser takes MODE for an SQL keyword, and
	// `Mode = "live"` is refused as an invalid search attribute.
	SearchAttrOrderMode = temporal.NewSearchAttributeKeyKeyword("OrderMode")
)

// StatusView is what QueryStatus returns: a small snapshot for operators
// and the API. Its amounts mean what the API's payment fields of the same
// names mean, so an operator comparing the two reads one vocabulary.
type StatusView struct {
	Status        models.OrderStatus
	PaymentStatus models.PaymentStatus
	// Total is what the order costs in its payment asset (the API's
	// payment.amount).
	Total          decimal.Decimal
	AmountReceived decimal.Decimal
	// AmountDue is what is still to pay: zero once the order no longer
	// waits for payment (the API's payment.amount_due).
	AmountDue       decimal.Decimal
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
		Total:           o.in.PaymentAmount,
		AmountReceived:  o.pay.tally.Received,
		AmountDue:       decimal.Zero,
		PaymentDeadline: o.in.PaymentDeadline,
		PaymentsCounted: len(o.pay.tally.Seen),
		Shipment:        o.shipment,
		Cancellation:    o.cancellation,
	}
	if o.status == models.OrderCreated {
		v.AmountDue = o.pay.tally.Remaining()
	}
	return v, nil
}

// setDetails sets the note shown under the order's state in the
// workflow's current details.
func (o *order) setDetails(note string) {
	o.book.note = note
	o.showDetails()
}

// showDetails sets the workflow's current details, which the Temporal UI
// shows on the workflow's page (Current Details): the order's state in
// words and the note. Everything that changes is said here, not in the
// static details, which are fixed at start. It records nothing in the
// history, so it may change freely without a version.
func (o *order) showDetails() {
	note := o.book.note
	d := fmt.Sprintf("**%s**, payment **%s**, received %s of %s %s", o.status, o.paymentStatus(),
		o.pay.tally.Received.String(), o.in.PaymentAmount.String(), o.in.PaymentAsset)
	if o.status == models.OrderCreated {
		d += fmt.Sprintf("\n\nAwaiting payment of **%s %s**, memo `%s`, until %s.", o.pay.tally.Remaining().String(),
			o.in.PaymentAsset, o.in.OrderNumber, o.in.PaymentDeadline.UTC().Format(time.RFC3339))
	}
	if o.reason != "" {
		d += "\n\nReason: " + o.reason
	}
	if o.detail != "" {
		d += "\n\nProvider's detail: `" + o.detail + "`"
	}
	if note != "" {
		d += "\n\n" + note
	}
	workflow.SetCurrentDetails(o.bg, d)
}
