package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

const (
	refundDest  = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	refundDest2 = "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"
)

// fakeRefunds is an in-memory activities.RefundStore for one refund, which
// applies the models' moves as the real store does and keeps its writes
// in order: "approve", "tx:<hash>", "sent", "failed", "destination",
// "cancel".
type fakeRefunds struct {
	mu      sync.Mutex
	r       models.Refund
	senders map[string]string
	writes  []string
}

func (s *fakeRefunds) Refund(_ context.Context, id string) (models.Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.r.ID {
		return models.Refund{}, models.ErrRefundNotFound
	}
	return s.r, nil
}

func (s *fakeRefunds) UpdateRefund(_ context.Context, id string, _ time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.r.ID {
		return models.Refund{}, models.ErrRefundNotFound
	}
	next, err := move(s.r)
	if err != nil {
		return s.r, err
	}
	switch {
	case next.Status == s.r.Status && next.TransactionHash != s.r.TransactionHash:
		s.writes = append(s.writes, "tx:"+next.TransactionHash)
	case next.Status == models.RefundSending:
		s.writes = append(s.writes, "approve")
	case next.Status == models.RefundSent:
		s.writes = append(s.writes, "sent")
	case next.Status == models.RefundFailed:
		s.writes = append(s.writes, "failed")
	case next.Status == models.RefundCancelled:
		s.writes = append(s.writes, "cancel")
	case next.Status == models.RefundAwaitingApproval:
		s.writes = append(s.writes, "destination")
	}
	s.r = next
	return next, nil
}

// UpdateRefundByClaim moves as UpdateRefund does through a claim, named
// by its hash, written "claim:<hash>" before the move's own write; a
// claim is used once, as the real store uses it.
func (s *fakeRefunds) UpdateRefundByClaim(ctx context.Context, id, claim string, now time.Time, move func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	s.mu.Lock()
	if slices.Contains(s.writes, "claim:"+claim) {
		s.mu.Unlock()
		return models.Refund{}, models.ErrRefundClaimGone
	}
	s.writes = append(s.writes, "claim:"+claim)
	s.mu.Unlock()
	return s.UpdateRefund(ctx, id, now, move)
}

func (s *fakeRefunds) ApproveRefundWithinDailyMax(ctx context.Context, id string, now, _ time.Time, max decimal.Decimal) (models.Refund, bool, error) {
	s.mu.Lock()
	within := s.r.Value != nil && !s.r.Value.GreaterThan(max)
	s.mu.Unlock()
	if !within {
		r, err := s.Refund(ctx, id)
		return r, false, err
	}
	r, err := s.UpdateRefund(ctx, id, now, func(r models.Refund) (models.Refund, error) { return models.ApproveRefund(r, now) })
	return r, err == nil, err
}

func (s *fakeRefunds) CreateOwedRefunds(context.Context, string, time.Time) ([]models.Refund, error) {
	return nil, errors.New("fake refunds: not an order's store")
}

func (s *fakeRefunds) MarkRefundWorkflowStarted(context.Context, string, time.Time) error { return nil }

