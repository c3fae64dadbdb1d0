package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/temporal"

	"github.com/memocart/memocart/models"
)

// RefundStore is the refunds' database as the refund activities see it.
// Every write goes through UpdateRefund with one of the models' moves, so
// the rules of what may happen to a refund live in models alone.
type RefundStore interface {
	Refund(ctx context.Context, id string) (models.Refund, error)
	// UpdateRefund applies move to the refund in one transaction and
	// returns it as written; a move's error is returned unchanged and
	// nothing is written. A settled refund of an order updates the
	// order's payment status.
	UpdateRefund(ctx context.Context, id string, now time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error)
	// UpdateRefundByClaim is UpdateRefund for a move asked through the
	// refund's claim link, named by its hash: the same transaction uses
	// the claim up, and a claim that no longer works refuses the move
	// (models.ErrRefundClaimGone).
	UpdateRefundByClaim(ctx context.Context, id, claim string, now time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error)
	// ApproveRefundWithinDailyMax approves the refund if its value fits
	// under max with the values approved since; false otherwise.
	ApproveRefundWithinDailyMax(ctx context.Context, id string, now, since time.Time, max decimal.Decimal) (models.Refund, bool, error)
	// CreateOwedRefunds creates the refunds an order owes and has not got
	// yet (models.RefundsOwed) and returns all the order's refunds.
	CreateOwedRefunds(ctx context.Context, orderID string, now time.Time) ([]models.Refund, error)
	// MarkRefundWorkflowStarted records that the refund's workflow exists.
	MarkRefundWorkflowStarted(ctx context.Context, id string, at time.Time) error
	// PaymentSenders maps payment ids to the accounts that sent them.
	PaymentSenders(ctx context.Context, paymentIDs []string) (map[string]string, error)
}

// Payer pays refunds out, in the domain's terms (models.PayoutRequest,
// models.PayoutResult, models.ErrPayout*): a payout rail is an adapter
// that implements it, on the Stellar network in live mode
// (activities/stellar/payout), in the sandbox in test mode
// (activities/sandbox). This package imports neither.
type Payer interface {
	// CheckDestination asks the network whether d (an address and its
	// memo) can receive asset: an invalid_refund_destination error says
	// why not.
	CheckDestination(ctx context.Context, d models.RefundDestination, asset string) error
	// Pay sends the refund exactly once: it calls record with the
	// transaction's hash and envelope before submitting it, and given the
	// transaction an earlier attempt recorded it looks that one up before
	// building another. record must refuse unless the refund's recorded
	// transaction is still the last one the call knows (the one it was
	// given, then each it recorded): a compare-and-set.
	Pay(ctx context.Context, req models.PayoutRequest, record func(ctx context.Context, hash, envelope string) error) (models.PayoutResult, error)
	// VerifyPayment checks that transaction hash paid want (an operator's
	// mark-sent): an invalid_request error naming transaction_hash says
	// what does not match; any other error is a failure to ask, worth
	// retrying.
	VerifyPayment(ctx context.Context, hash string, want models.RefundPayment) error
}

// RetryDelayer is a payer's error that says when to try again (a rail's
// rate limit or overload hint, such as Horizon's Retry-After).
type RetryDelayer interface {
	error
	RetryDelay() time.Duration
}

// Alerter raises an alert for operators (memocart payments alerts).
type Alerter interface {
	Alert(ctx context.Context, kind, detail string)
}

// RefundLimits are the operator's limits on approving live refunds
// without them, in the order's currency (models.RefundValue). Test mode
// approves every refund, and its approvals never count toward DailyMax.
type RefundLimits struct {
	// AutoApproveMax: a live refund worth at most this is approved without
	// an operator; zero approves none.
	AutoApproveMax decimal.Decimal
	// DailyMax: what automatic approvals may add up to per UTC day (the
	// one payout account's); beyond it refunds wait for an operator. Zero
	// is no daily limit.
	DailyMax decimal.Decimal
}

