package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

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
	// OrderFailedError is the type of the application error a failed
	// order's workflow ends with, so that the Temporal UI shows it Failed
	// (and counts it) instead of Completed. Its details hold the
	// OrderResult.
	OrderFailedError = "order_failed"
)

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

// FulfilmentSignal is a hint that the order changed at its buying
// provider. The workflow never takes its content as the truth: it checks
// the provider, so duplicate, late and out-of-order hints change nothing.
type FulfilmentSignal struct {
	EventID string // the provider's event id, for the logs
	Ref     string // the provider's order id
}

// Search attributes (all Keyword) the workflow keeps current, so operators
// can list orders by number and status in the Temporal UI. Whoever runs
// the Temporal server registers them on the namespace.
var (
	SearchAttrOrderNumber   = temporal.NewSearchAttributeKeyKeyword("OrderNumber")
	SearchAttrOrderStatus   = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
	SearchAttrPaymentStatus = temporal.NewSearchAttributeKeyKeyword("PaymentStatus")
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
	// need not upsert the same values: that upsert cost a history event
	// and a second visibility write per order. Runs started without it
	// (older runs, a start typed in the Temporal UI) still upsert, so
	// their histories replay unchanged.
	SearchAttributesSet bool `json:",omitempty"`
}

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

// CancelSignal asks to cancel an order that is still waiting for payment.
// Once the order is paid it is ignored (and logged).
type CancelSignal struct {
	Reason      string
	RequestedBy string
	// Cancellation is the reason clients read; an operator may say
	// requested_by_customer (the customer asked by mail). Anything else,
	// or nothing, is cancelled_by_operator.
	Cancellation models.CancellationReason `json:",omitempty"`
}

// CancelRequest is UpdateCancel's input.
type CancelRequest struct {
	// Note is the customer's reason in its own words, kept for operators
	// (the order's status reason); may be empty.
	Note string `json:",omitempty"`
}

// CancelResult is UpdateCancel's answer: the order as recorded once the
// cancellation is written. Cancellation says whose cancellation it was: an
// order the deadline or an operator cancelled first keeps that reason.
type CancelResult struct {
	Status        models.OrderStatus
	PaymentStatus models.PaymentStatus
	Cancellation  models.CancellationReason
}

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
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SearchAttrOrderNumber.ValueSet(in.OrderNumber),
			SearchAttrOrderStatus.ValueSet(string(models.OrderCreated)),
			SearchAttrPaymentStatus.ValueSet(string(models.PaymentPending)),
		),
		StaticSummary: fmt.Sprintf("Order %s — %s %s", in.OrderNumber, in.PaymentAmount.String(), in.PaymentAsset),
		StaticDetails: fmt.Sprintf("Order **%s** (id `%s`, %s mode)\n\nAwaiting **%s %s**, memo `%s`, until %s.",
			in.OrderNumber, in.OrderID, in.Mode, in.PaymentAmount.String(), in.PaymentAsset, in.OrderNumber,
			in.PaymentDeadline.UTC().Format(time.RFC3339)),
	}
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
	// Runs recorded before this change closed here, Completed whatever the
	// order's end; their histories replay unchanged. From version 1, an
	// order that ended owing money stays open until its refund is recorded
	// (so PaymentStatus stays true), and a failed order ends Failed.
	endStates := runErr == nil && workflow.GetVersion(o.bg, changeEndStates, workflow.DefaultVersion, 1) == 1
	if endStates {
		o.awaitRefund(ctx)
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
		return OrderResult{}, temporal.NewNonRetryableApplicationError(
			"order failed: "+o.reason, OrderFailedError, nil, o.result())
	}
	return o.result(), runErr
}

// changeEndStates is the workflow.GetVersion change id of the order's
// end: version 1 waits for the refund of an order that ended owing money
// (RefundWait) and ends a failed order as a failed workflow.
const changeEndStates = "end-states"