func (s *fakeRefunds) PaymentSenders(_ context.Context, ids []string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for _, id := range ids {
		if v, ok := s.senders[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

func (s *fakeRefunds) snapshot() (models.Refund, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r, append([]string(nil), s.writes...)
}

// fakePayer is a chain of one payout account: a payment applies once per
// transaction hash; refuse and fail script what the next payouts answer.
type fakePayer struct {
	mu sync.Mutex
	// refuse: the next payouts are refused with these codes, in turn.
	refuse []string
	// timeouts: the next payouts apply, then answer an unknown outcome.
	timeouts int
	applied  map[string]models.PayoutRequest // by hash
	attempts int
	badDest  map[string]bool // destinations CheckDestination refuses
	// notPaying are the transactions VerifyPayment refuses; verified
	// what it was asked.
	notPaying map[string]bool
	verified  []models.RefundPayment
}

func (p *fakePayer) VerifyPayment(_ context.Context, hash string, want models.RefundPayment) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.verified = append(p.verified, want)
	if p.notPaying[hash] {
		return models.FieldError(models.CodeInvalidRequest, "transaction_hash", "Transaction %s does not pay the refund", hash)
	}
	return nil
}

func (p *fakePayer) CheckDestination(_ context.Context, d models.RefundDestination, _ string) error {
	if p.badDest[d.Address] {
		return models.FieldError(models.CodeInvalidRefundDestination, "refund_destination.address", "The account does not exist")
	}
	return nil
}

func (p *fakePayer) Pay(ctx context.Context, req models.PayoutRequest, record func(context.Context, string, string) error) (models.PayoutResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts++
	if p.badDest[req.Destination.Address] {
		return models.PayoutResult{}, models.FieldError(models.CodeInvalidRefundDestination, "refund_destination.address", "No such account on the network")
	}
	if p.applied == nil {
		p.applied = map[string]models.PayoutRequest{}
	}
	if h := req.Prior.Hash; h != "" {
		if _, ok := p.applied[h]; ok {
			return models.PayoutResult{Outcome: models.PayoutSent, Hash: h}, nil
		}
	}
	hash := fmt.Sprintf("%064x", p.attempts)
	if err := record(ctx, hash, "envelope-"+hash); err != nil {
		return models.PayoutResult{}, err
	}
	if len(p.refuse) > 0 {
		code := p.refuse[0]
		p.refuse = p.refuse[1:]
		return models.PayoutResult{Outcome: models.PayoutRefused, Hash: hash, Code: code, Reason: "refused: " + code}, nil
	}
	if code := req.TestRefusal; code != "" {
		return models.PayoutResult{Outcome: models.PayoutRefused, Hash: hash, Code: code, Reason: "test refusal: " + code}, nil
	}
	p.applied[hash] = req
	if p.timeouts > 0 {
		p.timeouts--
		return models.PayoutResult{}, errors.New("fake payer: 504 after applying")
	}
	return models.PayoutResult{Outcome: models.PayoutSent, Hash: hash}, nil
}

// payments returns what reached the chain, one per applied transaction.
func (p *fakePayer) payments() []models.PayoutRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []models.PayoutRequest
	for _, r := range p.applied {
		out = append(out, r)
	}
	return out
}

type refundHarness struct {
	t        *testing.T
	env      *testsuite.TestWorkflowEnvironment
	store    *fakeRefunds
	payer    *fakePayer
	limits   activities.RefundLimits
	statuses []string // every upserted RefundStatus, in order
}

func newRefundHarness(t *testing.T, r models.Refund) *refundHarness {
	t.Helper()
	env := newTestEnv(slog.NewTextHandler(testWriter{t}, nil), t0)
	h := &refundHarness{
		t: t, env: env,
		store: &fakeRefunds{r: r, senders: map[string]string{"p1": refundDest}},
		payer: &fakePayer{},
	}
	env.RegisterWorkflowWithOptions(workflows.Refund, workflow.RegisterOptions{Name: workflows.RefundWorkflowName})
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		if v, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.SearchAttrRefundStatus); ok {
			h.statuses = append(h.statuses, v)
		}
	}).Return()
	return h
}

func (h *refundHarness) register() {
	registerActivities(h.t, h.env, actParts{Payouts: activities.RefundPayouts{
		Store:  h.store,
		Payers: map[models.Mode]activities.Payer{models.ModeTest: h.payer, models.ModeLive: h.payer},
		Limits: h.limits,
	}})
}

func (h *refundHarness) run() (workflows.RefundOutcome, error) {
	h.t.Helper()
	h.register()
	r, _ := h.store.snapshot()
	h.env.ExecuteWorkflow(workflows.RefundWorkflowName, workflows.RefundInput{Refund: r, OrderNumber: orderNumber})
	require.True(h.t, h.env.IsWorkflowCompleted())
	var res workflows.RefundOutcome
	if err := h.env.GetWorkflowError(); err != nil {
		return res, err
	}
	require.NoError(h.t, h.env.GetWorkflowResult(&res))
	return res, nil
}

func (h *refundHarness) updateAt(after time.Duration, name string, req any) *updateOutcome[models.Refund] {
	return updateAt[models.Refund](h.t, h.env, after, name, fmt.Sprintf("%s-%s", name, after), req)
}

func testRefund(mode models.Mode, dest *models.RefundDestination) models.Refund {
	value := decimal.RequireFromString("50")
	r := models.Refund{
		ID: models.RefundID("order:" + orderID + ":1"), Key: "order:" + orderID + ":1", OrderID: orderID, Mode: mode,
		PaymentIDs: []string{"p1"}, Reason: models.RefundOrderFailed, Amount: decimal.RequireFromString("50"), Asset: "USDC",
		Value: &value, Status: models.RefundAwaitingDestination, CreatedAt: t0,
	}
	if dest != nil {
		var err error
		if r, err = models.SetRefundDestination(r, *dest); err != nil {
			panic(err)
		}
	}
	return r
}

