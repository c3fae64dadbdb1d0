package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// The Refund workflow: one run per refund (models.Refund), which pays the
// money back once it has a destination and an approval. The database
// holds the refund; this run is its one writer while it is open, so every
// move (a destination, an approval, a payout, a cancellation) is decided
// here in order, and the run is the operators' queue in the Temporal UI.

// Names of the Refund workflow, part of its histories: never renamed.
const (
	// RefundWorkflowName is the registered workflow type of Refund.
	RefundWorkflowName = "Refund"
	// UpdateSetRefundDestination carries a RefundDestinationRequest: where
	// the money goes (the API client or the payer). Refused while the
	// payout is being sent and once sent or cancelled; a destination that
	// Horizon says cannot receive the asset is refused with
	// invalid_refund_destination. Answers the refund.
	UpdateSetRefundDestination = "set-destination"
	// UpdateApproveRefund carries a RefundOperatorRequest: an operator
	// approves the payout of a refund awaiting approval, or retries a
	// failed one to the same destination. Answers the refund.
	UpdateApproveRefund = "approve"
	// UpdateCancelRefund carries a RefundOperatorRequest: an operator
	// settled the refund another way; nothing will be sent.
	UpdateCancelRefund = "cancel"
	// UpdateMarkRefundSent carries a RefundOperatorRequest with TxHash: an
	// operator paid the refund from another wallet. The refund's payer
	// checks that the transaction paid it (on Horizon in live mode); one
	// that does not is refused with invalid_request.
	UpdateMarkRefundSent = "mark-sent"
	// UpdateTestFailPayout carries a RefundTestFailRequest: test mode's
	// helper asking that the refund's next payout be refused as the
	// network would refuse it (models.DecideTestPayoutRefusal). Answers
	// the refund as it stands; the refusal comes with the payout.
	UpdateTestFailPayout = "test-fail-payout"
	// QueryRefund returns the refund as this run knows it (models.Refund).
	QueryRefund = "refund"
)

// changeRefundReadsStore is the workflow.GetVersion change id of a Refund
// run reading its refund from the database before its first decision:
// a run started after an earlier one was terminated or cancelled may be
// given a copy older than that run's last move (a refund it approved
// looks unapproved, and the new run would wait for a move the refund can
// no longer take, its payout never made). Version 1 reads it with an
// activity; version 2 with a local activity (localFirst), a marker in the
// run's first workflow task instead of an activity's three events, its
// action and a workflow task of its own, since every run pays for the read
// and only a restarted one needs it.
const changeRefundReadsStore = "refund-reads-store"

// SearchAttrRefundStatus is a Refund run's status (models.RefundStatus),
// kept current so that operators list the refunds waiting for them.
var SearchAttrRefundStatus = temporal.NewSearchAttributeKeyKeyword("RefundStatus")

// RefundInput starts a Refund workflow: the refund as stored when its run
// was started. A run reads the refund again before its first decision
// (changeRefundReadsStore): its starter's copy may be older than a move
// written by an earlier run of the refund that closed meanwhile.
type RefundInput struct {
	Refund      models.Refund
	OrderNumber string `json:",omitempty"` // for operators; empty for an unmatched payment
}

// RefundOutcome is how a refund ended: sent (with its transaction) or
// cancelled.
type RefundOutcome struct {
	Status          models.RefundStatus
	TransactionHash string `json:",omitempty"`
}

// RefundDestinationRequest is UpdateSetRefundDestination's input.
type RefundDestinationRequest struct {
	Destination models.RefundDestination
	By          string `json:",omitempty"` // who set it: "api", "claim", an operator
	// Claim, for By "claim", names the claim link used: the hash of its
	// token (models.RefundClaimHash), never the token (a credential, and
	// histories are kept). The write uses the claim up, and is refused
	// (refund_not_found) once the claim no longer works.
	Claim string `json:",omitempty"`
}

// RefundTestFailRequest is UpdateTestFailPayout's input: the refusal
// (models.TestPayoutRefusals).
type RefundTestFailRequest struct {
	Reason string
}

// RefundOperatorRequest is the input of an operator's update: approve,
// cancel, mark-sent (TxHash).
type RefundOperatorRequest struct {
	By     string `json:",omitempty"`
	TxHash string `json:",omitempty"`
}

