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

// expireAt sends test mode's expire update after a delay.
func (h *harness) expireAt(after time.Duration) *updateOutcome[workflows.ExpireResult] {
	return updateAt[workflows.ExpireResult](h.t, h.env, after, workflows.UpdateExpirePayment, fmt.Sprintf("expire-%d", after), workflows.ExpireRequest{})
}

// TestOrderExpireByTestHelper: test mode's expire ends the payment wait
// at once as the deadline would (the same outcome and reason, payments
// taken in before it counting), answering once that is written; an order
// paid refuses it before it enters the history (a closed order never
// gets here: the API refuses it on the order as recorded).
func TestOrderExpireByTestHelper(t *testing.T) {
	t.Run("awaiting payment: cancelled as by the deadline, now", func(t *testing.T) {
		h := newHarness(t)
		out := h.expireAt(5 * time.Minute)
		res := h.run()
		assertResult(t, result(models.OrderCancelled, models.PaymentExpired, "0"), res)
		require.True(t, out.accepted && out.completed, "%+v", out)
		require.NoError(t, out.err)
		assert.Equal(t, workflows.ExpireResult{Status: models.OrderCancelled, PaymentStatus: models.PaymentExpired}, out.result)
		transitions, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"transition:cancelled/expired"}, writes)
		assert.Equal(t, models.CancellationPaymentWindowExpired, transitions[0].Cancellation)
		assert.Equal(t, "payment deadline passed", transitions[0].Reason)
		assert.Equal(t, t0.Add(5*time.Minute), transitions[0].At, "at once, not at the deadline")
		assert.Equal(t, t0.Add(5*time.Minute), out.completedAt.UTC())
		assert.Empty(t, h.ff.Calls())
	})

	t.Run("after a partial payment: refund due", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(2*time.Minute, pay("p1", "500"))
		out := h.expireAt(5 * time.Minute)
		res := h.run()
		assertResult(t, result(models.OrderCancelled, models.PaymentRefundDue, "500"), res)
		require.True(t, out.completed)
		assert.Equal(t, workflows.ExpireResult{Status: models.OrderCancelled, PaymentStatus: models.PaymentRefundDue}, out.result)
	})

	for _, c := range []struct {
		name   string
		at     time.Duration
		status string
	}{
		{"paid: refused, the order goes on", 3 * time.Minute, "paid"},
		{"shipped: refused", time.Minute + fulfilmentTime - time.Minute, "shipped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.payAt(time.Minute, pay("p1", "995.98"))
			out := h.expireAt(c.at)
			res := h.run()
			assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
			assert.Contains(t, out.requireRejected(t, models.CodeInvalidOrderState).Message(), c.status)
		})
	}

}