func TestRefundWorkflow(t *testing.T) {
	dest := &models.RefundDestination{Address: refundDest, MemoType: "id", Memo: "42"}

	t.Run("test mode with a destination: approved and sent at once, paid once", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, dest))
		res, err := h.run()
		require.NoError(t, err)
		r, writes := h.store.snapshot()
		assert.Equal(t, models.RefundSent, res.Status)
		assert.Equal(t, r.TransactionHash, res.TransactionHash)
		assert.Equal(t, []string{"approve", "tx:" + r.TransactionHash, "sent"}, writes, "the transaction is recorded before it is sent")
		require.Len(t, h.payer.payments(), 1)
		assert.Equal(t, refundDest, h.payer.payments()[0].Destination.Address)
		assert.Equal(t, "42", h.payer.payments()[0].Destination.Memo)
		assert.Equal(t, []string{"sending", "sent"}, h.statuses, "one upsert per status")
	})

	t.Run("waits for a destination, then pays it", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, nil))
		early := h.updateAt(time.Minute, workflows.UpdateApproveRefund, workflows.RefundOperatorRequest{By: "test"})
		set := h.updateAt(48*time.Hour, workflows.UpdateSetRefundDestination, workflows.RefundDestinationRequest{Destination: *dest, By: "api"})
		res, err := h.run()
		require.NoError(t, err)
		require.True(t, early.rejected, "nothing to approve without a destination: %+v", early)
		assert.Contains(t, early.err.Error(), "only a refund awaiting approval, or failed, can be approved")
		require.True(t, set.completed, "%+v", set)
		require.NoError(t, set.err)
		assert.Equal(t, models.RefundAwaitingApproval, set.result.Status)
		assert.Equal(t, models.RefundSent, res.Status)
		assert.Equal(t, t0.Add(48*time.Hour), h.env.Now().UTC(), "sent as soon as it had a destination")
		assert.Len(t, h.payer.payments(), 1)
	})

	t.Run("a destination the network refuses is refused, the refund keeps waiting", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, nil))
		h.payer.badDest = map[string]bool{refundDest2: true}
		bad := h.updateAt(time.Hour, workflows.UpdateSetRefundDestination, workflows.RefundDestinationRequest{Destination: models.RefundDestination{Address: refundDest2}})
		good := h.updateAt(2*time.Hour, workflows.UpdateSetRefundDestination, workflows.RefundDestinationRequest{Destination: *dest})
		res, err := h.run()
		require.NoError(t, err)
		require.True(t, bad.completed)
		requireAppError(t, bad.err, models.CodeInvalidRefundDestination)
		require.NoError(t, good.err)
		assert.Equal(t, models.RefundSent, res.Status)
		_, writes := h.store.snapshot()
		assert.Equal(t, "destination", writes[0], "the refused destination wrote nothing")
	})

	t.Run("a destination through a claim link names the claim to the write, which refuses it once used", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeLive, nil))
		h.limits = activities.RefundLimits{AutoApproveMax: decimal.RequireFromString("20")}
		hash := strings.Repeat("ab", 32)
		first := h.updateAt(time.Hour, workflows.UpdateSetRefundDestination,
			workflows.RefundDestinationRequest{Destination: *dest, By: "claim", Claim: hash})
		late := h.updateAt(2*time.Hour, workflows.UpdateSetRefundDestination,
			workflows.RefundDestinationRequest{Destination: models.RefundDestination{Address: refundDest2}, By: "claim", Claim: hash})
		approve := h.updateAt(3*time.Hour, workflows.UpdateApproveRefund, workflows.RefundOperatorRequest{By: "ops"})
		res, err := h.run()
		require.NoError(t, err)
		require.NoError(t, first.err)
		require.True(t, late.completed, "%+v", late)
		requireAppError(t, late.err, models.CodeRefundNotFound)
		require.NoError(t, approve.err)
		assert.Equal(t, models.RefundSent, res.Status)
		r, writes := h.store.snapshot()
		assert.Equal(t, []string{"claim:" + hash, "destination"}, writes[:2], "the claim is named to the write that sets the destination")
		assert.Equal(t, refundDest, r.Destination.Address, "the late submission changed nothing")
		require.Len(t, h.payer.payments(), 1)
		assert.Equal(t, refundDest, h.payer.payments()[0].Destination.Address)
	})

	t.Run("live over the limit waits for an operator", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeLive, dest))
		h.limits = activities.RefundLimits{AutoApproveMax: decimal.RequireFromString("20")}
		approve := h.updateAt(3*time.Hour, workflows.UpdateApproveRefund, workflows.RefundOperatorRequest{By: "ops"})
		res, err := h.run()
		require.NoError(t, err)
		require.NoError(t, approve.err)
		assert.Equal(t, models.RefundSent, res.Status)
		assert.Equal(t, t0.Add(3*time.Hour), h.env.Now().UTC())
		assert.Equal(t, []string{"sending", "sent"}, h.statuses)
	})

	t.Run("live under the limit and the daily limit goes out", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeLive, dest))
		h.limits = activities.RefundLimits{AutoApproveMax: decimal.RequireFromString("50"), DailyMax: decimal.RequireFromString("100")}
		res, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, models.RefundSent, res.Status)
		assert.Equal(t, t0, h.env.Now().UTC())
	})

	t.Run("live under the limit, over the daily limit, waits", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeLive, dest))
		h.limits = activities.RefundLimits{AutoApproveMax: decimal.RequireFromString("50"), DailyMax: decimal.RequireFromString("10")}
		h.updateAt(5*time.Hour, workflows.UpdateApproveRefund, workflows.RefundOperatorRequest{By: "ops"})
		res, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, models.RefundSent, res.Status)
		assert.Equal(t, t0.Add(5*time.Hour), h.env.Now().UTC())
	})

	t.Run("refused payout fails the refund; a new destination pays it", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, dest))
		h.payer.refuse = []string{"op_no_trust"}
		var failed models.Refund
		h.env.RegisterDelayedCallback(func() {
			v, err := h.env.QueryWorkflow(workflows.QueryRefund)
			require.NoError(t, err)
			require.NoError(t, v.Get(&failed))
		}, time.Hour)
		set := h.updateAt(2*time.Hour, workflows.UpdateSetRefundDestination,
			workflows.RefundDestinationRequest{Destination: models.RefundDestination{Address: refundDest2}})
		res, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, models.RefundFailed, failed.Status)
		assert.Equal(t, "refused: op_no_trust", failed.FailureReason)
		require.NoError(t, set.err)
		assert.Equal(t, models.RefundSent, res.Status)
		pays := h.payer.payments()
		require.Len(t, pays, 1, "the refused payout moved nothing")
		assert.Equal(t, refundDest2, pays[0].Destination.Address)
		assert.Equal(t, []string{"sending", "failed", "awaiting_approval", "sending", "sent"}, h.statuses)
	})

	t.Run("an unknown outcome is resolved by the retry, paid once", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, dest))
		h.payer.timeouts = 1
		res, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, models.RefundSent, res.Status)
		assert.Len(t, h.payer.payments(), 1, "the retry found the recorded transaction")
		assert.Equal(t, 2, h.payer.attempts)
		r, _ := h.store.snapshot()
		assert.Equal(t, fmt.Sprintf("%064x", 1), r.TransactionHash, "sent in the first transaction")
	})

	t.Run("to the sender: the paying account", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, &models.RefundDestination{ToSender: true}))
		res, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, models.RefundSent, res.Status)
		require.Len(t, h.payer.payments(), 1)
		assert.Equal(t, refundDest, h.payer.payments()[0].Destination.Address)
	})

	t.Run("to the sender of several accounts fails, asking for an address", func(t *testing.T) {
		r := testRefund(models.ModeTest, &models.RefundDestination{ToSender: true})
		r.PaymentIDs = []string{"p1", "p2"}
		h := newRefundHarness(t, r)
		h.store.senders["p2"] = refundDest2
		h.updateAt(time.Hour, workflows.UpdateCancelRefund, workflows.RefundOperatorRequest{By: "ops"})
		res, err := h.run()
		require.NoError(t, err)
		assert.Equal(t, models.RefundCancelled, res.Status)
		got, writes := h.store.snapshot()
		assert.Equal(t, []string{"approve", "failed", "cancel"}, writes)
		assert.Contains(t, got.FailureReason, "more than one account")
		assert.Empty(t, h.payer.payments())
	})

	t.Run("a payout the payer refuses as asked fails the refund, the run goes on", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, &models.RefundDestination{Address: refundDest2}))
		h.payer.badDest = map[string]bool{refundDest2: true}
		h.updateAt(time.Hour, workflows.UpdateCancelRefund, workflows.RefundOperatorRequest{By: "ops"})
		res, err := h.run()
		require.NoError(t, err, "a refusal is the refund's failure, not the workflow's")
		assert.Equal(t, models.RefundCancelled, res.Status)
		got, writes := h.store.snapshot()
		assert.Equal(t, []string{"approve", "failed", "cancel"}, writes)
		assert.Equal(t, "No such account on the network", got.FailureReason)
		assert.Equal(t, 1, h.payer.attempts, "not retried")
	})

	t.Run("an operator marks it sent; a second mark with another hash is refused", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeLive, nil))
		tx := strings.Repeat("ab", 32)
		mark := h.updateAt(time.Hour, workflows.UpdateMarkRefundSent, workflows.RefundOperatorRequest{TxHash: tx})
		res, err := h.run()
		require.NoError(t, err)
		require.NoError(t, mark.err)
		assert.Equal(t, workflows.RefundOutcome{Status: models.RefundSent, TransactionHash: tx}, res)
		assert.Empty(t, h.payer.payments())
	})
}