// RefundPayouts is what creating and paying refunds out needs.
type RefundPayouts struct {
	Store  RefundStore
	Payers map[models.Mode]Payer
	Limits RefundLimits
	// ServiceAccounts are the service's own Stellar accounts (G…): where
	// payers pay, where refunds are paid from. No refund is paid to one,
	// or to a muxed form of one (models.RefuseServiceAccount).
	ServiceAccounts []string
	// Start starts the refund's workflow, or finds it running: whoever
	// creates a refund starts it, and starting twice is harmless.
	Start func(ctx context.Context, r models.Refund, orderNumber string) error
	// Alerts raise what an operator must act on (an underfunded payout
	// account, fees above the maximum).
	Alerts Alerter
}

// AlertPayoutUnderfunded is the alert kind raised when the payout account
// cannot cover a refund: an operator tops it up, and the payout is
// retried.
const AlertPayoutUnderfunded = "refund_payout_underfunded"

// AlertPayoutFeeTooLow is the alert kind raised when the network's fee
// (surge pricing) is above the payout's maximum: the payout waits for fees
// to drop, or for an operator to raise MEMOCART_STELLAR_PAYOUT_MAX_FEE.
const AlertPayoutFeeTooLow = "refund_payout_fee_too_low"

// errPayoutRaced: another attempt recorded a payout transaction after this
// one read the refund; this one submits nothing, and its retry looks that
// transaction up.
var errPayoutRaced = errors.New("another attempt recorded a payout transaction meanwhile")

// RefundInput names the refund an activity works on.
type RefundInput struct {
	RefundID string
	// TestRefusal, for SendRefund of a test-mode refund, is the refusal a
	// test helper asked of its payout (models.PayoutRequest.TestRefusal).
	TestRefusal string `json:",omitempty"`
}

// testRefusal is the test helper's refusal for r's payout: never for a
// live refund, whatever the input says.
func testRefusal(r models.Refund, asked string) string {
	if r.Mode != models.ModeTest {
		return ""
	}
	return asked
}

// RefundMove is an update's move of a refund: a destination, or an
// operator's approval, cancellation or transaction hash.
type RefundMove struct {
	RefundID    string
	Destination *models.RefundDestination `json:",omitempty"`
	TxHash      string                    `json:",omitempty"`
	By          string                    `json:",omitempty"`
	// Claim names the claim link a destination was given through (By
	// "claim"): the hash of its token (models.RefundClaimHash), never the
	// token, which is a credential and would sit in the history.
	Claim string `json:",omitempty"`
}

// CreateRefundsInput names the order whose owed refunds are created.
type CreateRefundsInput struct {
	OrderID     string
	OrderNumber string
}

// Refunds are the Refund workflow's activities: creating the refunds an
// order owes, approving, paying out and moving them.
type Refunds struct {
	runtime
	payouts RefundPayouts
	events  EventDispatcher
}

// NewRefunds returns the refund activities: p says where refunds are
// stored, who pays them (a payer per mode, at least one), how their
// workflows start and where alerts go; events hands the events their
// writes record to their delivery. now is their clock (nil: time.Now).
func NewRefunds(p RefundPayouts, events EventDispatcher, now func() time.Time) (*Refunds, error) {
	switch {
	case p.Store == nil:
		return nil, errors.New("activities.NewRefunds: no refund store")
	case len(p.Payers) == 0:
		return nil, errors.New("activities.NewRefunds: no payer")
	case p.Start == nil:
		return nil, errors.New("activities.NewRefunds: nothing starts refund workflows")
	case p.Alerts == nil:
		return nil, errors.New("activities.NewRefunds: no alerter")
	case events == nil:
		return nil, errors.New("activities.NewRefunds: no event dispatcher (NoDispatch leaves events to the outbox sweep)")
	}
	for m, payer := range p.Payers {
		if payer == nil {
			return nil, fmt.Errorf("activities.NewRefunds: the %s payer is nil", m)
		}
	}
	return &Refunds{runtime: runtime{now: now}, payouts: p, events: events}, nil
}

