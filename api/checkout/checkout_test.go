package checkout_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api/checkout"
	"github.com/memocart/memocart/models"
)

var d = decimal.RequireFromString

// awaiting is an order awaiting payment whose workflow runs.
func awaiting() models.Order {
	started := t0.Add(-time.Minute)
	return models.Order{
		ID: "ord_1", Number: "1234-5678-903", AccountID: "acc_1", Mode: models.ModeTest,
		Status: models.OrderCreated, PaymentStatus: models.PaymentPending,
		PaymentAsset: "USDC", PaymentAmount: d("12.50"), AmountReceived: decimal.Zero,
		WorkflowStartedAt: &started,
	}
}

func newOrders(t *testing.T, st *fakeOrders, wf *fakeWorkflows) *checkout.Orders {
	t.Helper()
	s, err := checkout.NewOrders(checkout.Config{}, st, wf, &fakeEvents{}, nil, clock, nil)
	require.NoError(t, err)
	return s
}

func newHandRefunds(t *testing.T, st *fakeOrders, wf *fakeWorkflows) *checkout.HandRefunds {
	t.Helper()
	s, err := checkout.NewHandRefunds(st, wf, clock)
	require.NoError(t, err)
	return s
}

// TestUseCasesRefuseMissingParts: a use case built without a part it needs
// is refused when it is built, naming the part, not when it is used.
func TestUseCasesRefuseMissingParts(t *testing.T) {
	_, err := checkout.NewOrders(checkout.Config{}, newFakeOrders(), nil, nil, nil, clock, nil)
	assert.ErrorContains(t, err, "Orders needs events, workflows")
	_, err = checkout.NewRefunds(checkout.Config{}, nil, nil, &closedRuns{}, &closedRuns{}, clock, nil)
	assert.ErrorContains(t, err, "Refunds needs orders, store")
	_, err = checkout.NewHandRefunds(nil, nil, clock)
	assert.ErrorContains(t, err, "HandRefunds needs store, workflows")
	_, err = checkout.NewCarts(checkout.CartsConfig{}, nil, nil, clock)
	assert.ErrorContains(t, err, "Carts needs catalogs, store")
	_, err = checkout.NewTestHelpers(nil, nil, nil, clock)
	assert.ErrorContains(t, err, "TestHelpers needs orders, payments, workflows")
}

func cancelOf(o models.Order, note string) checkout.CancelRequest {
	return checkout.CancelRequest{AccountID: o.AccountID, Mode: o.Mode, Ref: o.Number, Note: note}
}

