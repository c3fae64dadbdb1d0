package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// The Order workflow, one concern per file: this file holds its names,
// input and result, and its main sequence (Order, startOrder, run);
// state.go the run's state and how it is written; payment.go the payment
// wait and the payments' records; fulfilment.go fulfilment by polling,
// and fulfilment_legacy.go the blocking steps kept for older runs;
// cancel.go cancellation; refund.go the refund wait and its update;
// status.go what the run shows (the status query, current details,
// search attributes); options.go the activities' timeouts and retries;
// decide.go the pure decisions.

// Names the workflow is known by outside this package: the API starts,
// signals and queries the workflow with them, operators type them in the
// Temporal UI and CLI. They are part of the workflow's history, so they
// are never renamed.
const (
	// OrderWorkflowName is the registered workflow type of Order.
	OrderWorkflowName = "Order"
	// SignalPaymentMatched carries a PaymentSignal: a payment whose memo
	// matched the order.
	SignalPaymentMatched = "payment-matched"
	// SignalCancel carries a CancelSignal: an operator cancelling an order
	// that is still waiting for payment.
	SignalCancel = "cancel-order"
	// SignalFulfilmentUpdated carries a FulfilmentSignal: the buying
	// provider says the order changed (its webhook). The workflow checks
	// the order at once instead of waiting for its next scheduled check.
	SignalFulfilmentUpdated = "fulfilment-updated"
	// QueryStatus returns a StatusView.
	QueryStatus = "status"
	// UpdateCancel carries a CancelRequest: the customer cancelling its
	// order through the API. Its validator refuses an order that is paid
	// or beyond (models.CodeOrderNotCancellable); it answers a
	// CancelResult once the cancellation is in the database.
	UpdateCancel = "cancel"
	// UpdateRecordRefund carries a RefundRequest: an operator sent back
	// the money a cancelled or failed order received (memocart payments
	// mark-refunded --order). The workflow records it in the database and
	// its search attributes, then closes. Its validator refuses an order
	// that owes nothing, or whose amount received is not the amount the
	// operator sent back.
	UpdateRecordRefund = "record-refund"
	// UpdateExpirePayment carries an ExpireRequest: test mode's helper
	// moving the payment deadline to now. Its validator refuses an order
	// no longer awaiting payment (models.CodeInvalidOrderState); it
	// answers an ExpireResult once the order's new state is written.
	UpdateExpirePayment = "expire-payment"
	// UpdateTestMove carries a models.TestMove: test mode's helper making
	// the sandbox provider's next step, or a sourcing failure, happen now.
	// Its validator refuses a move the order's status does not allow
	// (models.CodeInvalidOrderState); it answers a TestMoveResult once
	// the move's outcome is written.
	UpdateTestMove = "test-move"
	// OrderFailedError is the type of the application error a failed
	// order's workflow ends with, so that the Temporal UI shows it Failed
	// (and counts it) instead of Completed. Its details hold the
	// OrderResult.
	OrderFailedError = "order_failed"
)

// OrderInput starts an Order workflow. The payment deadline is an instant,
// not a duration, so a retried or continued run keeps the same deadline.
type OrderInput struct {
	OrderID         string
	OrderNumber     string
	Mode            models.Mode
	PaymentAsset    string
	PaymentAmount   decimal.Decimal // JSON-encodes as a string, never a float
	PaymentDeadline time.Time
	// SearchAttributesSet says the start request already set the order's
	// search attributes (StartOptions does), so the first workflow task
	// does not upsert the same values again: that would cost a history
	// event and a second visibility write per order. A run started without
	// it (before the field existed, or typed in the Temporal UI) upserts
	// them in its first task, so that upsert is not old-run code.
	SearchAttributesSet bool `json:",omitempty"`
	// Resume is the state of the run before, for a run continued as new
	// (continue.go); nil for an order's first run.
	Resume *OrderResume `json:",omitempty"`
}

// OrderResult is how an order ended. A cancelled order is a result: a
// business outcome. A failed order's run (from version end-states) ends
// with an OrderFailedError application error carrying its OrderResult as
// details, so the Temporal UI shows it Failed.
type OrderResult struct {
	Status         models.OrderStatus
	PaymentStatus  models.PaymentStatus
	AmountReceived decimal.Decimal
}