// CreateRefunds creates the refunds an order owes (the order's run, as it
// closes; a payment recorded late), dispatches the refund.created events
// that recorded, and starts their workflows. It answers how many refunds
// the order has. Idempotent: refunds are keyed by what they return, and a
// running workflow is found, not started again.
func (a *Refunds) CreateRefunds(ctx context.Context, in CreateRefundsInput) (int, error) {
	defer a.heartbeat(ctx)()
	p := &a.payouts
	rs, err := p.Store.CreateOwedRefunds(ctx, in.OrderID, a.clock())
	if err != nil {
		return 0, temporalError(err)
	}
	dispatchEvents(ctx, a.events, in.OrderID)
	for _, r := range rs {
		if err := a.startRefund(ctx, r, in.OrderNumber); err != nil {
			return 0, err
		}
	}
	return len(rs), nil
}

// startRefund starts the workflow of a refund not settled yet and records
// that it exists.
func (a *Refunds) startRefund(ctx context.Context, r models.Refund, orderNumber string) error {
	if r.Status.Settled() {
		return nil
	}
	if err := a.payouts.Start(ctx, r, orderNumber); err != nil {
		return fmt.Errorf("starting the workflow of refund %s: %w", r.ID, err)
	}
	return temporalError(a.payouts.Store.MarkRefundWorkflowStarted(ctx, r.ID, a.clock()))
}

// LoadRefund answers the refund as stored.
func (a *Refunds) LoadRefund(ctx context.Context, in RefundInput) (models.Refund, error) {
	defer a.heartbeat(ctx)()
	p := &a.payouts
	r, err := p.Store.Refund(ctx, in.RefundID)
	return r, temporalError(err)
}

// AutoApproveRefund approves a refund awaiting approval when the
// operator's limits allow it (RefundLimits), and answers the refund as it
// is then: sending if approved, still awaiting approval if not.
func (a *Refunds) AutoApproveRefund(ctx context.Context, in RefundInput) (models.Refund, error) {
	defer a.heartbeat(ctx)()
	p := &a.payouts
	r, err := p.Store.Refund(ctx, in.RefundID)
	if err != nil || r.Status != models.RefundAwaitingApproval {
		return r, temporalError(err)
	}
	now := a.clock()
	switch {
	case r.Mode == models.ModeTest:
		// Test mode moves no real money: every refund goes out at once.
	case !withinAutoApproval(r, p.Limits):
		return r, nil
	case p.Limits.DailyMax.IsPositive():
		day := now.Truncate(24 * time.Hour)
		r, _, err = p.Store.ApproveRefundWithinDailyMax(ctx, r.ID, now, day, p.Limits.DailyMax)
		return r, temporalError(err)
	}
	r, err = p.Store.UpdateRefund(ctx, r.ID, now, func(r models.Refund) (models.Refund, error) {
		return models.ApproveRefund(r, now)
	})
	return r, temporalError(err)
}

// withinAutoApproval reports whether r is worth no more than the limit
// for approving without an operator. A refund of unknown value (another
// asset, no order) always waits for one.
func withinAutoApproval(r models.Refund, l RefundLimits) bool {
	return l.AutoApproveMax.IsPositive() && r.Value != nil && !r.Value.GreaterThan(l.AutoApproveMax)
}

