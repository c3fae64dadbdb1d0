package workflows_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// moveAt sends test mode's move update after a delay.
func (h *harness) moveAt(after time.Duration, m models.TestMove) *updateOutcome[workflows.TestMoveResult] {
	return updateAt[workflows.TestMoveResult](h.t, h.env, after, workflows.UpdateTestMove, fmt.Sprintf("move-%d-%v", after, m), m)
}

// TestOrderTestMoves: test mode's advance makes the provider's next step
// happen now, through a check the run makes at once, and answers once the
// step is written; the order then goes on at the provider's pace. Fail
// makes sourcing fail now, as a provider's refusal does: failed, refund
// due. A move the order's state does not allow is refused before it
// enters the history.
func TestOrderTestMoves(t *testing.T) {
	const paidAt = time.Minute
	advance := models.TestMove{Advance: true}

	t.Run("advance, step by step, to delivered", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(paidAt, pay("p1", "995.98"))
		var outs []*updateOutcome[workflows.TestMoveResult]
		for i := range 3 {
			outs = append(outs, h.moveAt(paidAt+time.Duration(10+i)*time.Second, advance))
		}
		res := h.run()
		assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
		for i, want := range []models.OrderStatus{models.OrderOrdered, models.OrderShipped, models.OrderDelivered} {
			require.True(t, outs[i].accepted && outs[i].completed, "move %d: %+v", i, outs[i])
			require.NoError(t, outs[i].err)
			assert.Equal(t, workflows.TestMoveResult{Status: want, PaymentStatus: models.PaymentConfirmed}, outs[i].result)
			assert.Equal(t, t0.Add(paidAt+time.Duration(10+i)*time.Second), outs[i].completedAt.UTC(), "at once")
		}
		transitions, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:ordered/confirmed", "transition:shipped/confirmed", "transition:delivered/confirmed"}, writes)
		assert.Equal(t, t0.Add(paidAt+12*time.Second), transitions[3].At, "delivered by the third move")
		assert.Equal(t, shipment, *transitions[2].Shipment)
		assert.Equal(t, []string{"place:1", "move:advance", "move:advance", "move:advance"}, h.ff.Calls(), "no check was due yet")
	})

	t.Run("advance once: the order goes on at the provider's pace", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(paidAt, pay("p1", "995.98"))
		out := h.moveAt(paidAt+10*time.Second, advance)
		res := h.run()
		assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
		require.True(t, out.completed, "%+v", out)
		assert.Equal(t, models.OrderOrdered, out.result.Status)
		transitions, _, _ := h.store.snapshot()
		require.Len(t, transitions, 4)
		assert.Equal(t, t0.Add(paidAt+10*time.Second), transitions[1].At, "ordered at the move")
		assert.Equal(t, models.OrderDelivered, transitions[3].Status)
	})

	t.Run("fail while ordered: failed, refund due", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(paidAt, pay("p1", "995.98"))
		h.moveAt(paidAt+10*time.Second, advance)
		out := h.moveAt(paidAt+20*time.Second, models.TestMove{Fail: "cancelled_by_retailer"})
		res := h.run()
		assertResult(t, result(models.OrderFailed, models.PaymentRefundDue, "995.98"), res)
		require.True(t, out.accepted && out.completed, "%+v", out)
		require.NoError(t, out.err)
		assert.Equal(t, workflows.TestMoveResult{Status: models.OrderFailed, PaymentStatus: models.PaymentRefundDue}, out.result)
		transitions, _, _ := h.store.snapshot()
		last := transitions[len(transitions)-1]
		assert.Equal(t, models.OrderFailed, last.Status)
		assert.Equal(t, models.FulfilmentFailureReason("cancelled_by_retailer"), last.Reason)
		assert.Equal(t, t0.Add(paidAt+20*time.Second), last.At)
		assert.Contains(t, h.ff.Calls(), "move:fail:cancelled_by_retailer")
		assert.Equal(t, []string{models.RefundID("order:"+orderID+":1") + "@" + orderNumber}, h.started, "the refund it owes is handed over")
	})

	for _, c := range []struct {
		name   string
		at     time.Duration
		move   models.TestMove
		code   models.Code
		status string
	}{
		{"advance before payment", paidAt / 2, advance, models.CodeInvalidOrderState, "awaiting payment"},
		{"fail once shipped", paidAt + fulfilmentTime - time.Minute, models.TestMove{Fail: "product_out_of_stock"}, models.CodeInvalidOrderState, "shipped"},
		{"unknown failure code", paidAt + 10*time.Second, models.TestMove{Fail: "bored"}, models.CodeInvalidRequest, "reason must be one of"},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			h := newHarness(t)
			h.payAt(paidAt, pay("p1", "995.98"))
			out := h.moveAt(c.at, c.move)
			res := h.run()
			assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
			assert.Contains(t, out.requireRejected(t, c.code).Message(), c.status)
			assert.NotContains(t, h.ff.Calls(), "move:advance")
		})
	}

	t.Run("refused: a run from before the baselines, whose checks carry no move", func(t *testing.T) {
		h := newHarness(t)
		h.beforeRefundPayouts()
		h.payAt(paidAt, pay("p1", "995.98"))
		out := h.moveAt(paidAt+10*time.Second, advance)
		res := h.run()
		assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
		assert.Contains(t, out.requireRejected(t, models.CodeInvalidOrderState).Message(), "predates test moves")
	})

	t.Run("refused: a live order", func(t *testing.T) {
		h := newHarness(t)
		h.in.Mode = models.ModeLive
		h.payAt(paidAt, pay("p1", "995.98"))
		out := h.moveAt(paidAt+10*time.Second, advance)
		h.run()
		out.requireRejected(t, models.CodeTestModeOnly)
	})
}
