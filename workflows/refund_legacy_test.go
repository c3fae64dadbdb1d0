package workflows_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// refundOutcome is what an UpdateRecordRefund sent by refundAt got.
type refundOutcome struct {
	accepted, rejected, completed bool
	err                           error
	result                        workflows.RefundResult
	completedAt                   time.Time
}

// refundAt sends UpdateRecordRefund after the given workflow time, as
// memocart payments mark-refunded --order does.
func (h *harness) refundAt(after time.Duration, amount, tx string) *refundOutcome {
	out := &refundOutcome{}
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(workflows.UpdateRecordRefund, "refund-"+tx, &testsuite.TestUpdateCallback{
			OnAccept: func() { out.accepted = true },
			OnReject: func(err error) { out.rejected, out.err = true, err },
			OnComplete: func(v any, err error) {
				out.completed, out.err, out.completedAt = true, err, h.env.Now()
				switch r := v.(type) {
				case workflows.RefundResult:
					out.result = r
				case converter.EncodedValue:
					require.NoError(h.t, r.Get(&out.result))
				}
			},
		}, workflows.RefundRequest{TxHash: tx, Amount: decimal.RequireFromString(amount), RecordedBy: "test"})
	}, after)
	return out
}

// TestOrderRefundRecorded (runs from before refund-payouts): an order
// that ended owing money closes as soon as its refund is recorded, with PaymentStatus refunded; refunds that do
// not match are refused before they enter the history; a payment after
// the refund is recorded late, never credited.
func TestOrderRefundRecorded(t *testing.T) {
	failed := func(t *testing.T) *harness {
		h := newHarness(t)
		h.beforeRefundPayouts()
		h.ff.placeErr = fmt.Errorf("fake marketplace: %w", models.Errorf(models.CodeSourcingFailed, "Out of stock."))
		h.payAt(5*time.Minute, pay("p1", "995.98"))
		return h
	}

	t.Run("failed order: refund recorded, then Failed with refunded", func(t *testing.T) {
		h := failed(t)
		early := h.refundAt(time.Minute, "995.98", "tx-early") // still awaiting payment: owes nothing
		wrong := h.refundAt(time.Hour, "900", "tx-wrong")      // not what the order received
		out := h.refundAt(48*time.Hour, "995.98", "tx-1")
		var during workflows.StatusView
		h.queryAt(47*time.Hour, &during)

		res := h.run()

		require.True(t, early.rejected, "refused while the order awaits payment: %+v", early)
		assert.Contains(t, early.err.Error(), "owes no refund")
		require.True(t, wrong.rejected, "refused: a different amount")
		assert.Contains(t, wrong.err.Error(), "has received 995.98 USDC, not 900")
		require.True(t, out.accepted && out.completed, "%+v", out)
		require.NoError(t, out.err)
		assert.Equal(t, models.PaymentRefunded, out.result.PaymentStatus)

		assert.Equal(t, models.PaymentRefundDue, during.PaymentStatus, "refund_due while it waits")
		assertResult(t, result(models.OrderFailed, models.PaymentRefunded, "995.98"), res)
		assert.Equal(t, t0.Add(48*time.Hour), h.env.Now().UTC(), "closed when the refund was recorded, not at the end of the wait")
		_, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:failed/refund_due", "refund:tx-1"}, writes,
			"the refund is written once, and the order not written again")
		status, payment := h.lastAttrs()
		assert.Equal(t, "failed", status)
		assert.Equal(t, "refunded", payment, "the closed run no longer lists as refund_due")
	})

	t.Run("a payment after the refund is late", func(t *testing.T) {
		h := failed(t)
		h.refundAt(time.Hour, "995.98", "tx-1")
		// Delivered in the same instant, after the refund's update.
		h.payAt(time.Hour, pay("p2", "10"))

		res := h.run()

		assertResult(t, result(models.OrderFailed, models.PaymentRefunded, "995.98"), res)
		_, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"payment:p1", "transition:paid/confirmed", "transition:failed/refund_due", "refund:tx-1",
			"payment:p2", "late:p2", "refunds"}, writes, "stored, then marked late: due back on its own, as a refund of its own")
	})

	t.Run("cancelled after a partial payment: Completed once refunded", func(t *testing.T) {
		h := newHarness(t)
		h.beforeRefundPayouts()
		h.payAt(2*time.Minute, pay("p1", "500"))
		h.cancelAt(3*time.Minute, workflows.CancelSignal{Reason: "customer asked"})
		out := h.refundAt(24*time.Hour, "500", "tx-c")

		res := h.run()

		require.True(t, out.completed)
		require.NoError(t, out.err)
		assertResult(t, result(models.OrderCancelled, models.PaymentRefunded, "500"), res)
		assert.Equal(t, t0.Add(24*time.Hour), h.env.Now().UTC())
		_, payment := h.lastAttrs()
		assert.Equal(t, "refunded", payment)
	})

	t.Run("delivered order: nothing to refund", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(5*time.Minute, pay("p1", "995.98"))
		out := h.refundAt(10*time.Minute, "995.98", "tx-d")
		res := h.run()
		require.True(t, out.rejected)
		assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	})
}