// SendRefund pays out a refund being sent and answers it as it is then:
// sent, or failed when the network refused the payout; the event that
// records (refund.sent, refund.failed) is dispatched. A payout whose
// outcome is unknown (a timeout, the payout account short of funds) is an
// error, and the retry resolves it: the transaction recorded before
// submitting is looked up first, so it is never paid twice.
func (a *Refunds) SendRefund(ctx context.Context, in RefundInput) (models.Refund, error) {
	defer a.heartbeat(ctx)()
	p := &a.payouts
	r, err := p.Store.Refund(ctx, in.RefundID)
	if err != nil || r.Status != models.RefundSending {
		// Sent or cancelled by an operator meanwhile: nothing to pay.
		return r, temporalError(err)
	}
	payer := p.Payers[r.Mode]
	if payer == nil {
		return r, temporal.NewApplicationError(fmt.Sprintf("no payout account for %s mode on this worker (MEMOCART_STELLAR_PAYOUT_SECRET_FILE)", r.Mode), string(models.CodeUnavailable))
	}
	dest, why, err := a.payoutDestination(ctx, r)
	if err != nil {
		return r, temporalError(err)
	}
	if why == "" && r.Destination.ToSender && r.TransactionHash == "" {
		// The sender was never checked as a destination: a pooled
		// account of an exchange that requires a memo (SEP-29) would
		// take the refund and credit no one. Checked only before the
		// first transaction is recorded: once one may be in the ledger,
		// only Pay's look-up may decide the refund's outcome.
		why, err = refusedPayout(payer.CheckDestination(ctx, dest, r.Asset))
		if err != nil {
			return r, temporalError(err)
		}
	}
	var res models.PayoutResult
	if why == "" {
		last := r.TransactionHash
		record := func(ctx context.Context, hash, envelope string) error {
			_, err := p.Store.UpdateRefund(ctx, r.ID, a.clock(), func(r models.Refund) (models.Refund, error) {
				// Compare-and-set on the last transaction this attempt
				// knows (the one it started from, then each it recorded):
				// an attempt Temporal gave up on may still be running
				// elsewhere, and if it recorded a transaction meanwhile,
				// this one must not submit another (the retry looks that
				// one up instead).
				if r.TransactionHash != last {
					return r, errPayoutRaced
				}
				return models.RecordRefundTransaction(r, hash, envelope)
			})
			if err == nil {
				last = hash
			}
			return err
		}
		res, err = payer.Pay(ctx, models.PayoutRequest{
			RefundID:    r.ID,
			Destination: dest,
			Asset:       r.Asset,
			Amount:      r.Amount,
			Prior:       models.PayoutPrior{Hash: r.TransactionHash, Envelope: r.Envelope},
			TestRefusal: testRefusal(r, in.TestRefusal),
		}, record)
		why, err = refusedPayout(err)
		if errors.Is(err, models.ErrPayoutUnderfunded) {
			p.Alerts.Alert(ctx, AlertPayoutUnderfunded, fmt.Sprintf("refund %s of %s %s waits for the payout account to be topped up", r.ID, r.Amount, r.Asset))
		}
		if errors.Is(err, models.ErrPayoutFeeTooLow) {
			p.Alerts.Alert(ctx, AlertPayoutFeeTooLow, fmt.Sprintf("refund %s of %s %s waits for the network's fee to drop below the payout's maximum", r.ID, r.Amount, r.Asset))
		}
		var busy RetryDelayer
		if errors.As(err, &busy) && busy.RetryDelay() > 0 {
			// The rail said when to come back: the retry waits that long,
			// not the policy's back-off.
			return r, temporal.NewApplicationErrorWithOptions(err.Error(), "horizon_unavailable",
				temporal.ApplicationErrorOptions{NextRetryDelay: busy.RetryDelay(), Cause: err})
		}
		if err != nil {
			return r, temporalError(err)
		}
		if res.Outcome == models.PayoutRefused {
			why = res.Reason
		}
	}
	now := a.clock()
	r, err = p.Store.UpdateRefund(ctx, r.ID, now, func(r models.Refund) (models.Refund, error) {
		if why != "" {
			return models.FailRefund(r, why, now)
		}
		return models.MarkRefundSent(r, res.Hash, now)
	})
	if err != nil {
		return r, temporalError(err)
	}
	a.dispatchRefundEvents(ctx, r)
	return r, nil
}

// payoutDestination is where r's payout goes: its destination, or for
// to_sender the account its payments came from (a muxed M… account when
// they came from one, which reaches the same customer of a custodian). A
// refund whose payments came from several accounts (or from none known)
// cannot be sent to the sender: the reason says so, and the refund fails,
// waiting for an address.
func (a *Refunds) payoutDestination(ctx context.Context, r models.Refund) (models.RefundDestination, string, error) {
	if r.Destination == nil {
		return models.RefundDestination{}, "", models.Errorf(models.CodeInvalidRefundState, "refund %s has no destination", r.ID)
	}
	d := *r.Destination
	if !d.ToSender {
		// A destination stored before the service's accounts were
		// refused, or given with the order when the API did not know the
		// payout account, is checked where every payout passes.
		return d, refusedAccount(d.Address, a.payouts.ServiceAccounts), nil
	}
	senders, err := a.payouts.Store.PaymentSenders(ctx, r.PaymentIDs)
	if err != nil {
		return d, "", err
	}
	var from string
	for _, id := range r.PaymentIDs {
		s := senders[id]
		if models.RefundAccount(s) == "" || (from != "" && s != from) {
			return d, "The payments came from more than one account, or from one not known: set the destination's address", nil
		}
		from = s
	}
	if from == "" {
		return d, "No paying account is known: set the destination's address", nil
	}
	d.Address, d.ToSender = from, false
	return d, refusedAccount(from, a.payouts.ServiceAccounts), nil
}

