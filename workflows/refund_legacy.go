package workflows

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// The order-side wait for a refund an operator sends by hand, for Order
// runs from before refund-payouts (changeRefundPayouts, which hands what
// an order owes to Refund workflows instead: handOverRefunds). Such a run
// waits for `memocart payments mark-refunded` (UpdateRecordRefund) up to
// RefundWait. Delete this file, the update's registration and
// changeRefundPayouts's DefaultVersion path once no such run is open:
// `WorkflowType = "Order" AND ExecutionStatus = "Running" AND StartTime <
// "2026-11-26T14:07:00Z"` (commit 5832129; the deploy's time if later)
// finds none, at the latest RefundWait after that deploy.

// RefundWait bounds how long the workflow of an order that ended owing
// money stays open for its refund to be recorded. Past it, the workflow
// closes with PaymentStatus refund_due and the database alone holds the
// refund (memocart payments list, mark-refunded).
const RefundWait = 90 * 24 * time.Hour

// RefundRequest is UpdateRecordRefund's input.
type RefundRequest struct {
	TxHash string // the chain transaction that sent the money back
	// Amount is what the operator sent back: the order's amount received
	// as the operator saw it. A payment credited since makes the update
	// fail, so a refund never covers money the operator did not send.
	Amount     decimal.Decimal
	RecordedBy string `json:",omitempty"`
}

// RefundResult is UpdateRecordRefund's answer.
type RefundResult struct {
	PaymentStatus models.PaymentStatus
	Amount        decimal.Decimal
}

// owesRefund reports whether the order's refund goes through this
// workflow (models.RouteOrderRefund), asked of the workflow's own state:
// the order ended holding money it credited, not yet sent back. Single
// payments due back on their own (another asset, late) are the
// database's: they never make the workflow wait.
func (o *order) owesRefund() bool {
	return models.RouteOrderRefund(o.status, o.paymentStatus(), o.pay.tally.Received) == models.RefundThroughWorkflow
}

// awaitRefund keeps the workflow open while the order owes a refund, until
// an operator records it (UpdateRecordRefund), RefundWait passes, or the
// workflow is cancelled (an operator giving up the wait: the order is
// closed already, so nothing else changes).
func (o *order) awaitRefund(ctx workflow.Context) {
	if !o.owesRefund() {
		return
	}
	until := workflow.Now(ctx).Add(RefundWait)
	o.setDetails(fmt.Sprintf("Waiting until %s for the refund of **%s %s**: `memocart payments mark-refunded --order %s --tx <hash>`",
		until.UTC().Format(time.DateOnly), o.pay.tally.Received.String(), o.in.PaymentAsset, o.in.OrderNumber))
	o.logger.Info("Order owes a refund; waiting for it to be recorded", "Until", until, "AmountReceived", o.pay.tally.Received.String())
	ok, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
		Timeout:      RefundWait,
		TimerOptions: workflow.TimerOptions{Summary: "refund wait"},
	}, func() bool { return o.refund.recorded })
	switch {
	case err != nil:
		o.logger.Warn("Workflow cancelled while waiting for the refund; closing with the refund due", "Error", err)
	case !ok:
		o.logger.Warn("No refund recorded in time; closing with the refund due (memocart payments list)", "Waited", RefundWait)
	}
	o.setDetails("")
}

// validateRefund accepts a refund of an order that ended owing the money
// it received, for exactly that amount. It only reads state.
func (o *order) validateRefund(_ workflow.Context, r RefundRequest) error {
	switch {
	case r.TxHash == "":
		return refusal(models.FieldError(models.CodeInvalidRequest, "tx_hash", "TxHash is required"))
	case !o.owesRefund():
		return refusal(models.Errorf(models.CodeInvalidRequest, "Order %s owes no refund here: it is %s, payment %s",
			o.in.OrderNumber, o.status, o.paymentStatus()))
	case !r.Amount.Equal(o.pay.tally.Received):
		return refusal(models.Errorf(models.CodeInvalidRequest, "Order %s has received %s %s, not %s: list the refunds again",
			o.in.OrderNumber, o.pay.tally.Received.String(), o.in.PaymentAsset, r.Amount.String()))
	}
	return nil
}

// recordRefund handles UpdateRecordRefund: once every payment taken in is
// recorded, it writes the refund under the write lock, so no write of the
// workflow's can come between, and from then on payments are late.
func (o *order) recordRefund(ctx workflow.Context, r RefundRequest) (RefundResult, error) {
	bg, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(bg, o.idle); err != nil {
		return RefundResult{}, err
	}
	if err := o.persist.writeMu.Lock(bg); err != nil {
		return RefundResult{}, err
	}
	defer o.persist.writeMu.Unlock()
	// A payment may have been credited while this waited.
	if err := o.validateRefund(bg, r); err != nil {
		return RefundResult{}, err
	}
	// From here on a payment is not credited: the refund being written
	// covers exactly the amount checked above, so a payment arriving while
	// it is written is late (due back on its own), never counted into
	// money the database will call refunded.
	o.refund.writing = true
	var a *activities.Payments
	var old *activities.Positional
	summary := fmt.Sprintf("Record the refund of %s %s", r.Amount.String(), o.in.PaymentAsset)
	at := workflow.Now(bg)
	sc := o.shaped(call{fn: a.RecordRefund, in: activities.RecordRefundInput{OrderNumber: o.in.OrderNumber, TxHash: r.TxHash, At: at},
		old: old.RecordRefund, args: []any{o.in.OrderNumber, r.TxHash, at}})
	if err := workflow.ExecuteActivity(withOptions(bg, storeOptions(summary)), sc.fn, sc.args...).Get(bg, nil); err != nil {
		o.refund.writing = false
		return RefundResult{}, err
	}
	o.refund.recorded = true
	o.logger.Info("Refund recorded", "TxHash", r.TxHash, "RecordedBy", r.RecordedBy, "Amount", r.Amount.String())
	// The database says refunded already (the activity wrote it): mirror
	// it without writing the order again.
	t := o.transition()
	if err := workflow.UpsertTypedSearchAttributes(bg, SearchAttrPaymentStatus.ValueSet(string(t.PaymentStatus))); err != nil {
		return RefundResult{}, err
	}
	o.persist.attrs[1] = string(t.PaymentStatus)
	o.persist.written = t
	return RefundResult{PaymentStatus: t.PaymentStatus, Amount: r.Amount}, nil
}