// owesRefund reports whether the order ended holding money it received
// for nothing (cancelled or failed), not yet sent back. Single payments
// due back on their own (another asset, late) are the database's: they
// never make the workflow wait.
func (o *order) owesRefund() bool {
	return o.status.Final() && !o.refunded && o.paymentStatus() == models.PaymentRefundDue && o.tally.Received.IsPositive()
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
		until.UTC().Format(time.DateOnly), o.tally.Received.String(), o.in.PaymentAsset, o.in.OrderNumber))
	o.logger.Info("Order owes a refund; waiting for it to be recorded", "Until", until, "AmountReceived", o.tally.Received.String())
	ok, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
		Timeout:      RefundWait,
		TimerOptions: workflow.TimerOptions{Summary: "refund wait"},
	}, func() bool { return o.refunded })
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
		return temporal.NewNonRetryableApplicationError("TxHash is required", string(models.CodeInvalidRequest), nil)
	case !o.owesRefund():
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("Order %s owes no refund here: it is %s, payment %s", o.in.OrderNumber, o.status, o.paymentStatus()),
			string(models.CodeInvalidRequest), nil)
	case !r.Amount.Equal(o.tally.Received):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("Order %s has received %s %s, not %s: list the refunds again", o.in.OrderNumber,
				o.tally.Received.String(), o.in.PaymentAsset, r.Amount.String()),
			string(models.CodeInvalidRequest), nil)
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
	if err := o.writeMu.Lock(bg); err != nil {
		return RefundResult{}, err
	}
	defer o.writeMu.Unlock()
	// A payment may have been credited while this waited.
	if err := o.validateRefund(bg, r); err != nil {
		return RefundResult{}, err
	}
	// From here on a payment is not credited: the refund being written
	// covers exactly the amount checked above, so a payment arriving while
	// it is written is late (due back on its own), never counted into
	// money the database will call refunded.
	o.refunding = true
	var a *activities.Activities
	summary := fmt.Sprintf("Record the refund of %s %s", r.Amount.String(), o.in.PaymentAsset)
	if err := workflow.ExecuteActivity(withOptions(bg, storeOptions(summary)),
		a.RecordRefund, o.in.OrderNumber, r.TxHash, workflow.Now(bg)).Get(bg, nil); err != nil {
		o.refunding = false
		return RefundResult{}, err
	}
	o.refunded = true
	o.logger.Info("Refund recorded", "TxHash", r.TxHash, "RecordedBy", r.RecordedBy, "Amount", r.Amount.String())
	// The database says refunded already (the activity wrote it): mirror
	// it without writing the order again.
	t := o.transition()
	if err := workflow.UpsertTypedSearchAttributes(bg, SearchAttrPaymentStatus.ValueSet(string(t.PaymentStatus))); err != nil {
		return RefundResult{}, err
	}
	o.attrs[1] = string(t.PaymentStatus)
	o.written = t
	return RefundResult{PaymentStatus: t.PaymentStatus, Amount: r.Amount}, nil
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

// order is the state of one Order run. Its fields are touched by the main
// coroutine and the signal coroutines; workflow coroutines never run in
// parallel, so no locking is needed except to keep database writes in
// order (writeMu).
type order struct {
	in     OrderInput
	logger log.Logger
	// bg is never cancelled: bookkeeping (database writes, payment
	// records) must complete even when the workflow is cancelled.
	bg workflow.Context

	status models.OrderStatus
	// unpaidClose is the payment status a cancelled order shows when it
	// received nothing: expired (deadline) or cancelled (operator).
	unpaidClose models.PaymentStatus
	reason      string
	// cancellation is why a cancelled order was cancelled, for clients.
	cancellation models.CancellationReason
	at           time.Time // workflow time the current status was reached: the step's timestamp
	tally        models.PaymentTally
	seen         map[string]bool // every payment id taken in, credited or not; looked up, never iterated
	strays       int             // payments recorded but not credited: wrong asset
	shipment     models.Shipment
	cancelReq    *CancelSignal

	payments, cancels workflow.ReceiveChannel
	updates           workflow.ReceiveChannel // FulfilmentSignal hints
	hints             map[string]bool         // event ids of hints taken; looked up, never iterated
	toRecord          []models.Payment        // taken in, not yet recorded
	recording         bool

	// refunded: an operator's refund of the money received is recorded;
	// payments taken in after it are late, never credited.
	refunded  bool
	refunding bool            // a refund is being written: payments are late already
	late      map[string]bool // ids of toRecord payments to record as late
	note      string          // shown in the current details (setDetails)

	writeMu workflow.Mutex
	written models.Transition // last state written, initially what the API wrote
	attrs   [2]string         // last upserted OrderStatus, PaymentStatus
}

