package checkout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// The use cases of refunds paid out by the service: where the money goes,
// and an operator's approval, cancellation or manual payout. Every move of
// a refund is made by its Refund workflow (one writer per refund); these
// methods find the refund, make sure its workflow runs, and ask it.

// RefundStore is the store's part in paying refunds out.
type RefundStore interface {
	// Refund returns a refund, or an error wrapping models.ErrRefundNotFound.
	Refund(ctx context.Context, id string) (models.Refund, error)
	// RefundForAccount returns a refund of the account in the mode, else
	// an error wrapping models.ErrRefundNotFound.
	RefundForAccount(ctx context.Context, accountID string, mode models.Mode, id string) (models.Refund, error)
	// RefundsForOrder returns an order's refunds, oldest first.
	RefundsForOrder(ctx context.Context, orderID string) ([]models.Refund, error)
	// SetOrderRefundDestination records where the order's refunds go
	// (models.ErrOrderNotFound for another account's order).
	SetOrderRefundDestination(ctx context.Context, accountID string, mode models.Mode, orderID string, d *models.RefundDestination, now time.Time) error
	// CreateRefund creates a refund once by its key; false when it
	// existed.
	CreateRefund(ctx context.Context, r models.Refund) (models.Refund, bool, error)
	// MarkRefundWorkflowStarted records that the refund's workflow exists.
	MarkRefundWorkflowStarted(ctx context.Context, id string, at time.Time) error
	// RefundWorkflowsToStart returns refunds created before the cutoff
	// whose workflow is not known to exist.
	RefundWorkflowsToStart(ctx context.Context, createdBefore time.Time, limit int) ([]models.Refund, error)
	// RefundByClaim returns the refund whose claim token is token, with
	// its claim, if the claim works at now; models.ErrRefundNotFound
	// otherwise, whatever the reason.
	RefundByClaim(ctx context.Context, token string, now time.Time) (models.Refund, error)
	// TakeRefundClaim holds the working claim of token until until and
	// returns its refund; taken is false while another submission holds
	// it. Setting the refund's destination ends the claim.
	TakeRefundClaim(ctx context.Context, token string, now, until time.Time) (r models.Refund, taken bool, err error)
	// ReleaseRefundClaim lets go of a claim taken and not used.
	ReleaseRefundClaim(ctx context.Context, token string) error
}

// RefundWorkflows drives the Refund workflows (workflows.Client).
type RefundWorkflows interface {
	// StartRefund starts the refund's workflow, or finds it: idempotent.
	StartRefund(ctx context.Context, r models.Refund, orderNumber string) error
	// MoveRefund asks the refund's workflow for one move and answers the
	// refund as written; models.ErrRefundClosed when it is not running.
	MoveRefund(ctx context.Context, refundID string, move workflows.RefundMove) (models.Refund, error)
}

// OrderReader reads a customer's order (OrderStore's read).
type OrderReader interface {
	OrderForAccount(ctx context.Context, accountID string, mode models.Mode, idOrNumber string) (models.Order, error)
}

// Refunds carries out the use cases of the refunds the service pays out.
type Refunds struct {
	store     RefundStore
	orders    OrderReader
	workflows RefundWorkflows
	runs      RefundRuns
	own       []string // the service's accounts (Config.ownAccounts)
	now       Clock
	log       *slog.Logger

	// runsSwept is up to when the last sweep of closed runs looked
	// (runsMu).
	runsMu    sync.Mutex
	runsSwept time.Time
}

// NewRefunds returns the refund use cases: every part is required. cfg
// names the service's own accounts, never a refund's destination.
func NewRefunds(cfg Config, store RefundStore, orders OrderReader, workflows RefundWorkflows, runs RefundRuns, now Clock, log *slog.Logger) (*Refunds, error) {
	if err := missing("Refunds", map[string]bool{"store": store == nil, "orders": orders == nil,
		"workflows": workflows == nil, "runs": runs == nil}); err != nil {
		return nil, err
	}
	return &Refunds{store: store, orders: orders, workflows: workflows, runs: runs, own: cfg.ownAccounts(),
		now: orNow(now), log: orDiscard(log)}, nil
}

// SetOrderRefundDestinationRequest is a client saying where the money an
// order owes back goes: its refunds now, and those created later.
type SetOrderRefundDestinationRequest struct {
	AccountID   string
	Mode        models.Mode
	Ref         string // the order's id or normalised number
	Destination models.RefundDestination
}

