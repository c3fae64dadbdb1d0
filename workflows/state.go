package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// order is the state of one Order run, grouped as its comments describe:
// the order itself, its payments, its refunds, what was written of it,
// and the run's own bookkeeping. Its fields are touched by the main
// coroutine and the signal coroutines; workflow coroutines never run in
// parallel, so no locking is needed except to keep database writes in
// order (persist.writeMu).
type order struct {
	in     OrderInput
	logger log.Logger
	// bg is never cancelled: bookkeeping (database writes, payment
	// records) must complete even when the workflow is cancelled.
	bg workflow.Context

	status models.OrderStatus
	// detail is the buying provider's own account of a refusal (which
	// fulfiller, order, product), for operators: the current details and
	// the workflow's failure show it; reason, which customers read, never
	// holds it.
	detail string
	// unpaidClose is the payment status a cancelled order shows when it
	// received nothing: expired (deadline) or cancelled (operator).
	unpaidClose models.PaymentStatus
	reason      string
	// cancellation is why a cancelled order was cancelled, for clients.
	cancellation models.CancellationReason
	at           time.Time // workflow time the current status was reached: the step's timestamp
	shipment     models.Shipment
	cancelReq    *CancelSignal
	// expireNow: the test helper moved the payment deadline to now.
	expireNow bool

	payments, cancels workflow.ReceiveChannel
	updates           workflow.ReceiveChannel // FulfilmentSignal hints

	pay     orderPayments
	refund  orderRefunds
	persist orderWrites
	book    runState
	tests   testMoves
}

// orderPayments are the payments the run took in.
type orderPayments struct {
	tally     models.PaymentTally
	seen      map[string]bool  // every payment id taken in, credited or not; looked up, never iterated
	strays    int              // payments recorded but not credited: wrong asset
	toRecord  []models.Payment // taken in, not yet recorded
	recording bool
	late      map[string]bool // ids of toRecord payments to record as late
}

// orderRefunds is where the money the order owes back stands.
type orderRefunds struct {
	// recorded: an operator's refund of the money received is recorded;
	// payments taken in after it are late, never credited.
	recorded bool
	writing  bool // a refund is being written: payments are late already
	// handedOver: the order's refunds are created (handOverRefunds);
	// payments taken in after it are late, each refunded on its own.
	handedOver bool
}

// orderWrites is what the run wrote of its order, the only writer of it,
// and how it writes.
type orderWrites struct {
	writeMu workflow.Mutex
	written models.Transition // last state written, initially what the API wrote
	attrs   [2]string         // last upserted OrderStatus, PaymentStatus
	// localWrites: this run writes the order as local activities
	// (changeLocalWrites), asked at its first write; nil until then.
	localWrites *bool
	// holdAttrs defers upserting the search attributes while one check's
	// steps are written: operators see the last (advance).
	holdAttrs bool
	// holdWrites skips the database writes of steps a watch has written
	// (advance), in runs from before changeWatchReports.
	holdWrites bool
}

// runState is the run's own bookkeeping.
type runState struct {
	// baseline: the newest baseline this run started from, 0 for none
	// (startBaseline, atLatest).
	baseline int
	// checks counts this run's checks with the buying provider
	// (runIsLong).
	checks int
	hints  map[string]bool // event ids of hints taken; looked up, never iterated
	note   string          // shown in the current details (setDetails)
}

// move advances the order along an allowed transition and writes it.
func (o *order) move(ctx workflow.Context, to models.OrderStatus, reason string) error {
	if !models.CanTransition(o.status, to) {
		// A bug in the workflow's code, not in the order: fail the workflow
		// task so it can be fixed and the run replayed.
		panic(fmt.Sprintf("order workflow: transition %s → %s not allowed", o.status, to))
	}
	o.set(ctx, to, o.unpaidClose, reason)
	return o.sync(o.bg)
}

// set changes the order's status in memory; sync writes it.
func (o *order) set(ctx workflow.Context, status models.OrderStatus, unpaidClose models.PaymentStatus, reason string) {
	o.status, o.unpaidClose, o.reason, o.at = status, unpaidClose, reason, workflow.Now(ctx)
}