func startOrder(ctx workflow.Context, in OrderInput) (*order, error) {
	bg, _ := workflow.NewDisconnectedContext(ctx)
	o := &order{
		in:       in,
		logger:   log.With(workflow.GetLogger(ctx), "OrderID", in.OrderID, "OrderNumber", in.OrderNumber),
		bg:       bg,
		status:   models.OrderCreated,
		at:       workflow.Now(ctx),
		tally:    models.NewPaymentTally(in.PaymentAmount),
		seen:     map[string]bool{},
		hints:    map[string]bool{},
		late:     map[string]bool{},
		payments: workflow.GetSignalChannelWithOptions(ctx, SignalPaymentMatched, workflow.SignalChannelOptions{Description: "A payment whose memo matched the order (PaymentSignal)"}),
		cancels:  workflow.GetSignalChannelWithOptions(ctx, SignalCancel, workflow.SignalChannelOptions{Description: "Cancel the order while it awaits payment (CancelSignal)"}),
		updates:  workflow.GetSignalChannelWithOptions(ctx, SignalFulfilmentUpdated, workflow.SignalChannelOptions{Description: "The buying provider reports a change to the order: check it now (FulfilmentSignal)"}),
		writeMu:  workflow.NewMutex(ctx),
	}
	// The API wrote the order as created and pending; nothing to write
	// until that changes.
	o.written = o.transition()

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
	if !in.SearchAttributesSet {
		if err := workflow.UpsertTypedSearchAttributes(ctx,
			SearchAttrOrderNumber.ValueSet(in.OrderNumber),
			SearchAttrOrderStatus.ValueSet(string(o.status)),
			SearchAttrPaymentStatus.ValueSet(string(o.paymentStatus())),
		); err != nil {
			return nil, err
		}
	}
	o.attrs = [2]string{string(o.status), string(o.paymentStatus())}
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

// run waits for the payment and, if paid, fulfils the order.
func (o *order) run(ctx workflow.Context) error {
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

// awaitPayment waits until the order is paid, an operator cancels it, or
// the deadline passes, and moves it to paid or cancelled.
func (o *order) awaitPayment(ctx workflow.Context) error {
	settled := func() bool { return o.cancelReq != nil || o.tally.Paid() }
	if wait := o.in.PaymentDeadline.Sub(workflow.Now(ctx)); wait > 0 {
		_, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
			Timeout:      wait,
			TimerOptions: workflow.TimerOptions{Summary: "payment deadline"},
		}, settled)
		if err != nil {
			return err
		}
	}
	// Signals delivered together with the deadline, or before a run that
	// started already past it, have not reached the coroutines yet. They
	// arrived in time as far as the workflow can tell, so they count.
	o.acceptBuffered()
	status, unpaidClose, reason, cancellation := paymentOutcome(o.cancelReq, o.tally.Paid())
	o.set(ctx, status, unpaidClose, reason)
	o.cancellation = cancellation
	o.logger.Info("Payment wait over", "Status", o.status, "PaymentStatus", o.paymentStatus(),
		"AmountReceived", o.tally.Received.String(), "Reason", reason)
	return nil
}