// StartOptions returns the options to start the Order workflow for in on
// taskQueue. The workflow id is derived from the order id, and a second
// start for the same order returns the run already going (so a retried API
// request is harmless) while a finished order is never started again.
func StartOptions(in OrderInput, taskQueue string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       models.WorkflowID(in.OrderID),
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(initialSearchAttributes(in, models.OrderCreated, models.PaymentPending)...),
		StaticSummary:            fmt.Sprintf("Order %s — %s %s", in.OrderNumber, in.PaymentAmount.String(), in.PaymentAsset),
		// Static details are set once and never change: only what never
		// changes belongs here. The order's state (awaiting payment until
		// its deadline, paid, ordered...) is in the current details
		// (showDetails).
		StaticDetails: fmt.Sprintf("Order **%s** (id `%s`, %s mode): **%s %s**, memo `%s`",
			in.OrderNumber, in.OrderID, in.Mode, in.PaymentAmount.String(), in.PaymentAsset, in.OrderNumber),
	}
}

// initialSearchAttributes are the search attributes a run starts with:
// the order's number and mode, which never change, and its first status.
// Mode is left out when the input has none (a start typed by hand), rather
// than set to an empty value no list filters on.
func initialSearchAttributes(in OrderInput, status models.OrderStatus, payment models.PaymentStatus) []temporal.SearchAttributeUpdate {
	attrs := []temporal.SearchAttributeUpdate{
		SearchAttrOrderNumber.ValueSet(in.OrderNumber),
		SearchAttrOrderStatus.ValueSet(string(status)),
		SearchAttrPaymentStatus.ValueSet(string(payment)),
	}
	if in.Mode != "" {
		attrs = append(attrs, SearchAttrOrderMode.ValueSet(string(in.Mode)))
	}
	return attrs
}

// Order is the workflow of one order, from payment to delivery.
//
//  1. It waits for payment signals until the tally reaches the amount due,
//     an operator cancels, or the payment deadline passes. Payments are
//     received, deduplicated and recorded for the whole life of the
//     workflow, also after payment (overpaid) and after cancellation (the
//     money is due back).
//
//  2. Paid, it sources, ships and delivers through the order's fulfiller,
//     recording each step. A marketplace refusal ends the order as failed,
//     with the payment due back.
//
//  3. An order that ended owing the money it received (cancelled after a
//     partial payment, failed) stays open until an operator's refund is
//     recorded (UpdateRecordRefund) or RefundWait passes. A failed order
//     then ends the workflow with an OrderFailedError.
//
// Every step is written to the database by an idempotent activity and
// mirrored in the search attributes. A cancelled order is a result, not
// an error.
//
// Versioning: runs of this workflow may be in flight for days. Any change
// to what it does — the order of activities, timers, signal handling,
// transition decisions — must be guarded with workflow.GetVersion so
// running histories still replay, and the replay test in replay_test.go
// must keep passing over the committed histories in testdata/.
func Order(ctx workflow.Context, in OrderInput) (OrderResult, error) {
	if err := validateInput(in); err != nil {
		return OrderResult{}, temporal.NewNonRetryableApplicationError(err.Error(), string(models.CodeInvalidRequest), nil)
	}
	// Every activity scheduled from here on logs which order it works for.
	ctx = withOrderLogFields(ctx, in)
	o, err := startOrder(ctx, in)
	if err != nil {
		return OrderResult{}, err
	}
	runErr := o.run(ctx)
	// Whatever the outcome, nothing received may be lost with the run:
	// take in the signals still buffered and record every payment. The
	// disconnected context keeps this going if the workflow was cancelled.
	if err := o.settle(o.bg); err != nil && runErr == nil {
		runErr = err
	}
	// Version 1 keeps an order that ended owing money open until its
	// refund is recorded (so PaymentStatus stays true), and ends a failed
	// order Failed.
	//
	// Old runs: a run that reached this point before end-states was
	// deployed has no marker and closes here Completed, whatever the
	// order's end. Drop that path (raise minSupported to 1) once no such
	// run is open: `WorkflowType = "Order" AND ExecutionStatus = "Running"
	// AND StartTime < "2026-11-24T08:57:43Z"` (commit 22a2ccb; the
	// deploy's time if later) finds none. Every testdata history without
	// an end-states marker stops replaying then: remove them in the same
	// change and re-record the scenarios they cover.
	endStates := runErr == nil && o.atLatest(o.bg, changeEndStates)
	if endStates {
		// Version 1 of refund-payouts hands what the order owes to Refund
		// workflows and closes; runs before it wait for an operator's
		// refund. Asked only of an order that may owe money, so an order
		// that owes none records no marker.
		if o.mayOweMoney() && o.atLatest(o.bg, changeRefundPayouts) {
			runErr = o.handOverRefunds()
		} else {
			o.awaitRefund(ctx)
		}
		if err := o.settle(o.bg); err != nil && runErr == nil {
			runErr = err
		}
	}
	// A cancel update waiting for its answer gets it before the run ends
	// (it is answered as soon as the cancellation is written). Runs that
	// never had an update pass straight through: no command, so recorded
	// histories replay unchanged.
	if err := workflow.Await(o.bg, func() bool { return workflow.AllHandlersFinished(o.bg) }); err != nil && runErr == nil {
		runErr = err
	}
	if endStates && runErr == nil && o.status == models.OrderFailed {
		msg := "order failed: " + o.reason
		if o.detail != "" {
			msg += " (" + o.detail + ")"
		}
		return OrderResult{}, temporal.NewNonRetryableApplicationError(msg, OrderFailedError, nil, o.result())
	}
	return o.result(), runErr
}