// sync writes the order's current state, if it changed since the last
// write, and mirrors it in the search attributes. Writes are serialised so
// they reach the database in the order the workflow decided them.
func (o *order) sync(ctx workflow.Context) error {
	if err := o.persist.writeMu.Lock(ctx); err != nil {
		return err
	}
	defer o.persist.writeMu.Unlock()

	t := o.transition()
	if attrs := [2]string{string(t.Status), string(t.PaymentStatus)}; attrs != o.persist.attrs && !o.persist.holdAttrs {
		if err := workflow.UpsertTypedSearchAttributes(ctx,
			SearchAttrOrderStatus.ValueSet(attrs[0]),
			SearchAttrPaymentStatus.ValueSet(attrs[1]),
		); err != nil {
			return err
		}
		o.persist.attrs = attrs
	}
	if o.persist.holdWrites || sameTransition(o.persist.written, t) {
		return nil
	}
	var (
		a    *activities.Orders
		old  *activities.Positional
		both *activities.BothShapes
	)
	summary := fmt.Sprintf("Record %s, payment %s", t.Status, t.PaymentStatus)
	c := call{fn: a.RecordTransition, in: activities.RecordTransitionInput{OrderID: o.in.OrderID, Transition: t},
		old: old.RecordTransition, args: []any{o.in.OrderID, t}, both: both.RecordTransition}
	if err := o.write(ctx, summary, c); err != nil {
		return err
	}
	o.persist.written = t
	o.showDetails()
	return nil
}

// transition is the order's current state as a database write.
func (o *order) transition() models.Transition {
	t := models.Transition{
		Status:         o.status,
		PaymentStatus:  o.paymentStatus(),
		At:             o.at,
		AmountReceived: o.pay.tally.Received,
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

// paymentStatus is the order's payment status, derived from its state
// (paymentStatusOf) as the database records it.
func (o *order) paymentStatus() models.PaymentStatus {
	ps := paymentStatusOf(o.status, o.unpaidClose, o.pay.tally, o.pay.strays)
	if o.refund.recorded {
		// As the database records it (MarkOrderRefunded).
		return models.PaymentStatusAfterRefund(ps)
	}
	return ps
}

// changeLocalWrites is the workflow.GetVersion change id of the order's
// database writes as local activities (version 1): each write is a marker
// in the workflow task that decided it, instead of an activity's three
// events, its action and a workflow task of its own.
const changeLocalWrites = "local-writes"

// localWriteOptions: a local write is tried for a few seconds within its
// workflow task; past that (the database is down or slow) it is handed to
// a regular activity, which retries visibly in the Temporal UI.
func localWriteOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 10 * time.Second,
		StartToCloseTimeout:    5 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        200 * time.Millisecond,
			BackoffCoefficient:     2,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: retryPolicy().NonRetryableErrorTypes,
		},
	}
}

// write runs one of the order's database writes (c): as a local activity
// in runs from changeLocalWrites on (localFirst), as a regular activity
// before.
func (o *order) write(ctx workflow.Context, summary string, c call) error {
	if o.persist.localWrites == nil {
		local := o.atLatest(ctx, changeLocalWrites)
		o.persist.localWrites = &local
	}
	if *o.persist.localWrites {
		return localThenRegular(ctx, o.logger, localWriteOptions(), storeOptions(summary), nil, c.local(), o.shaped(c))
	}
	sc := o.shaped(c)
	return workflow.ExecuteActivity(withOptions(ctx, storeOptions(summary)), sc.fn, sc.args...).Get(ctx, nil)
}

// localFirst runs fn (an activity of activities.Orders or
// activities.Payments taking args,
// idempotent) as a local activity, and when that fails for any reason but
// a business refusal, as a regular activity with regular's options, which
// retries visibly in the Temporal UI. A local activity is a marker in the
// workflow task that decided it, instead of an activity's three events,
// its action and a workflow task of its own. Both are idempotent, so a
// local attempt whose outcome was lost and the regular one after it act
// once. result receives fn's result (nil: none).
func localFirst(ctx workflow.Context, logger log.Logger, local workflow.LocalActivityOptions, regular workflow.ActivityOptions, result any, fn any, args ...any) error {
	c := shapedCall{fn: fn, args: args}
	return localThenRegular(ctx, logger, local, regular, result, c, c)
}

// localThenRegular is localFirst with the local call's and the regular
// call's arguments apart: a local activity runs in this worker, a
// regular one on any worker, which may take an older shape.
func localThenRegular(ctx workflow.Context, logger log.Logger, local workflow.LocalActivityOptions, regular workflow.ActivityOptions, result any, lc, rc shapedCall) error {
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, local), lc.fn, lc.args...).Get(ctx, result)
	var appErr *temporal.ApplicationError
	if err == nil || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		return err
	}
	logger.Warn("Local activity failed; retrying it as an activity", "Activity", regular.Summary, "Error", err)
	return workflow.ExecuteActivity(withOptions(ctx, regular), rc.fn, rc.args...).Get(ctx, result)
}
