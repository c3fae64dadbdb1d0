package checkout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// fakePayouts is the refunds' store: refunds by id, each read answering
// the next of its versions (the last one for good), and the refunds whose
// workflow was marked started.
type fakePayouts struct {
	checkout.RefundStore // the rest: not used
	refunds              map[string][]models.Refund
	readErr              error
	marked               []string
}

func (f *fakePayouts) Refund(_ context.Context, id string) (models.Refund, error) {
	if f.readErr != nil {
		return models.Refund{}, f.readErr
	}
	vs := f.refunds[id]
	if len(vs) == 0 {
		return models.Refund{}, models.ErrRefundNotFound
	}
	r := vs[0]
	if len(vs) > 1 {
		f.refunds[id] = vs[1:]
	}
	return r, nil
}

func (f *fakePayouts) RefundWorkflowsToStart(context.Context, time.Time, int) ([]models.Refund, error) {
	return nil, nil
}

func (f *fakePayouts) MarkRefundWorkflowStarted(_ context.Context, id string, _ time.Time) error {
	f.marked = append(f.marked, id)
	return nil
}

// closedRuns is the refunds' workflows with no run open: every move is
// refused as closed; it records starts and the windows it was asked for
// closed runs, and answers those with ids.
type closedRuns struct {
	starts  []string
	numbers []string // the order number each start was given
	windows [][2]time.Time
	ids     []string
}

func (w *closedRuns) StartRefund(_ context.Context, r models.Refund, number string) error {
	w.starts = append(w.starts, r.ID)
	w.numbers = append(w.numbers, number)
	return nil
}

func (w *closedRuns) MoveRefund(context.Context, string, workflows.RefundMove) (models.Refund, error) {
	return models.Refund{}, models.ErrRefundClosed
}

func (w *closedRuns) RefundRunsClosed(_ context.Context, after, until time.Time) ([]string, error) {
	w.windows = append(w.windows, [2]time.Time{after, until})
	return w.ids, nil
}

func payoutRefund(id string, status models.RefundStatus) models.Refund {
	return models.Refund{ID: id, Status: status, Amount: decimal.RequireFromString("5"), Asset: "USDC", Mode: models.ModeLive}
}

// TestOperatorMoveOfARefundThatSettledMeanwhile: the refund's run closed
// between the read and the move, because the refund settled; the move is
// answered by the refund's rules on the refund read again, not by a
// server error.
func TestOperatorMoveOfARefundThatSettledMeanwhile(t *testing.T) {
	cancelled := payoutRefund("rfd_1", models.RefundCancelled)
	store := &fakePayouts{refunds: map[string][]models.Refund{"rfd_1": {payoutRefund("rfd_1", models.RefundAwaitingDestination), cancelled}}}
	wf := &closedRuns{}
	s, err := checkout.NewRefunds(checkout.Config{}, store, noOrders{}, wf, wf, clock, nil)
	require.NoError(t, err)

	got, err := s.MoveRefund(context.Background(), "rfd_1", workflows.CancelRefund{})
	require.NoError(t, err, "cancelling a cancelled refund is answered as it is")
	assert.Equal(t, models.RefundCancelled, got.Status)
	assert.Equal(t, []string{"rfd_1"}, wf.starts, "a new run was asked for once")

	store.refunds["rfd_1"] = []models.Refund{payoutRefund("rfd_1", models.RefundAwaitingDestination), cancelled}
	_, err = s.MoveRefund(context.Background(), "rfd_1", workflows.ApproveRefund{})
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, models.CodeInvalidRefundState, me.Code, "the rules refuse it: %v", err)

	// Not settled, and still no run answers: the service is unavailable,
	// and the client retries.
	store.refunds["rfd_1"] = []models.Refund{payoutRefund("rfd_1", models.RefundAwaitingDestination)}
	_, err = s.MoveRefund(context.Background(), "rfd_1", workflows.CancelRefund{})
	require.ErrorAs(t, err, &me)
	assert.Equal(t, models.CodeUnavailable, me.Code, "%v", err)
}

// TestReconcileRefundsRestartsClosedRuns: a refund not settled whose run
// an operator terminated or cancelled gets a new run; a settled one, or
// one not in the database, does not. Each sweep asks for the runs closed
// since the last one, up to grace ago; the first looks back
// RefundRunsLookback; a sweep that fails is done again.
func TestReconcileRefundsRestartsClosedRuns(t *testing.T) {
	now := t0
	store := &fakePayouts{refunds: map[string][]models.Refund{
		"rfd_sending": {payoutRefund("rfd_sending", models.RefundSending)},
		"rfd_waiting": {payoutRefund("rfd_waiting", models.RefundAwaitingDestination)},
		"rfd_sent":    {payoutRefund("rfd_sent", models.RefundSent)},
	}}
	wf := &closedRuns{ids: []string{"rfd_sending", "rfd_sent", "rfd_gone", "rfd_waiting"}}
	s, err := checkout.NewRefunds(checkout.Config{}, store, noOrders{}, wf, wf, func() time.Time { return now }, nil)
	require.NoError(t, err)
	const grace = 30 * time.Second

	n, err := s.ReconcileRefunds(context.Background(), grace)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"rfd_sending", "rfd_waiting"}, wf.starts)
	assert.Equal(t, []string{"rfd_sending", "rfd_waiting"}, store.marked)
	first := now.Add(-grace)
	require.Len(t, wf.windows, 1)
	assert.Equal(t, [2]time.Time{first.Add(-checkout.RefundRunsLookback), first}, wf.windows[0])

	// The next sweep asks only for the runs closed since; one that fails
	// is asked again.
	now = now.Add(10 * time.Second)
	wf.ids, store.readErr = []string{"rfd_waiting"}, errors.New("database down")
	_, err = s.ReconcileRefunds(context.Background(), grace)
	require.Error(t, err)
	now = now.Add(10 * time.Second)
	store.readErr = nil
	n, err = s.ReconcileRefunds(context.Background(), grace)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.Len(t, wf.windows, 3)
	assert.Equal(t, [2]time.Time{first, first.Add(10 * time.Second)}, wf.windows[1])
	assert.Equal(t, [2]time.Time{first, first.Add(20 * time.Second)}, wf.windows[2])
	_, err = s.ReconcileRefunds(context.Background(), grace)
	require.NoError(t, err)
	assert.Len(t, wf.windows, 3, "no time passed: nothing to ask")
}