// fulfil records the payment, then sources, ships and delivers the order.
func (o *order) fulfil(ctx workflow.Context) error {
	// The payments that paid the order are attached before it says paid.
	if err := workflow.Await(o.bg, o.idle); err != nil {
		return err
	}
	if err := o.sync(o.bg); err != nil {
		return err
	}

	// Runs started before fulfilment was polled block in one activity per
	// step; their histories must replay unchanged.
	if workflow.GetVersion(ctx, changeFulfilByPolling, workflow.DefaultVersion, 1) == 1 {
		return o.fulfilByPolling(ctx)
	}
	var a *activities.Activities
	var supplierRef string
	err := workflow.ExecuteActivity(withOptions(ctx, fulfilmentOptions("Buy the items on the marketplace")),
		a.SourceOrder, o.in.OrderID).Get(ctx, &supplierRef)
	if reason, ok := sourcingFailure(err); ok {
		o.logger.Warn("Sourcing refused; order failed, payment due back", "Reason", reason)
		return o.move(ctx, models.OrderFailed, reason)
	}
	if err != nil {
		return err
	}
	o.logger.Info("Order sourced", "SupplierRef", supplierRef)
	if err := o.move(ctx, models.OrderOrdered, ""); err != nil {
		return err
	}

	var shipment models.Shipment
	err = workflow.ExecuteActivity(withOptions(ctx, fulfilmentOptions("Wait for the parcel to ship")),
		a.ShipOrder, o.in.OrderID).Get(ctx, &shipment)
	if err != nil {
		return err
	}
	o.shipment = shipment
	if err := o.move(ctx, models.OrderShipped, ""); err != nil {
		return err
	}

	err = workflow.ExecuteActivity(withOptions(ctx, fulfilmentOptions("Wait for delivery")),
		a.DeliverOrder, o.in.OrderID).Get(ctx, nil)
	if err != nil {
		return err
	}
	return o.move(ctx, models.OrderDelivered, "")
}

// changeFulfilByPolling is the workflow.GetVersion change id of fulfilment
// by PlaceOrder and periodic CheckOrder activities (version 1), replacing
// one blocking activity per step (DefaultVersion).
const changeFulfilByPolling = "fulfil-by-polling"

// maxPlacements bounds how often an order is placed again after a
// retryable failure at the retailer (Progress.Retry).
const maxPlacements = 3

// fulfilByPolling places the order with its buying provider, then checks
// it on the provider's schedule, or at once when the provider's webhook
// signals a change, moving the order along as the provider reports it,
// until it is delivered or failed.
func (o *order) fulfilByPolling(ctx workflow.Context) error {
	var a *activities.Activities
	attempt := 1
	place := func() (models.Placement, bool, error) {
		var p models.Placement
		err := workflow.ExecuteActivity(withOptions(ctx, placeOptions(attempt)), a.PlaceOrder, o.in.OrderID, attempt).Get(ctx, &p)
		if reason, ok := sourcingFailure(err); ok {
			o.logger.Warn("Order refused by the buying provider; order failed, payment due back", "Reason", reason)
			return p, true, o.move(ctx, models.OrderFailed, reason)
		}
		return p, false, err
	}
	placed, failed, err := place()
	if failed || err != nil {
		return err
	}
	o.logger.Info("Order placed with the buying provider", "SupplierRef", placed.Ref, "Attempt", attempt)
	wait := placed.CheckAfter
	for {
		o.awaitCheck(ctx, wait, placed.Ref)
		var p models.Progress
		err := workflow.ExecuteActivity(withOptions(ctx, checkOptions(o.status)), a.CheckOrder, o.in.OrderID, placed.Ref).Get(ctx, &p)
		if err != nil {
			return err
		}
		if p.Status == models.OrderFailed && p.Retry && attempt < maxPlacements {
			attempt++
			o.logger.Warn("Retailer failed the order for a passing reason; placing it again", "Reason", p.Reason, "Attempt", attempt)
			if placed, failed, err = place(); failed || err != nil {
				return err
			}
			wait = placed.CheckAfter
			continue
		}
		if err := o.advance(ctx, p); err != nil {
			return err
		}
		if o.status.Final() {
			return nil
		}
		wait = p.NextCheck
	}
}

// minCheckInterval keeps a fulfiller advising no wait from turning the
// loop into a busy one.
const minCheckInterval = time.Second