// RefundStartOptions returns the options to start the Refund workflow of
// in on taskQueue: id refund-<refund id>; a second start while a run is
// open returns that run, so whoever starts it (the order's run, a late
// payment, a move, the reconciler) may start it again. A run completes
// only once its refund is settled, so a completed run is never followed by
// another; a run that closed otherwise (an operator terminated or
// cancelled it in the Temporal UI; it failed or timed out) left its refund
// unsettled, and a new run takes it on from the database
// (ALLOW_DUPLICATE_FAILED_ONLY). No money moves twice for it: the payout
// looks up the transaction the earlier run recorded before building one.
func RefundStartOptions(in RefundInput, taskQueue string) client.StartWorkflowOptions {
	r := in.Refund
	attrs := []temporal.SearchAttributeUpdate{SearchAttrRefundStatus.ValueSet(string(r.Status))}
	if in.OrderNumber != "" {
		attrs = append(attrs, SearchAttrOrderNumber.ValueSet(in.OrderNumber))
	}
	if r.Mode != "" {
		attrs = append(attrs, SearchAttrOrderMode.ValueSet(string(r.Mode)))
	}
	of := "unmatched payment " + firstOf(r.PaymentIDs)
	switch {
	case in.OrderNumber != "":
		of = "order " + in.OrderNumber
	case r.OrderID != "":
		of = "order " + r.OrderID
	}
	return client.StartWorkflowOptions{
		ID:                       models.RefundWorkflowID(r.ID),
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
		StaticSummary:            fmt.Sprintf("Refund %s %s of %s", r.Amount.String(), r.Asset, of),
		StaticDetails: fmt.Sprintf("Refund **%s** (%s mode, %s): **%s %s** of %s",
			r.ID, r.Mode, r.Reason, r.Amount.String(), r.Asset, of),
	}
}

func firstOf(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// payoutRetry: a payout is retried without limit (every attempt looks
// its recorded transaction up before building another, so a retry never
// pays twice), on a slower back-off than the store's: what it waits out
// is Horizon, or an operator topping the payout account up.
func payoutRetry() *temporal.RetryPolicy {
	p := retryPolicy()
	p.MaximumInterval = 5 * time.Minute
	p.NonRetryableErrorTypes = append(p.NonRetryableErrorTypes,
		string(models.CodeRefundNotFound), string(models.CodeInvalidRefundState), string(models.CodeInvalidRefundDestination))
	return p
}

// payoutOptions: one payout attempt: a lookup of the recorded
// transaction, at most a few Horizon calls (account, submission, lookups
// after a timeout) and three database writes.
func payoutOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         payoutRetry(),
		Summary:             summary,
	}
}

// refundRun is the state of one Refund run.
type refundRun struct {
	in     RefundInput
	r      models.Refund // the refund as last written
	logger log.Logger
	bg     workflow.Context
	// autoTried: the limits were checked for the current destination; a
	// new destination checks them again.
	autoTried bool
	changes   int // moves written by updates; the main loop waits on it
	// testRefusal is the refusal a test helper asked of the next payout
	// (UpdateTestFailPayout), taken by it.
	testRefusal string
	writeMu     workflow.Mutex
	attr        models.RefundStatus // last upserted RefundStatus
}

// Refund is the workflow of one refund.
//
//  1. Awaiting its destination, it waits for one (UpdateSetRefundDestination).
//  2. Awaiting approval, it asks the operator's limits once per destination
//     (AutoApproveRefund), then waits for an operator (UpdateApproveRefund).
//  3. Approved (sending), it pays out (SendRefund): exactly once, across
//     retries and crashes, by recording the transaction before submitting
//     it. A refused payout (no trustline, no account) fails the refund,
//     which waits for a new destination or an operator's retry.
//  4. It ends when the refund is sent or cancelled.
//
// An operator may cancel it or mark it sent (paid from another wallet)
// whenever no payout is on its way.
func Refund(ctx workflow.Context, in RefundInput) (RefundOutcome, error) {
	if in.Refund.ID == "" || !in.Refund.Status.Valid() {
		return RefundOutcome{}, temporal.NewNonRetryableApplicationError("refund input: missing refund id or status", string(models.CodeInvalidRequest), nil)
	}
	bg, _ := workflow.NewDisconnectedContext(ctx)
	run := &refundRun{
		in:      in,
		r:       in.Refund,
		logger:  log.With(workflow.GetLogger(ctx), "RefundID", in.Refund.ID),
		bg:      bg,
		writeMu: workflow.NewMutex(ctx),
		attr:    in.Refund.Status,
	}
	if err := run.register(ctx); err != nil {
		return RefundOutcome{}, err
	}
	run.showDetails()
	var runErr error
	var a *activities.Refunds
	switch workflow.GetVersion(ctx, changeRefundReadsStore, workflow.DefaultVersion, 2) {
	case 1:
		runErr = run.write(storeOptions("Read the refund"), a.LoadRefund, activities.RefundInput{RefundID: run.r.ID})
	case 2:
		runErr = run.locked(func(got *models.Refund) error {
			return localFirst(run.bg, run.logger, localWriteOptions(), storeOptions("Read the refund"), got,
				a.LoadRefund, activities.RefundInput{RefundID: run.r.ID})
		})
	}
	for !run.r.Status.Settled() && runErr == nil {
		runErr = run.step(ctx)
	}
	// An update answered by the move that settled the refund gets its
	// answer before the run ends.
	if err := workflow.Await(bg, func() bool { return workflow.AllHandlersFinished(bg) }); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return RefundOutcome{}, runErr
	}
	return RefundOutcome{Status: run.r.Status, TransactionHash: run.r.TransactionHash}, nil
}