var _ checkout.RefundWorkflows = (*closedRuns)(nil)
var _ checkout.RefundRuns = (*workflows.Client)(nil)

// noOrders reads no order: the refunds tested here name none.
type noOrders struct{}

func (noOrders) OrderForAccount(context.Context, string, models.Mode, string) (models.Order, error) {
	return models.Order{}, models.ErrOrderNotFound
}

// oneOrder reads the one order it holds, of its account and mode.
type oneOrder struct{ o models.Order }

func (s oneOrder) OrderForAccount(_ context.Context, accountID string, mode models.Mode, ref string) (models.Order, error) {
	if accountID != s.o.AccountID || mode != s.o.Mode || (ref != s.o.ID && ref != s.o.Number) {
		return models.Order{}, models.ErrOrderNotFound
	}
	return s.o, nil
}

// TestRestartedRefundRunNamesItsOrder: a run the reconciler starts again
// for a refund of an order carries the order's number, which operators
// search refund runs by; one of an unmatched payment carries none.
func TestRestartedRefundRunNamesItsOrder(t *testing.T) {
	ofOrder := payoutRefund("rfd_order", models.RefundSending)
	ofOrder.OrderID, ofOrder.AccountID = "ord_1", "acc_1"
	store := &fakePayouts{refunds: map[string][]models.Refund{
		"rfd_order":   {ofOrder},
		"rfd_payment": {payoutRefund("rfd_payment", models.RefundSending)},
	}}
	wf := &closedRuns{ids: []string{"rfd_order", "rfd_payment"}}
	orders := oneOrder{models.Order{ID: "ord_1", Number: "1234-5678-903", AccountID: "acc_1", Mode: models.ModeLive}}
	s, err := checkout.NewRefunds(checkout.Config{}, store, orders, wf, wf, clock, nil)
	require.NoError(t, err)
	n, err := s.ReconcileRefunds(context.Background(), time.Second)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"rfd_order", "rfd_payment"}, wf.starts)
	assert.Equal(t, []string{"1234-5678-903", ""}, wf.numbers)
}

// behindRun is a refund's run that has not yet taken in what its payout
// wrote: it refuses every move as the refund still sending, the first
// behind times, then answers the move.
type behindRun struct {
	closedRuns
	behind, asked int
}

func (w *behindRun) MoveRefund(_ context.Context, id string, _ workflows.RefundMove) (models.Refund, error) {
	w.asked++
	if w.asked <= w.behind {
		return models.Refund{}, models.Errorf(models.CodeInvalidRefundState, "refund %s is sending", id)
	}
	return payoutRefund(id, models.RefundSending), nil
}

// TestMoveAskedAgainWhileTheRunTakesThePayoutIn: the store has the
// refused payout's refund failed (a retry is allowed) while its run still
// has it sending: the refusal is stale, and the move is asked again until
// the run answers it. A refusal the stored refund agrees with is answered
// at once, and a run that stays behind is answered with its refusal.
func TestMoveAskedAgainWhileTheRunTakesThePayoutIn(t *testing.T) {
	for _, c := range []struct {
		name          string
		stored        models.RefundStatus
		behind, asked int
		refused       bool
	}{
		{"the run catches up", models.RefundFailed, 3, 4, false},
		{"the stored refund refuses it too", models.RefundSending, 3, 1, true},
		{"the run stays behind", models.RefundFailed, 100, 10, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := payoutRefund("rfd_1", c.stored)
			r.Destination = &models.RefundDestination{Address: "GDEST"}
			store := &fakePayouts{refunds: map[string][]models.Refund{"rfd_1": {r}}}
			wf := &behindRun{behind: c.behind}
			s, err := checkout.NewRefunds(checkout.Config{}, store, noOrders{}, wf, wf, clock, nil)
			require.NoError(t, err)
			got, err := s.MoveRefund(context.Background(), "rfd_1", workflows.ApproveRefund{By: "ops"})
			assert.Equal(t, c.asked, wf.asked, "moves asked of the run")
			if c.refused {
				assert.Equal(t, models.CodeInvalidRefundState, models.CodeOf(err), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, models.RefundSending, got.Status)
		})
	}
}