// awaitCheck waits until the next check is due or the provider signals a
// change to the order, whichever comes first. A hint whose event id was
// seen before (webhooks are delivered at least once) does not wake it; the
// hints already delivered are all answered by the one check that follows.
func (o *order) awaitCheck(ctx workflow.Context, wait time.Duration, ref string) {
	wait = max(wait, minCheckInterval)
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimerWithOptions(timerCtx, wait, workflow.TimerOptions{Summary: "next check with the buying provider"})
	due := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(workflow.Future) { due = true })
	sel.AddReceive(o.updates, func(c workflow.ReceiveChannel, more bool) {
		var sig FulfilmentSignal
		c.Receive(ctx, &sig)
		if o.newHint(sig) {
			o.logger.Info("Buying provider signalled a change", "EventID", sig.EventID, "Ref", sig.Ref, "OrderRef", ref)
			due = true
		}
	})
	for !due && ctx.Err() == nil {
		sel.Select(ctx)
	}
	var sig FulfilmentSignal
	for o.updates.ReceiveAsync(&sig) {
		o.newHint(sig)
	}
}

// newHint reports whether a fulfilment hint is not a repeat of one seen
// before, and remembers it.
func (o *order) newHint(sig FulfilmentSignal) bool {
	if sig.EventID == "" {
		return true
	}
	if o.hints[sig.EventID] {
		return false
	}
	o.hints[sig.EventID] = true
	return true
}

// advance moves the order as far as the provider's progress says, one
// allowed step at a time (a check may find it both bought and shipped),
// and keeps the shipment current: estimated delivery dates change while a
// parcel travels. Progress behind the order's status changes nothing.
func (o *order) advance(ctx workflow.Context, p models.Progress) error {
	if p.Status == models.OrderFailed {
		o.logger.Warn("Buying provider failed the order; payment due back", "Reason", p.Reason)
		return o.move(ctx, models.OrderFailed, p.Reason)
	}
	// The shipment shows from shipped on, as the contract's tracking does.
	shipped := p.Shipment != (models.Shipment{}) && models.StepReached(p.Status, models.OrderShipped)
	for _, step := range models.OrderSteps {
		if models.StepReached(o.status, step) || !models.StepReached(p.Status, step) {
			continue
		}
		if step == models.OrderShipped && shipped {
			o.shipment = p.Shipment
		}
		o.logger.Info("Order moved on at the buying provider", "Status", step)
		if err := o.move(ctx, step, ""); err != nil {
			return err
		}
	}
	if shipped && models.StepReached(o.status, models.OrderShipped) {
		o.shipment = p.Shipment // e.g. a new estimated delivery date
	}
	return o.sync(o.bg)
}

// move advances the order along an allowed transition and writes it.
func (o *order) move(ctx workflow.Context, to models.OrderStatus, reason string) error {
	if !models.CanTransition(o.status, to) {
		// A bug in this file, not in the order: fail the workflow task so
		// it can be fixed and the run replayed.
		panic(fmt.Sprintf("order workflow: transition %s → %s not allowed", o.status, to))
	}
	o.set(ctx, to, o.unpaidClose, reason)
	return o.sync(o.bg)
}

// set changes the order's status in memory; sync writes it.
func (o *order) set(ctx workflow.Context, status models.OrderStatus, unpaidClose models.PaymentStatus, reason string) {
	o.status, o.unpaidClose, o.reason, o.at = status, unpaidClose, reason, workflow.Now(ctx)
}