// refusedPayout splits a payer's error into a reason the refund fails
// with and an error to retry. A payout that cannot be made as asked (a
// destination the payer must change, an asset the payout account cannot
// send) fails the refund with the reason, and it waits for a new
// destination or an operator, instead of retrying a request that can
// never succeed.
func refusedPayout(err error) (string, error) {
	var refused *models.Error
	if errors.As(err, &refused) && (refused.Code == models.CodeInvalidRefundDestination || refused.Code == models.CodeInvalidRequest) {
		return refused.Message, nil
	}
	return "", err
}

// refusedAccount is the failure reason of a payout to one of the service's
// own accounts (models.RefuseServiceAccount), "" for any other.
func refusedAccount(address string, own []string) string {
	var refused *models.Error
	if errors.As(models.RefuseServiceAccount(address, own), &refused) {
		return refused.Message
	}
	return ""
}

// SetRefundDestination checks a destination with the network (the
// account exists; for USDC, it trusts the issuer) and records it. A
// destination that cannot receive the refund is refused with
// invalid_refund_destination and the reason.
func (a *Refunds) SetRefundDestination(ctx context.Context, m RefundMove) (models.Refund, error) {
	defer a.heartbeat(ctx)()
	p := &a.payouts
	if m.Destination == nil {
		return models.Refund{}, temporalError(models.Errorf(models.CodeInvalidRequest, "no destination"))
	}
	r, err := p.Store.Refund(ctx, m.RefundID)
	if err != nil {
		return r, temporalError(err)
	}
	if err := models.ValidateRefundDestination(*m.Destination); err != nil {
		return r, temporalError(err)
	}
	if err := models.RefuseServiceAccount(m.Destination.Address, p.ServiceAccounts); err != nil {
		return r, temporalError(err)
	}
	if payer := p.Payers[r.Mode]; payer != nil && m.Destination.Address != "" {
		if err := payer.CheckDestination(ctx, *m.Destination, r.Asset); err != nil {
			return r, temporalError(err)
		}
	}
	logger(ctx).Info("Refund destination set", "By", m.By, "ToSender", m.Destination.ToSender)
	return a.moveRefundBy(ctx, m.RefundID, m.Claim, func(r models.Refund, _ time.Time) (models.Refund, error) {
		return models.SetRefundDestination(r, *m.Destination)
	})
}

// ApproveRefund records an operator's approval of a refund's payout.
func (a *Refunds) ApproveRefund(ctx context.Context, m RefundMove) (models.Refund, error) {
	defer a.heartbeat(ctx)()
	logger(ctx).Info("Refund approved by an operator", "By", m.By)
	return a.moveRefund(ctx, m.RefundID, models.ApproveRefund)
}

// CancelRefund records that an operator settled a refund another way.
func (a *Refunds) CancelRefund(ctx context.Context, m RefundMove) (models.Refund, error) {
	defer a.heartbeat(ctx)()
	logger(ctx).Info("Refund cancelled by an operator", "By", m.By)
	return a.moveRefund(ctx, m.RefundID, models.CancelRefund)
}

