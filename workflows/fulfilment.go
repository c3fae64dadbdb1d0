package workflows

import (
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// FulfilmentSignal is a hint that the order changed at its buying
// provider. The workflow never takes its content as the truth: it checks
// the provider, so duplicate, late and out-of-order hints change nothing.
type FulfilmentSignal struct {
	EventID string // the provider's event id, for the logs
	Ref     string // the provider's order id
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

	// Old runs: a run whose history passed this point before
	// fulfil-by-polling was deployed has no marker and goes on in one
	// blocking activity per step (fulfilment_legacy.go). Delete that file
	// and make this GetVersion(ctx, changeFulfilByPolling, 1, 1) once no
	// such run is open: `WorkflowType = "Order" AND ExecutionStatus =
	// "Running" AND StartTime < "2026-11-23T10:06:31Z"` (commit c07eb40;
	// the deploy's time if later) finds none. The testdata histories
	// recorded before it (those with SourceOrder) go in the same change.
	if o.atLatest(ctx, changeFulfilByPolling) {
		return o.fulfilByPolling(ctx)
	}
	o.tests.legacy = true
	return o.fulfilByBlocking(ctx)
}

// changeFulfilByPolling is the workflow.GetVersion change id of fulfilment
// by PlaceOrder and periodic CheckOrder activities (version 1), replacing
// one blocking activity per step (DefaultVersion).
const changeFulfilByPolling = "fulfil-by-polling"

// maxPlacements bounds how often an order is placed again after a
// retryable failure at the retailer (Progress.Retry).
const maxPlacements = 3

// fulfilByPolling places the order with its buying provider, then follows
// it (followOrder).
func (o *order) fulfilByPolling(ctx workflow.Context) error {
	const attempt = 1
	placed, failed, err := o.place(ctx, attempt)
	if failed || err != nil {
		return err
	}
	return o.followOrder(ctx, placed.Ref, attempt, placed.CheckAfter)
}

// place places attempt of the order; failed says the provider refused it,
// and the order is failed.
func (o *order) place(ctx workflow.Context, attempt int) (p models.Placement, failed bool, err error) {
	var a *activities.Orders
	var old *activities.Positional
	sc := o.shaped(call{fn: a.PlaceOrder, in: activities.PlaceOrderInput{OrderID: o.in.OrderID, Attempt: attempt},
		old: old.PlaceOrder, args: []any{o.in.OrderID, attempt}})
	err = workflow.ExecuteActivity(withOptions(ctx, placeOptions(attempt)), sc.fn, sc.args...).Get(ctx, &p)
	if reason, detail, ok := sourcingFailure(err); ok {
		o.logger.Warn("Order refused by the buying provider; order failed, payment due back", "Reason", reason, "Detail", detail)
		o.detail = detail
		return p, true, o.move(ctx, models.OrderFailed, reason)
	}
	if err == nil {
		o.logger.Info("Order placed with the buying provider", "SupplierRef", p.Ref, "Attempt", attempt)
	}
	return p, false, err
}

// followOrder follows the order placed as ref (placement attempt) at its
// provider, moving the order along as the provider reports it, until it
// is delivered or failed. The first check is due after wait; the
// provider's webhook (a hint) makes it check at once. A run whose history
// grows long continues as new (continueAsNew) between checks.
func (o *order) followOrder(ctx workflow.Context, ref string, attempt int, wait time.Duration) error {
	// Old runs: a run that reached this point before watch-by-retry was
	// deployed checks on a timer (checkWhenDue). Drop that path once no
	// such run is open: `WorkflowType = "Order" AND ExecutionStatus =
	// "Running" AND StartTime < T` (T the deploy of this change, landed
	// 2026-11-26) finds none; the testdata histories with a CheckOrder
	// after a timer go in the same change.
	// A watch still running when the run ends is dropped with it:
	// cancelling it would cost two events and a workflow task.
	var w *watch
	if o.atLatest(ctx, changeWatchByRetry) {
		w = &watch{}
	} else {
		o.tests.legacy = true
	}
	for {
		// The news of the moves taken is written: their updates answer.
		o.tests.done = o.tests.taken
		if o.runIsLong(ctx) && o.tests.sent == o.tests.done {
			return o.continueAsNew(ctx, ref, attempt, wait)
		}
		var p models.Progress
		news := true
		var err error
		if w != nil {
			p, news, err = o.awaitNews(ctx, w, ref, wait)
		} else {
			p, err = o.checkWhenDue(ctx, ref, wait)
		}
		if err != nil {
			return err
		}
		if !news {
			wait = p.NextCheck
			continue
		}
		if p.Status == models.OrderFailed && p.Retry && attempt < maxPlacements {
			attempt++
			o.logger.Warn("Retailer failed the order for a passing reason; placing it again", "Reason", p.Reason, "Attempt", attempt)
			if w != nil {
				w.stop() // it follows the failed placement
			}
			placed, failed, err := o.place(ctx, attempt)
			if failed || err != nil {
				return err
			}
			ref, wait = placed.Ref, placed.CheckAfter
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

// changeWatchByRetry is the workflow.GetVersion change id of following an
// order with a WatchOrder activity whose idle checks are retries
// (version 1), replacing a timer and a CheckOrder activity per check
// (DefaultVersion).
const changeWatchByRetry = "watch-by-retry"

// changeWatchReports is the workflow.GetVersion change id of the run as
// the only writer of its order: version 1 starts each watch without
// WatchOrderInput.Written, so the watch returns the news it found and the
// run writes the steps (advance, local activities). DefaultVersion runs
// had the watch write them on their behalf (Progress.Recorded), which took
// a marker protocol (Fulfilment.WatchWrote) to keep two writers of one
// order from losing an update. Drop that path, WatchOrderInput.Written and
// WatchWrote once no such run is open: `WorkflowType = "Order" AND
// ExecutionStatus = "Running" AND StartTime < T` (T the deploy of this
// change) finds none; order_delivered_watch_writes.json and the other
// histories whose watches carry Written go in the same change.
const changeWatchReports = "watch-reports"

// watch is the WatchOrder activity following the order, if one is
// running. It compares the provider's progress with the order as the
// database holds it, so it stays current while the run moves the order
// on a hint's check: one watch lasts until it reports news.
type watch struct {
	running workflow.Future
	cancel  workflow.CancelFunc
}

// stop cancels the watch, if one is running.
func (w *watch) stop() {
	if w.running != nil {
		w.cancel()
		w.running = nil
	}
}

// awaitNews waits for news of the order at its provider (see
// models.Progress.News) and returns it: from the watch, which it starts
// if none is running (its first check after wait), or from a check made
// at once when the provider hints at a change (CheckOrder). It returns
// without news (news false, the next check's wait in p.NextCheck) when
// checks have made the run long enough to continue as new.
func (o *order) awaitNews(ctx workflow.Context, w *watch, ref string, wait time.Duration) (p models.Progress, news bool, err error) {
	var a *activities.Orders
	for {
		if w.running == nil {
			var watchCtx workflow.Context
			watchCtx, w.cancel = workflow.WithCancel(ctx)
			in := activities.WatchOrderInput{OrderID: o.in.OrderID, Ref: ref, NotBefore: workflow.Now(ctx).Add(wait)}
			if !o.atLatest(ctx, changeWatchReports) {
				written := o.transition()
				in.Written = &written
			}
			w.running = workflow.ExecuteActivity(withOptions(watchCtx, watchOptions(o.status)), a.WatchOrder, in)
		}
		checked := false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(w.running, func(f workflow.Future) {
			w.running, checked = nil, true
			err = f.Get(ctx, &p)
			if watchRanOut(err) {
				o.logger.Info("Watch at the buying provider made its last check; watching again", "Error", err)
				p, err, wait = models.Progress{}, nil, 0
				return
			}
			wait = p.NextCheck
		})
		moved := false
		sel.AddReceive(o.tests.ch, func(c workflow.ReceiveChannel, more bool) {
			var m models.TestMove
			c.Receive(ctx, &m)
			o.tests.taken++
			o.logger.Info("Test helper moves the order at the sandbox provider", "Advance", m.Advance, "Fail", m.Fail, "OrderRef", ref)
			check := o.checkCall(ref)
			check.in = activities.CheckOrderInput{OrderID: o.in.OrderID, Ref: ref, Move: &m}
			err = localThenRegular(ctx, o.logger, localCheckOptions(), checkOptions(o.status), &p, check.local(), o.shaped(check))
			checked, moved = true, true
		})
		sel.AddReceive(o.updates, func(c workflow.ReceiveChannel, more bool) {
			var sig FulfilmentSignal
			c.Receive(ctx, &sig)
			if !o.newHint(sig) {
				return
			}
			o.logger.Info("Buying provider signalled a change", "EventID", sig.EventID, "Ref", sig.Ref, "OrderRef", ref)
			check := o.checkCall(ref)
			err = localThenRegular(ctx, o.logger, localCheckOptions(), checkOptions(o.status), &p, check.local(), o.shaped(check))
			checked = true
		})
		sel.Select(ctx)
		if !checked {
			continue
		}
		o.book.checks++
		if err != nil || p.Status != "" && p.News(o.status, o.shipment) {
			return p, err == nil, err
		}
		if moved {
			return p, false, nil // the move's update answers: nothing came of it
		}
		if o.grownLong(ctx) {
			return p, false, nil
		}
	}
}

// watchRanOut reports whether err only says a watch used up its checks
// (watchChecks): the last found nothing new, or failed for a passing
// reason. The run watches again; any other error ends it.
func watchRanOut(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return !appErr.NonRetryable() && !slices.Contains(retryPolicy().NonRetryableErrorTypes, appErr.Type())
	}
	var timeout *temporal.TimeoutError
	return errors.As(err, &timeout)
}

// checkWhenDue is how runs from before watch-by-retry check the order: a
// timer for the next check (awaitCheck), then a CheckOrder activity.
func (o *order) checkWhenDue(ctx workflow.Context, ref string, wait time.Duration) (models.Progress, error) {
	o.awaitCheck(ctx, wait, ref)
	var p models.Progress
	sc := o.shaped(o.checkCall(ref))
	err := workflow.ExecuteActivity(withOptions(ctx, checkOptions(o.status)), sc.fn, sc.args...).Get(ctx, &p)
	if err == nil {
		o.book.checks++
	}
	return p, err
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
	if o.book.hints[sig.EventID] {
		return false
	}
	o.book.hints[sig.EventID] = true
	return true
}

// advance moves the order as far as the provider's progress says, one
// allowed step at a time (models.Progress.Transitions), and keeps the
// shipment current: estimated delivery dates change while a parcel
// travels. Progress behind the order's status changes nothing. In runs
// from before changeWatchReports, steps a watch has written already
// (p.Recorded) are taken as written.
func (o *order) advance(ctx workflow.Context, p models.Progress) error {
	if p.Status == models.OrderFailed {
		o.logger.Warn("Buying provider failed the order; payment due back", "Reason", p.Reason)
		return o.move(ctx, models.OrderFailed, p.Reason)
	}
	// Each step is written, but the search attributes are upserted once,
	// with the last (runs from the baseline: older runs upserted each).
	o.persist.holdAttrs, o.persist.holdWrites = o.book.baseline > 0, p.Recorded != nil
	defer func() { o.persist.holdAttrs, o.persist.holdWrites = false, false }()
	for _, t := range p.Transitions(o.transition(), workflow.Now(ctx)) {
		if t.Shipment != nil {
			o.shipment = *t.Shipment
		}
		if t.Status == o.status {
			continue // the shipment changed: written below
		}
		o.logger.Info("Order moved on at the buying provider", "Status", t.Status)
		if err := o.move(ctx, t.Status, ""); err != nil {
			return err
		}
	}
	if r := p.Recorded; r != nil {
		o.persist.written = *r
		if r.Status == o.status {
			o.at = r.At // the step's timestamp, as written
		}
		o.showDetails()
	}
	o.persist.holdAttrs, o.persist.holdWrites = false, false
	return o.sync(o.bg)
}

// sourcingFailure reports whether err is the marketplace's permanent
// refusal to sell, with the reason the order records (its failure_reason,
// which customers read) and the provider's detail for operators.
//
// The activity's message is the customer's sentence and its details the
// detail (which fulfiller, order, product). Old runs: refusals recorded
// before that carried the detail as the error's cause, and the workflow
// took the cause's message as the reason; replaying them must record the
// same reason, so a cause still wins. That branch goes once no run that
// started before this release is open (the histories recorded before it
// replay through it: order_sourcing_failed*.json, order_failed_refunded).
func sourcingFailure(err error) (reason, detail string, ok bool) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != string(models.CodeSourcingFailed) {
		return "", "", false
	}
	var cause *temporal.ApplicationError
	if errors.As(appErr.Unwrap(), &cause) && cause.Message() != "" {
		return cause.Message(), "", true
	}
	if appErr.HasDetails() {
		_ = appErr.Details(&detail) // a detail that does not decode is left out
	}
	return appErr.Message(), detail, true
}