// SetOrderRefundDestination records where an order's refunds go and gives
// the destination to each refund of the order that can still take one. A
// refund being sent keeps its destination (its payout may be on its way)
// and a settled one is left alone, as is one in an asset the service does
// not pay out. The order's destination is written first, so a refund
// created meanwhile starts with it; a destination a refund's workflow
// refuses (Horizon says the account cannot receive the asset) is refused
// here, and the order's previous destination put back (a refund of the
// order moved before the refusal keeps the new one: each refund's move is
// its workflow's, and it can be moved again). It answers the order as it
// is then.
func (s *Refunds) SetOrderRefundDestination(ctx context.Context, req SetOrderRefundDestinationRequest) (models.Order, error) {
	if err := checkDestination(req.Destination, s.own); err != nil {
		return models.Order{}, err
	}
	o, err := s.orders.OrderForAccount(ctx, req.AccountID, req.Mode, req.Ref)
	if err != nil {
		return models.Order{}, err
	}
	d := req.Destination
	if err := s.store.SetOrderRefundDestination(ctx, req.AccountID, req.Mode, o.ID, &d, s.now().UTC()); err != nil {
		return models.Order{}, err
	}
	rs, err := s.store.RefundsForOrder(ctx, o.ID)
	if err != nil {
		return models.Order{}, err
	}
	for _, r := range rs {
		if r.Status.Settled() || r.Status == models.RefundSending {
			continue
		}
		if _, err := models.LookupAsset(r.Asset); err != nil {
			// Money in an asset the service does not pay out (a payer's
			// wrong asset) is an operator's to return: no destination
			// helps it.
			continue
		}
		_, err := s.moveRefund(ctx, r, o.Number, workflows.SetRefundDestination{Destination: req.Destination, By: "api"})
		if err != nil {
			if rerr := s.store.SetOrderRefundDestination(ctx, req.AccountID, req.Mode, o.ID, o.RefundDestination, s.now().UTC()); rerr != nil {
				s.log.Error("Putting back an order's refund destination failed", "order_id", o.ID, "error", rerr)
			}
			return models.Order{}, err
		}
	}
	return s.orders.OrderForAccount(ctx, req.AccountID, req.Mode, o.ID)
}

// checkDestination is every use case's check of a destination a client
// or payer gives: its shape (models.ValidateRefundDestination), and not
// one of the service's own accounts (models.RefuseServiceAccount). The
// Refund workflow's activities check the accounts again where the payout
// account is known for certain, and to_sender's sender once it is known.
func checkDestination(d models.RefundDestination, own []string) error {
	if err := models.ValidateRefundDestination(d); err != nil {
		return err
	}
	return models.RefuseServiceAccount(d.Address, own)
}

// MoveRefund makes an operator's move of a refund (approve, cancel,
// mark-sent) through its workflow, and answers the refund as written. A
// refund already in the state asked for (cancelled, or sent with that
// hash) is answered as it is.
func (s *Refunds) MoveRefund(ctx context.Context, refundID string, move workflows.RefundMove) (models.Refund, error) {
	r, err := s.store.Refund(ctx, refundID)
	if err != nil {
		return models.Refund{}, err
	}
	return s.moveRefund(ctx, r, "", move)
}

// FailTestPayout has a test refund's next payout refused as the network
// would refuse it, for reason (models.TestPayoutRefusals), through the
// refund's workflow, and answers the refund as it stands: it fails when
// that payout is made, the moment it has a destination. A refund with a
// payout on its way or settled is refused (models.DecideTestPayoutRefusal).
func (s *Refunds) FailTestPayout(ctx context.Context, accountID string, mode models.Mode, id, reason string) (models.Refund, error) {
	if mode != models.ModeTest {
		return models.Refund{}, models.NewError(models.CodeTestModeOnly)
	}
	r, err := s.store.RefundForAccount(ctx, accountID, mode, id)
	if err != nil {
		return models.Refund{}, err
	}
	move := workflows.FailTestPayout{Reason: reason}
	if _, err := move.Rule(r, s.now()); err != nil {
		return models.Refund{}, err
	}
	return s.moveRefund(ctx, r, "", move)
}

// moveRefund asks r's workflow for a move. A workflow with no open run
// (its start may not have happened yet; an operator terminated or
// cancelled its run) is started from the stored refund and asked again; a
// settled refund's workflow has ended, and the move is refused by the
// refund's rules, checked here on the stored refund, read again if it
// settled meanwhile.
func (s *Refunds) moveRefund(ctx context.Context, r models.Refund, orderNumber string, move workflows.RefundMove) (models.Refund, error) {
	got, err := s.askRun(ctx, r, move)
	if !errors.Is(err, models.ErrRefundClosed) {
		return got, err
	}
	if !r.Status.Settled() {
		if err := s.start(ctx, r, orderNumber); err != nil {
			return models.Refund{}, err
		}
		got, err = s.askRun(ctx, r, move)
		if !errors.Is(err, models.ErrRefundClosed) {
			return got, err
		}
		// The refund settled after it was read: its last run completed.
		if r, err = s.store.Refund(ctx, r.ID); err != nil {
			return models.Refund{}, err
		}
		if !r.Status.Settled() {
			return models.Refund{}, models.Errorf(models.CodeUnavailable, "The refund's workflow did not answer; retry")
		}
	}
	return settledMove(r, move)
}