// TestRefundMarkSentIsCheckedByThePayer: an operator's transaction that
// the payer says does not pay the refund is refused at once, answered to
// the operator as invalid_request, and the refund keeps waiting, until a
// transaction that pays it.
func TestRefundMarkSentIsCheckedByThePayer(t *testing.T) {
	dest := &models.RefundDestination{Address: refundDest, MemoType: "id", Memo: "42"}
	h := newRefundHarness(t, testRefund(models.ModeLive, dest))
	bad, good := strings.Repeat("cd", 32), strings.Repeat("ab", 32)
	h.payer.notPaying = map[string]bool{bad: true}
	wrong := h.updateAt(time.Hour, workflows.UpdateMarkRefundSent, workflows.RefundOperatorRequest{TxHash: bad})
	right := h.updateAt(2*time.Hour, workflows.UpdateMarkRefundSent, workflows.RefundOperatorRequest{TxHash: good})
	res, err := h.run()
	require.NoError(t, err)
	require.True(t, wrong.completed, "%+v", wrong)
	assert.Contains(t, requireAppError(t, wrong.err, models.CodeInvalidRequest).Message(), "does not pay the refund")
	require.NoError(t, right.err)
	assert.Equal(t, workflows.RefundOutcome{Status: models.RefundSent, TransactionHash: good}, res)
	_, writes := h.store.snapshot()
	assert.Equal(t, []string{"sent"}, writes, "nothing written for the refused hash")
	require.Len(t, h.payer.verified, 2, "each hash asked once: a refusal is not retried")
	assert.Equal(t, *dest, h.payer.verified[0].To)
	assert.Equal(t, "USDC", h.payer.verified[0].Asset)
	assert.Equal(t, "50", h.payer.verified[0].Amount.String())
	assert.Empty(t, h.payer.payments())
}

