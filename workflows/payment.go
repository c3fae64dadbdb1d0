package workflows

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// PaymentSignal is one incoming payment matched to the order by its memo.
// PaymentID is unique per source and network; the workflow counts each id
// once, so the matcher may deliver a payment more than once.
type PaymentSignal struct {
	PaymentID  string
	Asset      string
	Amount     decimal.Decimal
	ReceivedAt time.Time
	Memo       string
	Sender     string
}

// awaitPayment waits until the order is paid, an operator cancels it, or
// the deadline passes, and moves it to paid or cancelled.
func (o *order) awaitPayment(ctx workflow.Context) error {
	settled := func() bool { return o.cancelReq != nil || o.pay.tally.Paid() }
	if wait := o.in.PaymentDeadline.Sub(workflow.Now(ctx)); wait > 0 {
		if err := o.awaitDeadline(ctx, wait, settled); err != nil {
			return err
		}
	}
	// Signals delivered together with the deadline, or before a run that
	// started already past it, have not reached the coroutines yet. They
	// arrived in time as far as the workflow can tell, so they count.
	o.acceptBuffered()
	status, unpaidClose, reason, cancellation := paymentOutcome(o.cancelReq, o.pay.tally.Paid())
	o.set(ctx, status, unpaidClose, reason)
	o.cancellation = cancellation
	o.logger.Info("Payment wait over", "Status", o.status, "PaymentStatus", o.paymentStatus(),
		"AmountReceived", o.pay.tally.Received.String(), "Reason", reason)
	return nil
}

// awaitDeadline waits until settled or the payment deadline's timer
// fires, and ends the timer when settled first, so that a paid or
// cancelled order shows no pending payment deadline in the Temporal UI.
// It waits as workflow.AwaitWithOptions does (the SDK's own await leaves
// its timer running): the same timer, and a first look at settled only
// after yielding once, so the commands of runs recorded with it come in
// the same order.
func (o *order) awaitDeadline(ctx workflow.Context, wait time.Duration, settled func() bool) error {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimerWithOptions(timerCtx, wait, workflow.TimerOptions{Summary: "payment deadline"})
	yielded := false
	if err := workflow.Await(ctx, func() bool {
		if !yielded {
			yielded = true
			return false
		}
		return settled() || ctx.Err() != nil || timer.IsReady() || o.expireNow
	}); err != nil {
		return err
	}
	switch {
	case settled():
	case ctx.Err() != nil:
		// The workflow was cancelled: its context ended the timer.
		return temporal.NewCanceledError("payment wait cancelled")
	case o.expireNow && !timer.IsReady():
		// The test helper's deadline came first: end the timer, as a
		// settled order does, and close as the deadline would.
		cancelTimer()
		return nil
	default:
		return nil // the deadline passed
	}
	// Old runs: a run settled before cancel-payment-deadline was deployed
	// has no marker here and leaves its timer to fire. Drop the check
	// (cancel unconditionally) once no such run is open, that is when
	// `WorkflowType = "Order" AND ExecutionStatus = "Running" AND
	// StartTime < T` (T the deploy of this change, landed 2026-11-26)
	// finds none; a run replays through here while it is open, its refund
	// wait included. The testdata histories paid or cancelled before
	// their deadline without this marker stop replaying then: remove them
	// in the same change and re-record their scenarios.
	if o.atLatest(ctx, changeCancelPaymentDeadline) {
		cancelTimer()
	}
	return nil
}

// changeCancelPaymentDeadline is the workflow.GetVersion change id of
// ending the payment deadline's timer once the order is paid or cancelled
// (version 1) instead of leaving it to fire (DefaultVersion).
const changeCancelPaymentDeadline = "cancel-payment-deadline"