// A run takes in a payout's outcome once the payout's activity has written
// it: for that moment the stored refund allows a move the run still
// refuses (a refused payout's refund is failed in the store, and sending
// in the run, while its refund.failed event may already have reached the
// client). Such a refusal is stale: the move is asked again, every
// staleRefusalPause for up to staleRefusalTries, before it is answered.
const (
	staleRefusalTries = 10
	staleRefusalPause = 100 * time.Millisecond
)

// askRun asks r's run for the move; stored is the refund as read before.
func (s *Refunds) askRun(ctx context.Context, stored models.Refund, move workflows.RefundMove) (models.Refund, error) {
	for try := 1; ; try++ {
		got, err := s.workflows.MoveRefund(ctx, stored.ID, move)
		if try == staleRefusalTries || models.CodeOf(err) != models.CodeInvalidRefundState {
			return got, err
		}
		if _, ruled := move.Rule(stored, s.now()); ruled != nil {
			return got, err // the stored refund refuses it too
		}
		select {
		case <-ctx.Done():
			return got, err
		case <-time.After(staleRefusalPause):
		}
	}
}

// settledMove answers a move asked of a settled refund, whose workflow has
// ended: the refund as it is when the move would change nothing (a
// retried cancel or mark-sent), else the move's refusal.
func settledMove(r models.Refund, move workflows.RefundMove) (models.Refund, error) {
	if _, err := move.Rule(r, time.Time{}); err != nil {
		return models.Refund{}, err
	}
	return r, nil
}

// RefundUnmatchedPayment creates the refund of a payment that named no
// order, which an operator decided to return (memocart refunds create
// --payment), and starts its workflow. Deciding twice creates it once.
func (s *Refunds) RefundUnmatchedPayment(ctx context.Context, p models.Payment, state models.PaymentState) (models.Refund, error) {
	r, err := models.RefundOfUnmatchedPayment(p, state, s.now().UTC())
	if err != nil {
		return models.Refund{}, err
	}
	r, _, err = s.store.CreateRefund(ctx, r)
	if err != nil {
		return models.Refund{}, err
	}
	if err := s.startRefund(ctx, r, ""); err != nil {
		return r, err
	}
	return r, nil
}

// startRefund starts a refund's workflow and records that it exists.
func (s *Refunds) startRefund(ctx context.Context, r models.Refund, orderNumber string) error {
	if r.Status.Settled() {
		return nil
	}
	if err := s.start(ctx, r, orderNumber); err != nil {
		return err
	}
	return s.store.MarkRefundWorkflowStarted(ctx, r.ID, s.now().UTC())
}

// start starts r's workflow with its order's number, which operators
// search runs by (read when the caller has not got it: the reconciler, an
// operator's move).
func (s *Refunds) start(ctx context.Context, r models.Refund, orderNumber string) error {
	if orderNumber == "" && r.OrderID != "" {
		o, err := s.orders.OrderForAccount(ctx, r.AccountID, r.Mode, r.OrderID)
		if err != nil {
			return fmt.Errorf("reading the order of refund %s: %w", r.ID, err)
		}
		orderNumber = o.Number
	}
	return s.workflows.StartRefund(ctx, r, orderNumber)
}

// RefundRuns finds the refunds whose run closed without settling them
// (workflows.Client.RefundRunsClosed), for ReconcileRefunds to start them
// again.
type RefundRuns interface {
	// RefundRunsClosed returns the ids of refunds a run of which an
	// operator terminated or cancelled, closed in (after, until].
	RefundRunsClosed(ctx context.Context, after, until time.Time) ([]string, error)
}

// RefundRunsLookback is how far back a process's first sweep looks for
// refund runs closed without settling: a run closed while no API process
// ran for longer is not found, and its refund waits for its next move.
const RefundRunsLookback = 7 * 24 * time.Hour

// ReconcileRefunds starts the workflows of refunds created more than
// grace ago without one known to exist (their creator died between the
// two), and of refunds not settled whose run an operator terminated or
// cancelled (restartClosedRefunds), and answers how many it started.
func (s *Refunds) ReconcileRefunds(ctx context.Context, grace time.Duration) (int, error) {
	rs, err := s.store.RefundWorkflowsToStart(ctx, s.now().Add(-grace), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		if err := s.startRefund(ctx, r, ""); err != nil {
			return n, err
		}
		n++
	}
	m, err := s.restartClosedRefunds(ctx, grace)
	return n + m, err
}