// step takes the refund one move on, or waits for an update to.
func (run *refundRun) step(ctx workflow.Context) error {
	var a *activities.Refunds
	switch {
	case run.r.Status == models.RefundAwaitingApproval && !run.autoTried:
		run.autoTried = true
		return run.write(storeOptions("Approve within the operator's limits"), a.AutoApproveRefund, activities.RefundInput{RefundID: run.r.ID})
	case run.r.Status == models.RefundSending:
		in := activities.RefundInput{RefundID: run.r.ID, TestRefusal: run.testRefusal}
		run.testRefusal = ""
		return run.write(payoutOptions(fmt.Sprintf("Pay out %s %s", run.r.Amount.String(), run.r.Asset)), a.SendRefund, in)
	}
	seen := run.changes
	return workflow.Await(ctx, func() bool { return run.changes != seen })
}

// write runs one of the main loop's activities (taking in, answering the
// refund as written) under the write lock, and takes its answer as the
// refund's state.
func (run *refundRun) write(opts workflow.ActivityOptions, fn any, in activities.RefundInput) error {
	return run.locked(func(got *models.Refund) error {
		return workflow.ExecuteActivity(withOptions(run.bg, opts), fn, in).Get(run.bg, got)
	})
}

// locked runs call under the write lock and takes the refund it answers
// as the run's state.
func (run *refundRun) locked(call func(got *models.Refund) error) error {
	if err := run.writeMu.Lock(run.bg); err != nil {
		return err
	}
	defer run.writeMu.Unlock()
	var got models.Refund
	if err := call(&got); err != nil {
		return err
	}
	return run.took(got)
}

// took makes r the run's state, and mirrors a new status in the search
// attributes and the current details.
func (run *refundRun) took(r models.Refund) error {
	if r.Destination != nil && (run.r.Destination == nil || *r.Destination != *run.r.Destination) {
		run.autoTried = false
	}
	prev := run.r.Status
	run.r = r
	if r.Status != prev {
		run.logger.Info("Refund moved", "From", prev, "To", r.Status, "TransactionHash", r.TransactionHash, "FailureReason", r.FailureReason)
	}
	if r.Status != run.attr {
		if err := workflow.UpsertTypedSearchAttributes(run.bg, SearchAttrRefundStatus.ValueSet(string(r.Status))); err != nil {
			return err
		}
		run.attr = r.Status
	}
	run.showDetails()
	return nil
}