// acceptPayment takes in a payment signal: deduplicates it, credits it if
// it is in the order's asset, and queues it to be recorded. It never
// blocks, so the main coroutine may call it too.
func (o *order) acceptPayment(p PaymentSignal) {
	logger := log.With(o.logger, "PaymentID", p.PaymentID, "Asset", p.Asset, "Amount", p.Amount.String())
	switch {
	case p.PaymentID == "":
		logger.Warn("Payment signal without an id ignored")
		return
	case o.pay.seen[p.PaymentID]:
		logger.Info("Duplicate payment signal ignored")
		return
	case !p.Amount.IsPositive():
		logger.Warn("Payment signal with a non-positive amount ignored")
		return
	}
	o.pay.seen[p.PaymentID] = true
	if o.refund.recorded || o.refund.writing || o.refund.handedOver {
		// The refund covered what the order had: this one is due back on
		// its own.
		o.pay.late[p.PaymentID] = true
		logger.Warn("Payment after the refund was recorded; recorded as late, due back")
	} else if models.CreditsOrder(p.Asset, o.in.PaymentAsset) {
		o.pay.tally.Add(p.PaymentID, p.Amount)
		logger.Info("Payment credited", "Status", o.status, "AmountReceived", o.pay.tally.Received.String())
	} else {
		o.pay.strays++
		logger.Warn("Payment in another asset recorded, not credited; it is due back", "OrderAsset", o.in.PaymentAsset)
	}
	o.pay.toRecord = append(o.pay.toRecord, models.Payment{
		ID:         p.PaymentID,
		Mode:       o.in.Mode,
		Asset:      p.Asset,
		Amount:     p.Amount,
		Memo:       p.Memo,
		Sender:     p.Sender,
		ReceivedAt: p.ReceivedAt,
		OrderID:    o.in.OrderID,
	})
}

// acceptBuffered takes in every signal already delivered but not yet
// received by the coroutines.
func (o *order) acceptBuffered() {
	for {
		var p PaymentSignal
		if !o.payments.ReceiveAsync(&p) {
			break
		}
		o.acceptPayment(p)
	}
	for {
		var c CancelSignal
		if !o.cancels.ReceiveAsync(&c) {
			break
		}
		o.acceptCancel(c)
	}
}

// recordPayments records taken-in payments in the order they arrived, then
// writes the order's new state (partial, overpaid, refund_due). It runs for
// the whole life of the workflow.
func (o *order) recordPayments(ctx workflow.Context) {
	var (
		a    *activities.Payments
		old  *activities.Positional
		both *activities.BothShapes
	)
	for {
		_ = workflow.Await(ctx, func() bool { return len(o.pay.toRecord) > 0 })
		o.pay.recording = true
		for len(o.pay.toRecord) > 0 {
			p := o.pay.toRecord[0]
			o.pay.toRecord = o.pay.toRecord[1:]
			summary := fmt.Sprintf("Record payment %s: %s %s", p.ID, p.Amount.String(), p.Asset)
			var err error
			if o.pay.late[p.ID] {
				// One that arrived while the refund is being written is
				// recorded after it, so the order's payment status ends
				// refund_due (this payment is due back), never refunded.
				_ = workflow.Await(ctx, func() bool { return !o.refund.writing || o.refund.recorded })
				summary = fmt.Sprintf("Record late payment %s: %s %s", p.ID, p.Amount.String(), p.Asset)
				// It also creates the payment's refund and starts its
				// workflow: a regular activity.
				at := workflow.Now(ctx)
				sc := o.shaped(call{fn: a.RecordLatePayment, in: activities.RecordLatePaymentInput{OrderID: o.in.OrderID, Payment: p, At: at},
					old: old.RecordLatePayment, args: []any{o.in.OrderID, p, at}})
				err = workflow.ExecuteActivity(withOptions(ctx, storeOptions(summary)), sc.fn, sc.args...).Get(ctx, nil)
			} else {
				err = o.write(ctx, summary, call{fn: a.RecordPayment, in: activities.RecordPaymentInput{OrderID: o.in.OrderID, Payment: p},
					old: old.RecordPayment, args: []any{o.in.OrderID, p}, both: both.RecordPayment})
			}
			if err != nil {
				o.logger.Error("Recording a payment failed", "PaymentID", p.ID, "Error", err)
			}
		}
		if err := o.sync(ctx); err != nil {
			o.logger.Error("Recording the payment status failed", "Error", err)
		}
		o.pay.recording = false
	}
}

// idle reports whether every payment taken in has been recorded.
func (o *order) idle() bool { return len(o.pay.toRecord) == 0 && !o.pay.recording }

// settle takes in the signals still buffered and waits until every payment
// is recorded, until nothing is left: a signal lost here would be money
// nobody knows about.
func (o *order) settle(ctx workflow.Context) error {
	for {
		o.acceptBuffered()
		if err := workflow.Await(ctx, o.idle); err != nil {
			return err
		}
		// Nothing yields between this check and the workflow's return.
		if o.payments.Len() == 0 && o.cancels.Len() == 0 && o.idle() {
			return nil
		}
	}
}