func TestCancelOrder(t *testing.T) {
	t.Run("awaiting payment: cancelled through the workflow", func(t *testing.T) {
		o := awaiting()
		st := newFakeOrders(o)
		wf := &fakeWorkflows{store: st}
		got, err := newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, "changed my mind"))
		require.NoError(t, err)
		assert.Equal(t, models.OrderCancelled, got.Status, "the order as read back")
		assert.Equal(t, []string{"cancel:ord_1/changed my mind"}, wf.calls)
		assert.Empty(t, st.writes(), "the workflow writes the cancellation, not the service")
	})

	// A refusal the order as recorded shows is answered without asking the
	// workflow and without writing anything.
	for _, tc := range []struct {
		name   string
		edit   func(o *models.Order)
		status models.OrderStatus // the refusal names it
	}{
		{"paid", func(o *models.Order) {
			o.Status, o.PaymentStatus, o.AmountReceived = models.OrderPaid, models.PaymentConfirmed, d("12.50")
		}, models.OrderPaid},
		{"amount due in, not moved on yet", func(o *models.Order) {
			o.PaymentStatus, o.AmountReceived = models.PaymentConfirmed, d("12.50")
		}, models.OrderPaid},
		{"shipped", func(o *models.Order) { o.Status, o.AmountReceived = models.OrderShipped, d("12.50") }, models.OrderShipped},
		{"failed", func(o *models.Order) { o.Status, o.PaymentStatus = models.OrderFailed, models.PaymentRefundDue }, models.OrderFailed},
		{"not started and paid", func(o *models.Order) {
			o.Status, o.AmountReceived, o.WorkflowStartedAt = models.OrderPaid, d("12.50"), nil
		}, models.OrderPaid},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			o := awaiting()
			tc.edit(&o)
			st := newFakeOrders(o)
			wf := &fakeWorkflows{store: st}
			_, err := newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, ""))
			assert.Equal(t, models.NotCancellable(tc.status), err)
			assert.Empty(t, wf.calls, "the workflow is not asked")
			assert.Empty(t, st.writes(), "nothing is written")
		})
	}

	t.Run("cancelled already: answered as it is", func(t *testing.T) {
		o := awaiting()
		o.Status, o.PaymentStatus, o.Cancellation = models.OrderCancelled, models.PaymentExpired, models.CancellationPaymentWindowExpired
		st := newFakeOrders(o)
		wf := &fakeWorkflows{store: st}
		got, err := newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, ""))
		require.NoError(t, err)
		assert.Equal(t, o, got)
		assert.Empty(t, wf.calls)
	})

	t.Run("workflow not started: started and marked, then cancelled", func(t *testing.T) {
		o := awaiting()
		o.WorkflowStartedAt = nil
		st := newFakeOrders(o)
		wf := &fakeWorkflows{store: st}
		got, err := newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, ""))
		require.NoError(t, err)
		assert.Equal(t, models.OrderCancelled, got.Status)
		assert.Equal(t, []string{"start:ord_1", "cancel:ord_1/"}, wf.calls, "no payment can slip past an unstarted workflow")
		assert.Equal(t, []string{"ord_1"}, st.marked)
		assert.Equal(t, t0, st.at)
	})

	t.Run("workflow not started and cannot be: not asked to cancel", func(t *testing.T) {
		o := awaiting()
		o.WorkflowStartedAt = nil
		st := newFakeOrders(o)
		down := errors.New("temporal: connection refused")
		wf := &fakeWorkflows{store: st, startErr: map[string]error{"ord_1": down}}
		_, err := newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, ""))
		assert.ErrorIs(t, err, down)
		assert.Equal(t, []string{"start:ord_1"}, wf.calls)
		assert.Empty(t, st.marked)
	})

	t.Run("the workflow refuses: paid meanwhile", func(t *testing.T) {
		o := awaiting()
		st := newFakeOrders(o)
		refusal := models.NotCancellable(models.OrderPaid)
		wf := &fakeWorkflows{store: st, cancelErr: refusal}
		_, err := newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, ""))
		assert.Equal(t, refusal, err)
	})

	t.Run("the workflow had finished: the order as it ended", func(t *testing.T) {
		o := awaiting()
		st := newFakeOrders(o)
		wf := &fakeWorkflows{store: st, cancelErr: models.ErrOrderClosed}
		// The deadline cancelled it between the read and the cancel.
		expired := o
		expired.Status, expired.PaymentStatus, expired.Cancellation = models.OrderCancelled, models.PaymentExpired, models.CancellationPaymentWindowExpired
		st.orders[o.ID] = expired
		got, err := newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, ""))
		require.NoError(t, err)
		assert.Equal(t, expired, got)

		// Finished otherwise (terminated): nothing can cancel it any more.
		st.orders[o.ID] = o
		_, err = newOrders(t, st, wf).CancelOrder(t.Context(), cancelOf(o, ""))
		assert.Equal(t, models.NotCancellable(models.OrderCreated), err)
	})

	t.Run("another account's order does not exist", func(t *testing.T) {
		o := awaiting()
		st := newFakeOrders(o)
		wf := &fakeWorkflows{store: st}
		_, err := newOrders(t, st, wf).CancelOrder(t.Context(), checkout.CancelRequest{AccountID: "acc_2", Mode: o.Mode, Ref: o.ID})
		assert.ErrorIs(t, err, models.ErrOrderNotFound)
		assert.Empty(t, wf.calls)
	})
}

// The reconciler starts every order awaiting its workflow, past one that
// keeps failing, and marks only those started.
func TestReconcileOrders(t *testing.T) {
	a, b, c := awaiting(), awaiting(), awaiting()
	a.ID, b.ID, c.ID = "ord_a", "ord_b", "ord_c"
	st := newFakeOrders()
	st.awaiting = []models.Order{a, b, c}
	down := errors.New("temporal: connection refused")
	wf := &fakeWorkflows{store: st, startErr: map[string]error{"ord_b": down}}
	n, err := newOrders(t, st, wf).ReconcileOrders(t.Context(), 3*time.Minute)
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, err, down)
	assert.ErrorContains(t, err, "order ord_b")
	assert.Equal(t, t0.Add(-3*time.Minute), st.cutoff, "only orders older than the grace")
	assert.Equal(t, []string{"start:ord_a", "start:ord_b", "start:ord_c"}, wf.calls)
	assert.Equal(t, []string{"ord_a", "ord_c"}, st.marked)
}