// TestRefundStartOptions: a refund's run closed without settling it
// (terminated or cancelled in the UI) is followed by a new run; one that
// completed (the refund settled) never is.
func TestRefundStartOptions(t *testing.T) {
	opts := workflows.RefundStartOptions(workflows.RefundInput{Refund: testRefund(models.ModeLive, nil), OrderNumber: orderNumber}, "q")
	assert.Equal(t, models.RefundWorkflowID(testRefund(models.ModeLive, nil).ID), opts.ID)
	assert.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY, opts.WorkflowIDReusePolicy)
	assert.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, opts.WorkflowIDConflictPolicy)
}

// TestRefundRunTakesTheStoredRefund: a run started after an earlier run
// of the refund was terminated mid-payout, from a copy of the refund read
// before that run approved it, takes the refund as stored (sending, its
// transaction recorded and applied): it looks that transaction up and
// records the refund sent with it, paying nothing more.
func TestRefundRunTakesTheStoredRefund(t *testing.T) {
	dest := &models.RefundDestination{Address: refundDest, MemoType: "id", Memo: "42"}
	stale := testRefund(models.ModeLive, nil)
	stored, err := models.ApproveRefund(testRefund(models.ModeLive, dest), t0)
	require.NoError(t, err)
	tx := fmt.Sprintf("%064x", 99)
	stored, err = models.RecordRefundTransaction(stored, tx, "envelope-"+tx)
	require.NoError(t, err)

	h := newRefundHarness(t, stored)
	h.payer.applied = map[string]models.PayoutRequest{tx: {RefundID: stored.ID, Destination: *dest, Asset: "USDC", Amount: stored.Amount}}
	h.register()
	var local []string
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		local = append(local, info.ActivityType.Name)
	})
	h.env.ExecuteWorkflow(workflows.RefundWorkflowName, workflows.RefundInput{Refund: stale, OrderNumber: orderNumber})
	require.True(t, h.env.IsWorkflowCompleted(), "the run went on with the stored refund")
	assert.Equal(t, []string{"LoadRefund"}, local, "the read is a local activity")
	require.NoError(t, h.env.GetWorkflowError())
	var res workflows.RefundOutcome
	require.NoError(t, h.env.GetWorkflowResult(&res))
	assert.Equal(t, workflows.RefundOutcome{Status: models.RefundSent, TransactionHash: tx}, res)
	_, writes := h.store.snapshot()
	assert.Equal(t, []string{"sent"}, writes, "no approval or transaction of its own")
	assert.Len(t, h.payer.payments(), 1, "paid once")
	assert.Equal(t, 1, h.payer.attempts, "one lookup")
}