// changeEndStates is the workflow.GetVersion change id of the order's
// end: version 1 waits for the refund of an order that ended owing money
// (RefundWait) and ends a failed order as a failed workflow.
const changeEndStates = "end-states"

// changeRefundPayouts is the workflow.GetVersion change id of refunds as
// their own workflows: version 1 creates the refunds an order owes as it
// closes (handOverRefunds) instead of waiting for an operator's.
const changeRefundPayouts = "refund-payouts"

// The baselines, oldest first: a run that records one of them, as its
// first command, takes every change that baseline or an older one covers
// at version 1 without asking each (atLatest). A version marker costs two
// history events (the marker and its TemporalChangeVersion upsert), and a
// run asked up to seven. A change made after the newest baseline asks its
// own GetVersion as usual; the next baseline (a new change id, appended
// here) folds it in. A run records only the newest baseline's marker.
var baselines = []struct {
	change  string
	changes []string
}{
	{"baseline-2026-11", []string{changeCancelPaymentDeadline, changeLocalWrites, changeFulfilByPolling,
		changeWatchByRetry, changeContinueAsNew, changeEndStates, changeRefundPayouts}},
	{"baseline-2026-12", []string{changeWatchReports, changeInputStructs}},
}

// startBaseline finds the newest baseline this run started from (0: none,
// i: baselines[i-1]): a new run records the newest; an older run replays
// without its marker and finds the one it recorded, if any.
func startBaseline(ctx workflow.Context) int {
	for i := len(baselines); i > 0; i-- {
		if workflow.GetVersion(ctx, baselines[i-1].change, workflow.DefaultVersion, 1) == 1 {
			return i
		}
	}
	return 0
}