// acceptPayment takes in a payment signal: deduplicates it, credits it if
// it is in the order's asset, and queues it to be recorded. It never
// blocks, so the main coroutine may call it too.
func (o *order) acceptPayment(p PaymentSignal) {
	logger := log.With(o.logger, "PaymentID", p.PaymentID, "Asset", p.Asset, "Amount", p.Amount.String())
	switch {
	case p.PaymentID == "":
		logger.Warn("Payment signal without an id ignored")
		return
	case o.seen[p.PaymentID]:
		logger.Info("Duplicate payment signal ignored")
		return
	case !p.Amount.IsPositive():
		logger.Warn("Payment signal with a non-positive amount ignored")
		return
	}
	o.seen[p.PaymentID] = true
	if o.refunded || o.refunding {
		// The refund covered what the order had: this one is due back on
		// its own.
		o.late[p.PaymentID] = true
		logger.Warn("Payment after the refund was recorded; recorded as late, due back")
	} else if credits(p, o.in.PaymentAsset) {
		o.tally.Add(p.PaymentID, p.Amount)
		logger.Info("Payment credited", "Status", o.status, "AmountReceived", o.tally.Received.String())
	} else {
		o.strays++
		logger.Warn("Payment in another asset recorded, not credited; it is due back", "OrderAsset", o.in.PaymentAsset)
	}
	o.toRecord = append(o.toRecord, models.Payment{
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

// acceptCancel takes in a cancel request. Only an order still waiting for
// payment can be cancelled; later requests are logged and dropped.
func (o *order) acceptCancel(c CancelSignal) {
	if o.cancelReq != nil || !models.CanTransition(o.status, models.OrderCancelled) {
		o.logger.Info("Cancel request ignored", "Status", o.status, "RequestedBy", c.RequestedBy, "Reason", c.Reason)
		return
	}
	o.logger.Info("Cancel requested", "RequestedBy", c.RequestedBy, "Reason", c.Reason)
	o.cancelReq = &c
}

// validateCancel accepts a customer's cancel for an order awaiting payment
// whose amount due is not reached yet, and for an order already cancelled
// (answered as it is: cancelling twice is not an error). Anything else is
// refused, before the update enters the history. It only reads state.
func (o *order) validateCancel(_ workflow.Context, _ CancelRequest) error {
	if o.status == models.OrderCancelled || (o.status == models.OrderCreated && !o.tally.Paid()) {
		return nil
	}
	status := o.status
	if status == models.OrderCreated {
		status = models.OrderPaid // the amount due is in; the workflow moves it on at once
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("The order is %s: only an order awaiting payment can be cancelled", status),
		string(models.CodeOrderNotCancellable), nil)
}

// cancelByCustomer handles UpdateCancel: it takes in the cancel as an
// operator's would be (a cancel wins over a payment completing in the same
// instant), then answers once the order's new state is written, so the
// API's read that follows shows it. It waits on the never-cancelled
// context: if the workflow itself is cancelled meanwhile, the order is
// still closed and written (run), and that is the answer.
func (o *order) cancelByCustomer(ctx workflow.Context, r CancelRequest) (CancelResult, error) {
	if o.status == models.OrderCreated {
		o.acceptCancel(CancelSignal{Reason: r.Note, RequestedBy: "the customer (API)", Cancellation: models.CancellationRequestedByCustomer})
	}
	// Disconnected from the handler's own context: blocking calls take the
	// context of the coroutine that makes them.
	bg, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(bg, func() bool {
		return o.status != models.OrderCreated && o.written.Status == o.status
	}); err != nil {
		return CancelResult{}, err
	}
	if o.status != models.OrderCancelled {
		return CancelResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("The order is %s: only an order awaiting payment can be cancelled", o.status),
			string(models.CodeOrderNotCancellable), nil)
	}
	return CancelResult{Status: o.status, PaymentStatus: o.paymentStatus(), Cancellation: o.cancellation}, nil
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
	var a *activities.Activities
	for {
		_ = workflow.Await(ctx, func() bool { return len(o.toRecord) > 0 })
		o.recording = true
		for len(o.toRecord) > 0 {
			p := o.toRecord[0]
			o.toRecord = o.toRecord[1:]
			summary := fmt.Sprintf("Record payment %s: %s %s", p.ID, p.Amount.String(), p.Asset)
			var fut workflow.Future
			if o.late[p.ID] {
				// One that arrived while the refund is being written is
				// recorded after it, so the order's payment status ends
				// refund_due (this payment is due back), never refunded.
				_ = workflow.Await(ctx, func() bool { return !o.refunding || o.refunded })
				summary = fmt.Sprintf("Record late payment %s: %s %s", p.ID, p.Amount.String(), p.Asset)
				fut = workflow.ExecuteActivity(withOptions(ctx, storeOptions(summary)), a.RecordLatePayment, o.in.OrderID, p, workflow.Now(ctx))
			} else {
				fut = workflow.ExecuteActivity(withOptions(ctx, storeOptions(summary)), a.RecordPayment, o.in.OrderID, p)
			}
			if err := fut.Get(ctx, nil); err != nil {
				o.logger.Error("Recording a payment failed", "PaymentID", p.ID, "Error", err)
			}
		}
		if err := o.sync(ctx); err != nil {
			o.logger.Error("Recording the payment status failed", "Error", err)
		}
		o.recording = false
	}
}

// idle reports whether every payment taken in has been recorded.
func (o *order) idle() bool { return len(o.toRecord) == 0 && !o.recording }

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

// sync writes the order's current state, if it changed since the last
// write, and mirrors it in the search attributes. Writes are serialised so
// they reach the database in the order the workflow decided them.
func (o *order) sync(ctx workflow.Context) error {
	if err := o.writeMu.Lock(ctx); err != nil {
		return err
	}
	defer o.writeMu.Unlock()

	t := o.transition()
	if sameTransition(o.written, t) {
		return nil
	}
	if attrs := [2]string{string(t.Status), string(t.PaymentStatus)}; attrs != o.attrs {
		if err := workflow.UpsertTypedSearchAttributes(ctx,
			SearchAttrOrderStatus.ValueSet(attrs[0]),
			SearchAttrPaymentStatus.ValueSet(attrs[1]),
		); err != nil {
			return err
		}
		o.attrs = attrs
	}
	var a *activities.Activities
	summary := fmt.Sprintf("Record %s, payment %s", t.Status, t.PaymentStatus)
	if err := workflow.ExecuteActivity(withOptions(ctx, storeOptions(summary)),
		a.RecordTransition, o.in.OrderID, t).Get(ctx, nil); err != nil {
		return err
	}
	o.written = t
	o.showDetails()
	return nil
}

// transition is the order's current state as a database write.
func (o *order) transition() models.Transition {
	t := models.Transition{
		Status:         o.status,
		PaymentStatus:  o.paymentStatus(),
		At:             o.at,
		AmountReceived: o.tally.Received,
		Reason:         o.reason,
	}
	if o.status == models.OrderCancelled {
		t.Cancellation = o.cancellation
	}
	if o.shipment != (models.Shipment{}) {
		s := o.shipment
		t.Shipment = &s
	}
	return t
}

func (o *order) paymentStatus() models.PaymentStatus {
	ps := paymentStatusOf(o.status, o.unpaidClose, o.tally, o.strays)
	if o.refunded && ps == models.PaymentRefundDue {
		// As the database records it (MarkOrderRefunded).
		return models.PaymentRefunded
	}
	return ps
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

func (o *order) result() OrderResult {
	return OrderResult{Status: o.status, PaymentStatus: o.paymentStatus(), AmountReceived: o.tally.Received}
}

// withOptions returns ctx with activity options set.
func withOptions(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context {
	return workflow.WithActivityOptions(ctx, opts)
}

// Activity timeouts. Each activity the order workflow runs has two, for
// two different failures:
//
//   - HeartbeatTimeout (activityHeartbeat) notices an attempt lost with
//     its worker: a process killed or partitioned mid-call completes
//     nothing and says nothing, and without a heartbeat Temporal would
//     retry it only when StartToCloseTimeout ran out (2 minutes for
//     PlaceOrder and CheckOrder before: docs/reliability.md).
//     The activities beat from a ticker for as long as the call runs
//     (activities.Activities.heartbeat), so the timeout measures whether
//     the worker is alive, not how long the call may take: a healthy slow
//     attempt is never cut short by it. 10 s and the first retry's 1 s
//     put a lost attempt back on a live worker about 11 s later. The
//     worker sends a live attempt's beats at least every 3 s
//     (worker.HeartbeatSendInterval; the SDK's own default would be 8 s,
//     0.8 × the timeout, leaving a loaded worker only 2 s to reach the
//     server before a healthy attempt is timed out).
//   - StartToCloseTimeout bounds an attempt hung in a live worker, which
//     keeps beating: a call that ignores its context, a lock never
//     released. It is set above the longest healthy attempt.
//
// Retries are safe whichever timeout fires, also while the lost attempt
// may still be running somewhere: every activity is idempotent
// (PlaceOrder by order id and placement attempt, which a retry keeps).
const (
	activityHeartbeat = 10 * time.Second
	// storeTimeout: a database write takes milliseconds; 30 s covers a
	// Postgres restart (connections are dialled with a 5 s timeout) and
	// lock waits. The writes carry no statement timeout of their own.
	storeTimeout = 30 * time.Second
	// providerTimeout: PlaceOrder and CheckOrder read the order, make at
	// most two calls to the buying provider (Zinc: the order, and on a
	// used idempotency key its lookup), each bounded by the client at
	// zinc.DefaultTimeout (15 s), and write the snapshot: at most about
	// 30 s plus two database calls when healthy.
	providerTimeout = time.Minute
	// fulfilmentTimeout: the blocking activities of runs from before
	// polling (SourceOrder, ShipOrder, DeliverOrder) wait for a step for
	// as long as it takes; an attempt ends here and its retry checks the
	// provider again and goes on waiting.
	fulfilmentTimeout    = 15 * time.Minute
	retryInitialInterval = time.Second
	retryMaxInterval     = time.Minute
)

// retryPolicy retries without limit: every activity is idempotent, and
// every business failure is non-retryable, so a retry only ever waits out
// an outage. A stuck activity shows its attempt count and last failure in
// the Temporal UI.
func retryPolicy() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    retryInitialInterval,
		BackoffCoefficient: 2,
		MaximumInterval:    retryMaxInterval,
		// The activities already mark these non-retryable; listing them
		// here holds even for an activity that forgets.
		NonRetryableErrorTypes: []string{
			string(models.CodeOrderNotFound),
			string(models.CodeSourcingFailed),
			string(models.CodeInvalidRequest),
		},
	}
}

// storeOptions: one call to the database: the order's writes, and the
// WebhookEvent workflow's endpoint lookup and disabling. Every activity
// run with them heartbeats (activities.Activities.heartbeat).
func storeOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: storeTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             summary,
	}
}

