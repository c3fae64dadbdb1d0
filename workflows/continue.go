package workflows

import (
	"maps"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// Every Order history is bounded: a run that follows its order at the
// provider for long continues as new between two checks, carrying its
// state (OrderResume), long before Temporal's limits (a warning at 10,240
// events, termination at 51,200). Idle checks are retries of one watch
// and add no events (watch); what grows a history is the checks a
// provider's hints ask for (about 10 events each) and, in runs from
// before watch-by-retry, every check (about 11).

// historyBound is the history length past which a following run continues
// as new at its next check, so a run stays under 2,000 events.
const historyBound = 1500

// maxChecksPerRun bounds the checks one run makes, whatever the server
// reports of its history (a test environment reports none): 100 checks
// are about 1,100 events on top of a run's start.
const maxChecksPerRun = 100

// changeContinueAsNew is the workflow.GetVersion change id of continuing
// a long run as new. It is asked only of a run that has grown long, so
// runs that never do record no marker; a run from before it that has
// grown long replays without continuing.
const changeContinueAsNew = "continue-as-new"

// OrderResume is what a continued run of an order picks up: the state of
// the run before it, which was following the order at its provider. The
// deadline and amounts stay in OrderInput.
type OrderResume struct {
	Status models.OrderStatus
	At     time.Time // when Status was reached: its step's timestamp
	Reason string    `json:",omitempty"`
	// Received is what the order credited; Counted the ids of the
	// payments credited, Seen of every payment taken in (credited or
	// not), so a payment delivered again is counted once across runs.
	Received decimal.Decimal
	Counted  []string `json:",omitempty"`
	Seen     []string `json:",omitempty"`
	Strays   int      `json:",omitempty"`
	Shipment models.Shipment
	// Ref and Attempt are the provider's order being followed and its
	// placement; CheckAfter is when the next check is due, from the
	// continued run's start (zero: at once, a hint was pending).
	Ref        string
	Attempt    int
	CheckAfter time.Duration
	// Written and Attrs are what the database and the search attributes
	// hold, so the continued run writes and upserts only changes.
	Written models.Transition
	Attrs   [2]string
	// Runs counts the runs before this one.
	Runs int
}

// runIsLong reports whether this run should continue as new before its
// next check.
func (o *order) runIsLong(ctx workflow.Context) bool {
	return o.grownLong(ctx) && o.atLatest(ctx, changeContinueAsNew)
}

// grownLong reports whether this run has made enough checks, or grown a
// history long enough, to continue as new.
func (o *order) grownLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return o.book.checks >= maxChecksPerRun || info.GetCurrentHistoryLength() >= historyBound || info.GetContinueAsNewSuggested()
}

// continueAsNew ends this run with a continue-as-new carrying its state.
// Nothing received may be lost in the switch: every payment taken in is
// recorded first and every update answered; a provider's hint still
// buffered makes the continued run check at once. A signal arriving after
// this point fails the closing workflow task, and the run takes it in
// before trying again.
func (o *order) continueAsNew(ctx workflow.Context, ref string, attempt int, wait time.Duration) error {
	o.tests.continuing = true
	if err := o.settle(o.bg); err != nil {
		return err
	}
	if err := workflow.Await(o.bg, func() bool { return workflow.AllHandlersFinished(o.bg) }); err != nil {
		return err
	}
	var sig FulfilmentSignal
	for o.updates.ReceiveAsync(&sig) {
		if o.newHint(sig) {
			wait = 0
		}
	}
	in := o.in
	in.SearchAttributesSet = true // the run's search attributes carry over
	r := &OrderResume{
		Status: o.status, At: o.at, Reason: o.reason, Received: o.pay.tally.Received, Strays: o.pay.strays,
		Shipment: o.shipment, Ref: ref, Attempt: attempt, CheckAfter: wait,
		Written: o.persist.written, Attrs: o.persist.attrs,
	}
	if o.in.Resume != nil {
		r.Runs = o.in.Resume.Runs + 1
	}
	// Sorted: map order is random, and the input is recorded in the
	// history, so the iteration cannot leak into it.
	r.Counted = slices.Sorted(maps.Keys(o.pay.tally.Seen)) //workflowcheck:ignore
	r.Seen = slices.Sorted(maps.Keys(o.pay.seen))          //workflowcheck:ignore
	in.Resume = r
	o.logger.Info("Continuing as new", "Checks", o.book.checks, "HistoryLength", workflow.GetInfo(ctx).GetCurrentHistoryLength(), "Runs", r.Runs+1)
	return workflow.NewContinueAsNewError(ctx, OrderWorkflowName, in)
}

// resume restores the state a continued run carries.
func (o *order) resume(r *OrderResume) {
	o.status, o.at, o.reason = r.Status, r.At, r.Reason
	o.pay.tally.Received = r.Received
	for _, id := range r.Counted {
		o.pay.tally.Seen[id] = true
	}
	for _, id := range r.Seen {
		o.pay.seen[id] = true
	}
	o.pay.strays, o.shipment = r.Strays, r.Shipment
	o.persist.written, o.persist.attrs = r.Written, r.Attrs
}