// atLatest reports whether this run takes change at version 1: a run from
// a baseline covering it always does; any other run asks
// workflow.GetVersion, as runs did before the baseline.
func (o *order) atLatest(ctx workflow.Context, change string) bool {
	for _, b := range baselines[:o.book.baseline] {
		if slices.Contains(b.changes, change) {
			return true
		}
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == 1
}

// validateInput names every field of in that is missing or invalid.
func validateInput(in OrderInput) error {
	var missing []string
	if in.OrderID == "" {
		missing = append(missing, "OrderID")
	}
	if in.OrderNumber == "" {
		missing = append(missing, "OrderNumber")
	}
	if in.PaymentAsset == "" {
		missing = append(missing, "PaymentAsset")
	}
	if !in.PaymentAmount.IsPositive() {
		missing = append(missing, "PaymentAmount")
	}
	if in.PaymentDeadline.IsZero() {
		missing = append(missing, "PaymentDeadline")
	}
	if len(missing) > 0 {
		return fmt.Errorf("order input: missing or invalid %s", strings.Join(missing, ", "))
	}
	return nil
}

// startOrder sets up a run: its state, its query and update handlers,
// its search attributes, and the coroutines that take in signals and
// record payments for the whole life of the workflow.
func startOrder(ctx workflow.Context, in OrderInput) (*order, error) {
	bg, _ := workflow.NewDisconnectedContext(ctx)
	o := &order{
		in:       in,
		logger:   log.With(workflow.GetLogger(ctx), "OrderID", in.OrderID, "OrderNumber", in.OrderNumber),
		bg:       bg,
		status:   models.OrderCreated,
		at:       workflow.Now(ctx),
		pay:      orderPayments{tally: models.NewPaymentTally(in.PaymentAmount), seen: map[string]bool{}, late: map[string]bool{}},
		book:     runState{hints: map[string]bool{}},
		persist:  orderWrites{writeMu: workflow.NewMutex(ctx)},
		tests:    testMoves{ch: workflow.NewBufferedChannel(ctx, maxPendingMoves)},
		payments: workflow.GetSignalChannelWithOptions(ctx, SignalPaymentMatched, workflow.SignalChannelOptions{Description: "A payment whose memo matched the order (PaymentSignal)"}),
		cancels:  workflow.GetSignalChannelWithOptions(ctx, SignalCancel, workflow.SignalChannelOptions{Description: "Cancel the order while it awaits payment (CancelSignal)"}),
		updates:  workflow.GetSignalChannelWithOptions(ctx, SignalFulfilmentUpdated, workflow.SignalChannelOptions{Description: "The buying provider reports a change to the order: check it now (FulfilmentSignal)"}),
	}
	// First, before any other command: an older run replays without the
	// marker and asks each change as it did.
	o.book.baseline = startBaseline(ctx)
	// The API wrote the order as created and pending; nothing to write
	// until that changes. A continued run knows what was written.
	o.persist.written = o.transition()
	if in.Resume != nil {
		o.resume(in.Resume)
	}

	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryStatus, o.view,
		workflow.QueryHandlerOptions{Description: "Order and payment status, amounts and shipment (StatusView)"}); err != nil {
		return nil, err
	}
	// Registering a handler records nothing in the history: runs started
	// before it existed replay unchanged, and take the update from now on.
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateCancel, o.cancelByCustomer, workflow.UpdateHandlerOptions{
		Validator:   o.validateCancel,
		Description: "The customer cancels the order while it awaits payment (CancelRequest → CancelResult); refused once paid",
	}); err != nil {
		return nil, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateRecordRefund, o.recordRefund, workflow.UpdateHandlerOptions{
		Validator:   o.validateRefund,
		Description: "An operator sent back the money a cancelled or failed order received (RefundRequest → RefundResult); use memocart payments mark-refunded --order",
	}); err != nil {
		return nil, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateExpirePayment, o.expireByTestHelper, workflow.UpdateHandlerOptions{
		Validator:   o.validateExpire,
		Description: "Test mode: the payment deadline passes now (ExpireRequest → ExpireResult); refused once paid",
	}); err != nil {
		return nil, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateTestMove, o.moveByTestHelper, workflow.UpdateHandlerOptions{
		Validator:   o.validateTestMove,
		Description: "Test mode: the sandbox provider's next step, or a sourcing failure, happens now (models.TestMove → TestMoveResult)",
	}); err != nil {
		return nil, err
	}
	if !in.SearchAttributesSet {
		// Mode joined this upsert after runs were recorded without it:
		// replay matches an upsert by its place among the commands, not
		// by its attributes, and a replayed command is never sent again,
		// so runs past their first task are unchanged.
		if err := workflow.UpsertTypedSearchAttributes(ctx,
			initialSearchAttributes(in, o.status, o.paymentStatus())...,
		); err != nil {
			return nil, err
		}
	}
	if in.Resume == nil {
		o.persist.attrs = [2]string{string(o.status), string(o.paymentStatus())}
	}
	o.showDetails()

	// Signals are taken in for the whole life of the workflow, on the
	// disconnected context so cancelling the workflow does not stop them.
	workflow.Go(bg, func(ctx workflow.Context) {
		for {
			var p PaymentSignal
			o.payments.Receive(ctx, &p)
			o.acceptPayment(p)
		}
	})
	workflow.Go(bg, func(ctx workflow.Context) {
		for {
			var c CancelSignal
			o.cancels.Receive(ctx, &c)
			o.acceptCancel(c)
		}
	})
	workflow.Go(bg, o.recordPayments)
	return o, nil
}

// run waits for the payment and, if paid, fulfils the order; a continued
// run goes on following the order where the run before it stopped.
func (o *order) run(ctx workflow.Context) error {
	if r := o.in.Resume; r != nil {
		return o.followOrder(ctx, r.Ref, r.Attempt, r.CheckAfter)
	}
	err := o.awaitPayment(ctx)
	if temporal.IsCanceledError(err) {
		// The workflow itself was cancelled (from the Temporal UI or CLI)
		// while the order awaited payment: close it as an operator cancel
		// would, then report the cancellation.
		o.acceptBuffered()
		o.set(ctx, models.OrderCancelled, models.PaymentCancelled, "workflow cancelled")
		o.cancellation = models.CancellationByOperator
		if serr := o.sync(o.bg); serr != nil {
			return serr
		}
		return err
	}
	if err != nil {
		return err
	}
	if o.status != models.OrderPaid {
		return o.sync(o.bg)
	}
	return o.fulfil(ctx)
}

func (o *order) result() OrderResult {
	return OrderResult{Status: o.status, PaymentStatus: o.paymentStatus(), AmountReceived: o.pay.tally.Received}
}