// restartClosedRefunds starts a new run for each refund not settled whose
// run closed terminated or cancelled since the last sweep, up to grace
// ago (visibility records a closed run within it): a refund being sent
// has no next move from anyone, and must still be paid. Each sweep reads
// only the runs closed since the one before, so a closed run costs one
// database read and one start, once per process; a sweep that fails is
// done again whole by the next. The new run reads the refund and, if it
// is being sent, looks up the transaction the closed run recorded before
// building one: it is paid at most once.
func (s *Refunds) restartClosedRefunds(ctx context.Context, grace time.Duration) (int, error) {
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	until := s.now().Add(-grace)
	after := s.runsSwept
	if after.IsZero() {
		after = until.Add(-RefundRunsLookback)
	}
	if !until.After(after) {
		return 0, nil
	}
	ids, err := s.runs.RefundRunsClosed(ctx, after, until)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		r, err := s.store.Refund(ctx, id)
		if errors.Is(err, models.ErrRefundNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		if r.Status.Settled() {
			continue
		}
		if err := s.startRefund(ctx, r, ""); err != nil {
			return n, err
		}
		s.log.Info("Started a new run of a refund whose run was closed unsettled", "refund_id", r.ID, "status", string(r.Status))
		n++
	}
	s.runsSwept = until
	return n, nil
}

// The payer's claim page: a refund that waits for its destination has a
// claim (models.RefundClaim), a secret link the API client forwards to
// the payer, through which the payer says where the money goes, once.

// RefundClaimLease is how long a submission through a claim link holds
// it while the refund's workflow sets the destination (the Horizon check
// included): far beyond a request's timeout, so that a second submission
// at the same time (a double tap) cannot set another destination, and
// short enough that a submission that died holding it gives the payer
// the link back soon.
const RefundClaimLease = time.Minute

// ErrRefundClaimInUse means another submission through the same claim
// link is setting the destination right now.
var ErrRefundClaimInUse = errors.New("the claim link is being used by another request")

// RefundByClaim returns the refund whose claim link carries token, if it
// works now: models.ErrRefundNotFound for a link unknown, expired, used,
// replaced by a newer one, or of a refund that no longer waits for a
// destination.
func (s *Refunds) RefundByClaim(ctx context.Context, token string) (models.Refund, error) {
	return s.store.RefundByClaim(ctx, token, s.now().UTC())
}

// ClaimRefundRequest is the payer saying, through a claim link, where a
// refund goes: an account and its memo (to_sender is the API client's
// choice alone: the payer names the account).
type ClaimRefundRequest struct {
	Token       string
	Destination models.RefundDestination
}

// ClaimRefund sets the destination of the refund whose claim link
// carries req.Token, through the refund's workflow (By "claim"), which
// checks it on the network first, and answers the refund as written. The
// link is used by that write (the request names it by its hash), so it
// works once: a write that finds it used, replaced or expired is refused
// (models.ErrRefundClaimGone, a not-found).
//
// The destination is checked first (checkDestination:
// invalid_refund_destination). The link is then held for
// RefundClaimLease, so that two submissions at once are not both checked
// on the network: the second is ErrRefundClaimInUse. A link that does not
// work is models.ErrRefundNotFound. When the workflow refuses (the network
// says the account cannot receive the asset: invalid_refund_destination;
// the refund moved meanwhile) the link is given back for another try; when
// the outcome is unknown (a timeout) it stays held until the lease runs
// out. A submission held up past the lease lets another take the link,
// and the second write of the two is the one refused.
func (s *Refunds) ClaimRefund(ctx context.Context, req ClaimRefundRequest) (models.Refund, error) {
	d := req.Destination
	d.ToSender = false
	if err := checkDestination(d, s.own); err != nil {
		return models.Refund{}, err
	}
	now := s.now().UTC()
	r, taken, err := s.store.TakeRefundClaim(ctx, req.Token, now, now.Add(RefundClaimLease))
	if err != nil {
		return models.Refund{}, err
	}
	if !taken {
		return models.Refund{}, ErrRefundClaimInUse
	}
	hash, _ := models.RefundClaimHash(req.Token) // a token TakeRefundClaim found
	got, err := s.moveRefund(ctx, r, "", workflows.SetRefundDestination{Destination: d, By: "claim", Claim: hash})
	if err != nil {
		var refused *models.Error
		if errors.As(err, &refused) {
			if rerr := s.store.ReleaseRefundClaim(context.WithoutCancel(ctx), req.Token); rerr != nil {
				s.log.Error("Giving a refund's claim link back failed", "refund_id", r.ID, "error", rerr)
			}
		}
		return models.Refund{}, err
	}
	return got, nil
}