// MarkRefundSent records that an operator paid a refund from another
// wallet, in transaction m.TxHash, once the refund's payer has checked
// that the transaction paid it (Payer.VerifyPayment: on the chain in live
// mode): its destination (the paying account for to_sender), amount,
// asset and memo. A refund with no destination yet is checked against
// any account but the service's own. A transaction that does not pay the
// refund is refused (invalid_request on transaction_hash) and nothing is
// written; a failure to ask the network is retried.
func (a *Refunds) MarkRefundSent(ctx context.Context, m RefundMove) (models.Refund, error) {
	defer a.heartbeat(ctx)()
	p := &a.payouts
	hash := strings.TrimSpace(m.TxHash)
	r, err := p.Store.Refund(ctx, m.RefundID)
	if err != nil {
		return r, temporalError(err)
	}
	if _, err := models.MarkRefundSent(r, hash, a.clock()); err != nil || r.Status == models.RefundSent {
		// Refused by the refund's rules, or a retried write of this very
		// hash (already checked): the move says so without the network.
		return a.moveRefund(ctx, m.RefundID, func(r models.Refund, now time.Time) (models.Refund, error) {
			return models.MarkRefundSent(r, hash, now)
		})
	}
	want, err := a.refundPayment(ctx, r)
	if err != nil {
		return r, temporalError(err)
	}
	payer := p.Payers[r.Mode]
	if payer == nil {
		return r, temporalError(models.Errorf(models.CodeInvalidRefundState,
			"Refund %s is in %s mode: its transaction is checked on the network by a worker with that mode's payout account (MEMOCART_STELLAR_PAYOUT_SECRET_FILE), and this worker has none",
			r.ID, r.Mode))
	}
	if err := payer.VerifyPayment(ctx, hash, want); err != nil {
		return r, temporalError(err)
	}
	logger(ctx).Info("Refund marked sent by an operator", "By", m.By, "TxHash", hash)
	return a.moveRefund(ctx, m.RefundID, func(now models.Refund, at time.Time) (models.Refund, error) {
		if !sameDestination(now.Destination, r.Destination) {
			// Checked against another destination: the check is redone.
			return now, errors.New("the refund's destination changed while its transaction was checked")
		}
		return models.MarkRefundSent(now, hash, at)
	})
}

// refundPayment is what a transaction must pay for r (models.RefundPayment):
// its destination, or the paying account for to_sender (any account when
// that is not one known account), and never the service's own accounts.
func (a *Refunds) refundPayment(ctx context.Context, r models.Refund) (models.RefundPayment, error) {
	want := models.RefundPayment{Asset: r.Asset, Amount: r.Amount, NotTo: a.payouts.ServiceAccounts}
	if r.Destination == nil {
		return want, nil
	}
	d, why, err := a.payoutDestination(ctx, r)
	if err != nil || (why != "" && d.ToSender) {
		// No one paying account is known: any account will do.
		return want, err
	}
	want.To = d
	return want, nil
}

// sameDestination reports whether two refunds' destinations are the same.
func sameDestination(a, b *models.RefundDestination) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// moveRefund writes one move at the activity's clock, and dispatches the
// event it recorded, if any (an operator's mark-sent: refund.sent).
func (a *Refunds) moveRefund(ctx context.Context, id string, move func(models.Refund, time.Time) (models.Refund, error)) (models.Refund, error) {
	return a.moveRefundBy(ctx, id, "", move)
}

// moveRefundBy is moveRefund through the claim link whose hash is claim,
// when it is not empty: the write uses the claim up, or is refused.
func (a *Refunds) moveRefundBy(ctx context.Context, id, claim string, move func(models.Refund, time.Time) (models.Refund, error)) (models.Refund, error) {
	p := &a.payouts
	now := a.clock()
	at := func(r models.Refund) (models.Refund, error) { return move(r, now) }
	var (
		r   models.Refund
		err error
	)
	if claim != "" {
		r, err = p.Store.UpdateRefundByClaim(ctx, id, claim, now, at)
	} else {
		r, err = p.Store.UpdateRefund(ctx, id, now, at)
	}
	if err != nil {
		return r, temporalError(err)
	}
	a.dispatchRefundEvents(ctx, r)
	return r, nil
}

// dispatchRefundEvents hands the events a refund write recorded in its
// transaction (refund.sent, refund.failed) to their delivery workflows
// once it has committed, as the order's writes do: they are events of the
// refund's order, so delivery does not wait for the outbox sweep. An
// unmatched payment's refund, of no order, records none.
func (a *Refunds) dispatchRefundEvents(ctx context.Context, r models.Refund) {
	if r.OrderID != "" {
		dispatchEvents(ctx, a.events, r.OrderID)
	}
}
