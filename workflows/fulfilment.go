package workflows

import (
	"errors"
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
	if workflow.GetVersion(ctx, changeFulfilByPolling, workflow.DefaultVersion, 1) == 1 {
		return o.fulfilByPolling(ctx)
	}
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
	var a *activities.Activities
	err = workflow.ExecuteActivity(withOptions(ctx, placeOptions(attempt)), a.PlaceOrder, o.in.OrderID, attempt).Get(ctx, &p)
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

// followOrder checks the order placed as ref (placement attempt) on the
// provider's schedule, or at once when the provider's webhook signals a
// change, moving the order along as the provider reports it, until it is
// delivered or failed. The first check is due after wait. A run whose
// history grows long continues as new (continueAsNew) between checks.
func (o *order) followOrder(ctx workflow.Context, ref string, attempt int, wait time.Duration) error {
	var a *activities.Activities
	for {
		if o.runIsLong(ctx) {
			return o.continueAsNew(ctx, ref, attempt, wait)
		}
		o.awaitCheck(ctx, wait, ref)
		var p models.Progress
		err := workflow.ExecuteActivity(withOptions(ctx, checkOptions(o.status)), a.CheckOrder, o.in.OrderID, ref).Get(ctx, &p)
		if err != nil {
			return err
		}
		o.checks++
		if p.Status == models.OrderFailed && p.Retry && attempt < maxPlacements {
			attempt++
			o.logger.Warn("Retailer failed the order for a passing reason; placing it again", "Reason", p.Reason, "Attempt", attempt)
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