// placeOptions: placing an order is one HTTP call to the provider (two
// when the provider says the attempt was placed already); retried, it is
// idempotent by order id and attempt, so a retry of an attempt lost with
// its worker returns the order that attempt placed, if it got that far,
// and never buys again.
func placeOptions(attempt int) workflow.ActivityOptions {
	summary := "Place the order with the buying provider"
	if attempt > 1 {
		summary = fmt.Sprintf("%s (attempt %d)", summary, attempt)
	}
	return workflow.ActivityOptions{
		StartToCloseTimeout: providerTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             summary,
	}
}

// checkOptions: one read of the order at the provider.
func checkOptions(status models.OrderStatus) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: providerTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             fmt.Sprintf("Check the order with the buying provider (now %s)", status),
	}
}

// fulfilmentOptions: one blocking step of a run from before polling. Its
// activity beats through the waits between checks too, so the heartbeat
// timeout is the same as everywhere else. (It was 1 minute while the beats
// stopped between checks, so an attempt waiting for Zinc's next check,
// 4 minutes or more away, timed out a minute into every wait.)
func fulfilmentOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: fulfilmentTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             summary,
	}
}

// sourcingFailure reports whether err is the marketplace's permanent
// refusal to sell, and the reason to keep for operators.
func sourcingFailure(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != string(models.CodeSourcingFailed) {
		return "", false
	}
	// The cause carries the fulfiller's own words (which product, why).
	var cause *temporal.ApplicationError
	if errors.As(appErr.Unwrap(), &cause) && cause.Message() != "" {
		return cause.Message(), true
	}
	return appErr.Message(), true
}