// register sets the run's query and update handlers.
func (run *refundRun) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryRefund, func() (models.Refund, error) { return run.r, nil },
		workflow.QueryHandlerOptions{Description: "The refund as this run knows it"}); err != nil {
		return err
	}
	type update struct {
		name, desc string
		validate   any
		handle     any
	}
	var a *activities.Refunds
	for _, u := range []update{
		{UpdateSetRefundDestination, "Where the money goes (RefundDestinationRequest → refund); refused while a payout is on its way",
			func(_ workflow.Context, req RefundDestinationRequest) error {
				return run.validate(SetRefundDestination(req))
			},
			func(ctx workflow.Context, req RefundDestinationRequest) (models.Refund, error) {
				return run.operatorMove(ctx, "Set the destination", a.SetRefundDestination,
					activities.RefundMove{Destination: &req.Destination, By: req.By, Claim: req.Claim}, SetRefundDestination(req))
			}},
		{UpdateApproveRefund, "An operator approves the payout, or retries a failed one (RefundOperatorRequest → refund)",
			func(_ workflow.Context, req RefundOperatorRequest) error { return run.validate(ApproveRefund(req)) },
			func(ctx workflow.Context, req RefundOperatorRequest) (models.Refund, error) {
				return run.operatorMove(ctx, "Approve (operator)", a.ApproveRefund, activities.RefundMove{By: req.By}, ApproveRefund(req))
			}},
		{UpdateCancelRefund, "An operator settled the refund another way; nothing will be sent (RefundOperatorRequest → refund)",
			func(_ workflow.Context, req RefundOperatorRequest) error { return run.validate(CancelRefund(req)) },
			func(ctx workflow.Context, req RefundOperatorRequest) (models.Refund, error) {
				return run.operatorMove(ctx, "Cancel (operator)", a.CancelRefund, activities.RefundMove{By: req.By}, CancelRefund(req))
			}},
		{UpdateMarkRefundSent, "An operator paid the refund from another wallet (RefundOperatorRequest with TxHash → refund); the transaction is checked on the chain",
			func(_ workflow.Context, req RefundOperatorRequest) error { return run.validate(MarkRefundSent(req)) },
			func(ctx workflow.Context, req RefundOperatorRequest) (models.Refund, error) {
				return run.operatorMove(ctx, "Mark sent (operator)", a.MarkRefundSent,
					activities.RefundMove{By: req.By, TxHash: req.TxHash}, MarkRefundSent(req))
			}},
		{UpdateTestFailPayout, "Test mode: the refund's next payout is refused as the network would refuse it (RefundTestFailRequest → refund)",
			func(_ workflow.Context, req RefundTestFailRequest) error { return run.validate(FailTestPayout(req)) },
			func(_ workflow.Context, req RefundTestFailRequest) (models.Refund, error) {
				run.testRefusal = req.Reason
				run.logger.Info("Test helper: the next payout is refused", "Reason", req.Reason)
				return run.r, nil
			}},
	} {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handle, workflow.UpdateHandlerOptions{
			Validator: u.validate, Description: u.desc,
		}); err != nil {
			return err
		}
	}
	return nil
}

// validate is an update's validator: the move's rule, on the refund as
// this run knows it.
func (run *refundRun) validate(move RefundMove) error {
	_, err := move.Rule(run.r, time.Time{})
	return refusal(err)
}

// operatorMove writes an update's move: under the write lock (a payout
// may have moved the refund since the validator ran, so the move's rule
// is applied again), through its activity fn given m, and wakes the main
// loop.
func (run *refundRun) operatorMove(ctx workflow.Context, summary string, fn any, m activities.RefundMove, move RefundMove) (models.Refund, error) {
	// The handler's own coroutine blocks on a context of its own, kept
	// going if the run is cancelled: a move under way is written.
	bg, _ := workflow.NewDisconnectedContext(ctx)
	if err := run.writeMu.Lock(bg); err != nil {
		return models.Refund{}, err
	}
	locked := true
	defer func() {
		if locked {
			run.writeMu.Unlock()
		}
	}()
	if _, err := move.Rule(run.r, time.Time{}); err != nil {
		return models.Refund{}, refusal(err)
	}
	m.RefundID = run.r.ID
	var got models.Refund
	if err := workflow.ExecuteActivity(withOptions(bg, storeOptions(summary)), fn, m).Get(bg, &got); err != nil {
		return models.Refund{}, err
	}
	run.writeMu.Unlock()
	locked = false
	if err := run.took(got); err != nil {
		return models.Refund{}, err
	}
	run.changes++
	return got, nil
}

// showDetails sets the run's current details in the Temporal UI: the
// refund's state in words and what it waits for.
func (run *refundRun) showDetails() {
	r := run.r
	d := fmt.Sprintf("**%s**: %s %s (%s)", r.Status, r.Amount.String(), r.Asset, r.Reason)
	switch r.Status {
	case models.RefundAwaitingDestination:
		d += "\n\nWaiting for the payer or the API client to say where the money goes."
	case models.RefundAwaitingApproval:
		d += fmt.Sprintf("\n\nWaiting for an operator: `memocart refunds approve %s`.", r.ID)
	case models.RefundFailed:
		d += fmt.Sprintf("\n\nThe payout was refused: %s\n\nWaiting for a new destination, or `memocart refunds approve %s` to retry.", r.FailureReason, r.ID)
	case models.RefundSent:
		d += fmt.Sprintf("\n\nSent in transaction `%s`.", r.TransactionHash)
	}
	workflow.SetCurrentDetails(run.bg, d)
}