// TestRefundTestFailPayout: test mode's refund fail helper has the
// refund's next payout refused, once, as the network would refuse it:
// the refund waiting for its destination answers as it stands, fails
// when the destination comes, and a new destination pays it. A live
// refund and an unknown reason are refused before the update enters the
// history.
func TestRefundTestFailPayout(t *testing.T) {
	dest := models.RefundDestination{Address: refundDest, MemoType: "none"}
	t.Run("the next payout is refused, once", func(t *testing.T) {
		h := newRefundHarness(t, testRefund(models.ModeTest, nil))
		fail := h.updateAt(time.Minute, workflows.UpdateTestFailPayout, workflows.RefundTestFailRequest{Reason: "no_trust"})
		first := h.updateAt(2*time.Minute, workflows.UpdateSetRefundDestination, workflows.RefundDestinationRequest{Destination: dest, By: "api"})
		var failed models.Refund
		h.env.RegisterDelayedCallback(func() { failed, _ = h.store.snapshot() }, 3*time.Minute)
		second := h.updateAt(4*time.Minute, workflows.UpdateSetRefundDestination, workflows.RefundDestinationRequest{Destination: models.RefundDestination{Address: refundDest2}, By: "api"})
		res, err := h.run()
		require.NoError(t, err)
		require.True(t, fail.accepted && fail.completed, "%+v", fail)
		require.NoError(t, fail.err)
		assert.Equal(t, models.RefundAwaitingDestination, fail.result.Status, "answered as it stands")
		require.True(t, first.completed && second.completed, "%+v %+v", first, second)
		assert.Equal(t, models.RefundFailed, failed.Status, "the payout after the destination was refused")
		assert.Equal(t, "test refusal: no_trust", failed.FailureReason)
		assert.Equal(t, models.RefundSent, res.Status, "the new destination is paid")
		require.Len(t, h.payer.payments(), 1)
		assert.Equal(t, refundDest2, h.payer.payments()[0].Destination.Address)
		assert.Empty(t, h.payer.payments()[0].TestRefusal, "the refusal was for one payout")
	})

	for _, c := range []struct {
		name   string
		mode   models.Mode
		reason string
		code   models.Code
	}{
		{"a live refund", models.ModeLive, "no_trust", models.CodeTestModeOnly},
		{"an unknown reason", models.ModeTest, "bored", models.CodeInvalidRequest},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			h := newRefundHarness(t, testRefund(c.mode, nil))
			fail := h.updateAt(time.Minute, workflows.UpdateTestFailPayout, workflows.RefundTestFailRequest{Reason: c.reason})
			h.updateAt(2*time.Minute, workflows.UpdateSetRefundDestination, workflows.RefundDestinationRequest{Destination: dest, By: "api"})
			if c.mode == models.ModeLive {
				h.updateAt(3*time.Minute, workflows.UpdateApproveRefund, workflows.RefundOperatorRequest{By: "ops"})
			}
			res, err := h.run()
			require.NoError(t, err)
			fail.requireRejected(t, c.code)
			assert.Equal(t, models.RefundSent, res.Status, "the payout went ahead")
		})
	}
}
