package workflows_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

func TestOrderCancelAfterPaidIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.ff.onPlace = func(int) {
		h.env.SignalWorkflow(workflows.SignalCancel, workflows.CancelSignal{Reason: "too late", RequestedBy: "ops"})
	}

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
	_, _, writes := h.store.snapshot()
	assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes)
}

// updateOutcome is what became of an update sent to a test workflow
// (updateAt): err is its rejection's or its failure's.
type updateOutcome[R any] struct {
	accepted, rejected, completed bool
	rejectErr, err                error
	result                        R
	completedAt                   time.Time
}

type cancelOutcome = updateOutcome[workflows.CancelResult]

// updateAt sends the update name with arg to env's workflow after a delay
// and records what became of it.
func updateAt[R any](t *testing.T, env *testsuite.TestWorkflowEnvironment, after time.Duration, name, id string, arg any) *updateOutcome[R] {
	out := &updateOutcome[R]{}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
			OnAccept: func() { out.accepted = true },
			OnReject: func(err error) { out.rejected, out.rejectErr, out.err = true, err, err },
			OnComplete: func(v any, err error) {
				out.completed, out.err, out.completedAt = true, err, env.Now()
				switch r := v.(type) {
				case R:
					out.result = r
				case converter.EncodedValue:
					if r != nil && err == nil {
						require.NoError(t, r.Get(&out.result))
					}
				case nil:
				default:
					t.Errorf("update result of type %T", v)
				}
			},
		}, arg)
	}, after)
	return out
}

// requireAppError requires err to be an application error of type code
// and returns it, for its message.
func requireAppError(t *testing.T, err error, code models.Code) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, string(code), appErr.Type())
	return appErr
}

// requireRejected requires the update to have been refused before it
// entered the history (by its validator, so never accepted), with an
// application error of type code, and returns that error.
func (o *updateOutcome[R]) requireRejected(t *testing.T, code models.Code) *temporal.ApplicationError {
	t.Helper()
	require.True(t, o.rejected, "%+v", o)
	assert.False(t, o.accepted)
	return requireAppError(t, o.rejectErr, code)
}

// cancelByCustomerAt sends the API's cancel update after a delay.
func (h *harness) cancelByCustomerAt(after time.Duration, note string) *cancelOutcome {
	return updateAt[workflows.CancelResult](h.t, h.env, after, workflows.UpdateCancel, fmt.Sprintf("cancel-%d", len(note)+int(after)), workflows.CancelRequest{Note: note})
}