// ended is a cancelled order that credited a partial payment: its workflow
// waits for the refund.
func ended() models.Order {
	o := awaiting()
	o.Status, o.PaymentStatus, o.AmountReceived = models.OrderCancelled, models.PaymentRefundDue, d("5")
	return o
}

func refundOf(o models.Order) checkout.OrderRefundRequest {
	return checkout.OrderRefundRequest{Number: o.Number, TxHash: "tx1", RecordedBy: "ops"}
}

func TestRecordOrderRefund(t *testing.T) {
	t.Run("the workflow waits: it records the refund", func(t *testing.T) {
		o := ended()
		st := newFakeOrders(o)
		wf := &fakeWorkflows{store: st}
		r, err := newHandRefunds(t, st, wf).RecordOrderRefund(t.Context(), refundOf(o))
		require.NoError(t, err)
		assert.Equal(t, checkout.OrderRefund{Number: o.Number, TxHash: "tx1", ThroughWorkflow: true, Amount: d("5"), Asset: "USDC"}, r)
		assert.Equal(t, []string{"refund:ord_1/tx1/5/ops"}, wf.calls, "for the amount the order received")
		assert.Empty(t, st.writes(), "the workflow writes it, not the service")
	})
	t.Run("the workflow closed meanwhile: the store records it", func(t *testing.T) {
		o := ended()
		st := newFakeOrders(o)
		wf := &fakeWorkflows{store: st, refundErr: models.ErrOrderClosed}
		r, err := newHandRefunds(t, st, wf).RecordOrderRefund(t.Context(), refundOf(o))
		require.NoError(t, err)
		assert.Equal(t, checkout.OrderRefund{Number: o.Number, TxHash: "tx1"}, r)
		assert.Len(t, wf.calls, 1)
		assert.Equal(t, []string{o.Number + "/tx1"}, st.refunded)
		assert.Equal(t, t0, st.at)
	})
	t.Run("the workflow refuses: nothing written", func(t *testing.T) {
		o := ended()
		st := newFakeOrders(o)
		refusal := models.Errorf(models.CodeInvalidRequest, "Order %s has received 7 USDC, not 5", o.Number)
		wf := &fakeWorkflows{store: st, refundErr: refusal}
		_, err := newHandRefunds(t, st, wf).RecordOrderRefund(t.Context(), refundOf(o))
		assert.ErrorIs(t, err, checkout.ErrRefundNotRecorded)
		assert.ErrorIs(t, err, refusal)
		assert.Empty(t, st.writes())
	})
	t.Run("nothing waits: the store records it", func(t *testing.T) {
		for name, edit := range map[string]func(o *models.Order){
			"an overpayment's excess": func(o *models.Order) {
				o.Status, o.PaymentStatus, o.AmountReceived = models.OrderDelivered, models.PaymentOverpaid, d("13")
			},
			"refund due for a stray payment alone": func(o *models.Order) { o.AmountReceived = decimal.Zero },
		} {
			t.Run(name, func(t *testing.T) {
				o := ended()
				edit(&o)
				st := newFakeOrders(o)
				wf := &fakeWorkflows{store: st}
				r, err := newHandRefunds(t, st, wf).RecordOrderRefund(t.Context(), refundOf(o))
				require.NoError(t, err)
				assert.False(t, r.ThroughWorkflow)
				assert.Empty(t, wf.calls, "the workflow is not asked")
				assert.Equal(t, []string{o.Number + "/tx1"}, st.refunded)
			})
		}
	})
	t.Run("no such order", func(t *testing.T) {
		st := newFakeOrders()
		wf := &fakeWorkflows{store: st}
		_, err := newHandRefunds(t, st, wf).RecordOrderRefund(t.Context(), refundOf(ended()))
		assert.ErrorIs(t, err, models.ErrOrderNotFound)
		assert.Empty(t, wf.calls)
		assert.Empty(t, st.writes())
	})
}

func TestRecordPaymentRefund(t *testing.T) {
	st := newFakeOrders()
	wf := &fakeWorkflows{store: st}
	require.NoError(t, newHandRefunds(t, st, wf).RecordPaymentRefund(t.Context(), "pay_1", "tx1"))
	assert.Equal(t, []string{"pay_1/tx1"}, st.refunded)
	assert.Equal(t, t0, st.at, "recorded at the service's clock")
	assert.Empty(t, wf.calls, "a payment refunded alone is the database's")
}