// TestOrderCancelByCustomer: the API's cancel update cancels an order
// awaiting payment and answers once the cancellation is written; a paid
// order refuses it before it enters the history; cancellations carry the
// clients' reason.
func TestOrderCancelByCustomer(t *testing.T) {
	t.Run("before payment", func(t *testing.T) {
		h := newHarness(t)
		out := h.cancelByCustomerAt(5*time.Minute, "changed my mind")
		res := h.run()

		assertResult(t, result(models.OrderCancelled, models.PaymentCancelled, "0"), res)
		require.True(t, out.accepted && out.completed, "accepted and completed: %+v", out)
		require.NoError(t, out.err)
		assert.Equal(t, workflows.CancelResult{Status: models.OrderCancelled, PaymentStatus: models.PaymentCancelled,
			Cancellation: models.CancellationRequestedByCustomer}, out.result)
		transitions, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
		assert.Equal(t, models.CancellationRequestedByCustomer, transitions[0].Cancellation)
		assert.Equal(t, "cancelled by the customer (API): changed my mind", transitions[0].Reason)
		assert.Equal(t, t0.Add(5*time.Minute), transitions[0].At)
		assert.Equal(t, t0.Add(5*time.Minute), out.completedAt.UTC(), "answered at once, not at the deadline")
		assert.Empty(t, h.ff.Calls())
		assert.Equal(t, models.CancellationRequestedByCustomer, h.query().Cancellation)
	})

	t.Run("answered only once the cancellation is written", func(t *testing.T) {
		h := newHarness(t)
		// Three local attempts fail (0.2 s and 0.4 s apart), then the
		// regular activity is retried twice (1 s, 2 s) before it writes.
		h.store.failTransitions = 5
		out := h.cancelByCustomerAt(5*time.Minute, "")
		h.run()
		require.True(t, out.completed)
		require.NoError(t, out.err)
		assert.Equal(t, models.OrderCancelled, out.result.Status)
		assert.True(t, out.completedAt.After(t0.Add(5*time.Minute+3*time.Second)), "answered at %s, after the retried write", out.completedAt)
		_, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
	})

	t.Run("after a partial payment: refund due", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(2*time.Minute, pay("p1", "500"))
		out := h.cancelByCustomerAt(5*time.Minute, "")
		res := h.run()
		assertResult(t, result(models.OrderCancelled, models.PaymentRefundDue, "500"), res)
		require.True(t, out.completed)
		assert.Equal(t, workflows.CancelResult{Status: models.OrderCancelled, PaymentStatus: models.PaymentRefundDue,
			Cancellation: models.CancellationRequestedByCustomer}, out.result)
		transitions, _, _ := h.store.snapshot()
		last := transitions[len(transitions)-1]
		assert.Equal(t, models.CancellationRequestedByCustomer, last.Cancellation)
		assert.Equal(t, "cancelled by the customer (API)", last.Reason)
	})

	t.Run("twice: both answered, one cancellation", func(t *testing.T) {
		h := newHarness(t)
		first := h.cancelByCustomerAt(5*time.Minute, "first")
		second := h.cancelByCustomerAt(5*time.Minute, "second, same instant")
		h.run()
		for _, out := range []*cancelOutcome{first, second} {
			require.True(t, out.accepted && out.completed, "%+v", out)
			assert.Equal(t, models.CancellationRequestedByCustomer, out.result.Cancellation)
		}
		transitions, _, writes := h.store.snapshot()
		assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
		assert.Equal(t, "cancelled by the customer (API): first", transitions[0].Reason)
	})

	t.Run("an operator's cancel first keeps its reason", func(t *testing.T) {
		h := newHarness(t)
		h.cancelAt(5*time.Minute, workflows.CancelSignal{Reason: "fraud", RequestedBy: "ops"})
		out := h.cancelByCustomerAt(5*time.Minute, "")
		h.run()
		require.True(t, out.accepted && out.completed, "%+v", out)
		assert.Equal(t, models.CancellationByOperator, out.result.Cancellation)
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationByOperator, transitions[0].Cancellation)
	})

	t.Run("paid: refused, the order goes on", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(2*time.Minute, pay("p1", "995.98"))
		out := h.cancelByCustomerAt(3*time.Minute, "too late")
		res := h.run()
		assertResult(t, result(models.OrderDelivered, models.PaymentConfirmed, "995.98"), res)
		assert.Contains(t, out.requireRejected(t, models.CodeOrderNotCancellable).Message(), "paid")
		_, _, writes := h.store.snapshot()
		assert.Equal(t, concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled), writes)
	})

	t.Run("shipped: refused", func(t *testing.T) {
		h := newHarness(t)
		h.payAt(time.Minute, pay("p1", "995.98"))
		out := h.cancelByCustomerAt(time.Minute+fulfilmentTime-time.Minute, "")
		h.run()
		assert.Contains(t, out.requireRejected(t, models.CodeOrderNotCancellable).Message(), "shipped")
	})
}

// The reasons clients read for the other ways an order is cancelled.
func TestOrderCancellationReasons(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		h := newHarness(t)
		h.run()
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationPaymentWindowExpired, transitions[0].Cancellation)
		assert.Equal(t, models.CancellationPaymentWindowExpired, h.query().Cancellation)
	})
	t.Run("operator signal", func(t *testing.T) {
		h := newHarness(t)
		h.cancelAt(time.Minute, workflows.CancelSignal{Reason: "fraud", RequestedBy: "ops"})
		h.run()
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationByOperator, transitions[0].Cancellation)
	})
	t.Run("operator relaying the customer", func(t *testing.T) {
		h := newHarness(t)
		h.cancelAt(time.Minute, workflows.CancelSignal{Reason: "asked by mail", RequestedBy: "ops", Cancellation: models.CancellationRequestedByCustomer})
		h.run()
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationRequestedByCustomer, transitions[0].Cancellation)
	})
	t.Run("workflow cancelled", func(t *testing.T) {
		h := newHarness(t)
		h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
		h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)
		require.True(t, h.env.IsWorkflowCompleted())
		transitions, _, _ := h.store.snapshot()
		assert.Equal(t, models.CancellationByOperator, transitions[0].Cancellation)
	})
}

// A customer's cancel in the same instant the workflow itself is cancelled
// (from the Temporal UI) is answered with the order as closed, not an
// error.
func TestOrderCancelByCustomerWhileWorkflowCancelled(t *testing.T) {
	h := newHarness(t)
	h.store.failTransitions = 2 // the write takes a few seconds
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
	out := h.cancelByCustomerAt(5*time.Minute, "")
	h.env.ExecuteWorkflow(workflows.OrderWorkflowName, h.in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.True(t, out.completed, "%+v", out)
	require.NoError(t, out.err)
	assert.Equal(t, models.OrderCancelled, out.result.Status)
	_, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"transition:cancelled/cancelled"}, writes)
}
