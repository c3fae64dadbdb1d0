package workflows_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// TestOrderPaymentWait covers how the wait for payment ends: the deadline,
// operator cancels, and the payment tally's rules.
func TestOrderPaymentWait(t *testing.T) {
	type event struct {
		at     time.Duration
		pay    *workflows.PaymentSignal
		cancel *workflows.CancelSignal
	}
	payEv := func(at time.Duration, p workflows.PaymentSignal) event { return event{at: at, pay: &p} }
	inAsset := func(p workflows.PaymentSignal, asset string) workflows.PaymentSignal { p.Asset = asset; return p }
	cancel := &workflows.CancelSignal{Reason: "customer asked", RequestedBy: "ops@memocart"}

	tests := []struct {
		name       string
		events     []event
		want       workflows.OrderResult
		wantWrites []string
		wantEnd    time.Duration // workflow time at completion
		wantReason string
	}{
		{
			name:       "no payment: the deadline cancels, nothing to refund",
			want:       result(models.OrderCancelled, models.PaymentExpired, "0"),
			wantWrites: []string{"transition:cancelled/expired"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:   "partial then top-up pays",
			events: []event{payEv(5*time.Minute, pay("p1", "500")), payEv(10*time.Minute, pay("p2", "495.98"))},
			want:   result(models.OrderDelivered, models.PaymentConfirmed, "995.98"),
			wantWrites: concat([]string{
				"payment:p1", "transition:created/partial", "payment:p2", "transition:paid/confirmed",
			}, fulfilled),
			wantEnd: 10 * time.Minute,
		},
		{
			name:       "the same payment twice counts once",
			events:     []event{payEv(5*time.Minute, pay("p1", "497.99")), payEv(10*time.Minute, pay("p1", "497.99"))},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "497.99"),
			wantWrites: []string{"payment:p1", "transition:created/partial", "transition:cancelled/refund_due", "refunds"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:       "a payment in another asset is recorded, not credited, and due back",
			events:     []event{payEv(5*time.Minute, inAsset(pay("p1", "995.98"), "XLM"))},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "0"),
			wantWrites: []string{"payment:p1", "transition:cancelled/refund_due", "refunds"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name: "a stray asset next to the full amount makes it overpaid",
			events: []event{
				payEv(5*time.Minute, inAsset(pay("p1", "10"), "XLM")),
				payEv(6*time.Minute, pay("p2", "995.98")),
			},
			want: result(models.OrderDelivered, models.PaymentOverpaid, "995.98"),
			wantWrites: []string{
				"payment:p1", "payment:p2", "transition:paid/overpaid",
				"transition:ordered/overpaid", "transition:shipped/overpaid", "transition:delivered/overpaid", "refunds",
			},
			wantEnd: 6 * time.Minute,
		},
		{
			name:       "asset codes compare without case",
			events:     []event{payEv(5*time.Minute, inAsset(pay("p1", "995.98"), "usdc"))},
			want:       result(models.OrderDelivered, models.PaymentConfirmed, "995.98"),
			wantWrites: concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled),
			wantEnd:    5 * time.Minute,
		},
		{
			name:   "overpayment",
			events: []event{payEv(5*time.Minute, pay("p1", "1000"))},
			want:   result(models.OrderDelivered, models.PaymentOverpaid, "1000"),
			wantWrites: []string{
				"payment:p1", "transition:paid/overpaid",
				"transition:ordered/overpaid", "transition:shipped/overpaid", "transition:delivered/overpaid", "refunds",
			},
			wantEnd: 5 * time.Minute,
		},
		{
			name:       "underpaid at the deadline: cancelled, refund due",
			events:     []event{payEv(5*time.Minute, pay("p1", "500"))},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "500"),
			wantWrites: []string{"payment:p1", "transition:created/partial", "transition:cancelled/refund_due", "refunds"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:       "payments without an id or amount are ignored",
			events:     []event{payEv(5*time.Minute, pay("", "995.98")), payEv(6*time.Minute, pay("p0", "0"))},
			want:       result(models.OrderCancelled, models.PaymentExpired, "0"),
			wantWrites: []string{"transition:cancelled/expired"},
			wantEnd:    deadline,
			wantReason: "payment deadline passed",
		},
		{
			name:       "operator cancel before payment",
			events:     []event{{at: 5 * time.Minute, cancel: cancel}},
			want:       result(models.OrderCancelled, models.PaymentCancelled, "0"),
			wantWrites: []string{"transition:cancelled/cancelled"},
			wantEnd:    5 * time.Minute,
			wantReason: "cancelled by ops@memocart: customer asked",
		},
		{
			name:       "operator cancel after a partial payment: refund due",
			events:     []event{payEv(5*time.Minute, pay("p1", "500")), {at: 6 * time.Minute, cancel: cancel}},
			want:       result(models.OrderCancelled, models.PaymentRefundDue, "500"),
			wantWrites: []string{"payment:p1", "transition:created/partial", "transition:cancelled/refund_due", "refunds"},
			wantEnd:    6 * time.Minute,
			wantReason: "cancelled by ops@memocart: customer asked",
		},
		{
			name: "a second cancel is ignored",
			events: []event{
				{at: 5 * time.Minute, cancel: cancel},
				{at: 5 * time.Minute, cancel: &workflows.CancelSignal{Reason: "again", RequestedBy: "someone else"}},
			},
			want:       result(models.OrderCancelled, models.PaymentCancelled, "0"),
			wantWrites: []string{"transition:cancelled/cancelled"},
			wantEnd:    5 * time.Minute,
			wantReason: "cancelled by ops@memocart: customer asked",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for _, ev := range tt.events {
				if ev.pay != nil {
					h.payAt(ev.at, *ev.pay)
				}
				if ev.cancel != nil {
					h.cancelAt(ev.at, *ev.cancel)
				}
			}

			res := h.run()

			assertResult(t, tt.want, res)
			transitions, _, writes := h.store.snapshot()
			assert.Equal(t, tt.wantWrites, writes)
			end := tt.wantEnd
			if tt.want.Status == models.OrderDelivered {
				end += fulfilmentTime
			}
			assert.Equal(t, t0.Add(end), h.env.Now().UTC(), "completion time")
			last := transitions[len(transitions)-1]
			assert.Equal(t, tt.wantReason, last.Reason)
			if tt.want.Status == models.OrderCancelled {
				assert.Empty(t, h.ff.Calls(), "no fulfilment for a cancelled order")
				assert.Equal(t, t0.Add(tt.wantEnd), last.At, "cancelled at the workflow time it was decided")
			}
		})
	}
}

// TestOrderDeadlineAlreadyPassed starts a run after its deadline (a late
// start, a retried start): it closes at once, but a payment delivered with
// the start (signal-with-start) still counts.
func TestOrderDeadlineAlreadyPassed(t *testing.T) {
	tests := []struct {
		name       string
		withStart  *workflows.PaymentSignal
		want       workflows.OrderResult
		wantWrites []string
	}{
		{
			name:       "nothing received",
			want:       result(models.OrderCancelled, models.PaymentExpired, "0"),
			wantWrites: []string{"transition:cancelled/expired"},
		},
		{
			name:       "paid with the start",
			withStart:  &workflows.PaymentSignal{PaymentID: "p1", Asset: "USDC", Amount: decimal.RequireFromString("995.98")},
			want:       result(models.OrderDelivered, models.PaymentConfirmed, "995.98"),
			wantWrites: concat([]string{"payment:p1", "transition:paid/confirmed"}, fulfilled),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.in.PaymentDeadline = t0.Add(-time.Minute)
			if tt.withStart != nil {
				// A zero delay delivers the signal in the first workflow task.
				h.payAt(0, *tt.withStart)
			}

			res := h.run()

			assertResult(t, tt.want, res)
			_, _, writes := h.store.snapshot()
			assert.Equal(t, tt.wantWrites, writes)
			end := t0
			if tt.want.Status == models.OrderDelivered {
				end = end.Add(fulfilmentTime)
			}
			assert.Equal(t, end, h.env.Now().UTC())
		})
	}
}

func TestOrderPaymentDuringFulfilmentIsOverpaid(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.ff.onCheck = func(n int) {
		if n == 3 {
			h.env.SignalWorkflow(workflows.SignalPaymentMatched, pay("p2", "1"))
		}
	}

	res := h.run()

	assertResult(t, result(models.OrderDelivered, models.PaymentOverpaid, "996.98"), res)
	transitions, payments, writes := h.store.snapshot()
	assert.Contains(t, writes, "payment:p2")
	assert.Len(t, payments, 2)
	last := transitions[len(transitions)-1]
	assert.Equal(t, models.OrderDelivered, last.Status)
	assert.Equal(t, models.PaymentOverpaid, last.PaymentStatus)
	assert.True(t, last.AmountReceived.Equal(decimal.RequireFromString("996.98")))
}

// TestOrderPaymentAfterCancelIsRecorded sends a payment just as the order
// is closed: the workflow must take it in before returning, record it and
// mark the money as due back.
func TestOrderPaymentAfterCancelIsRecorded(t *testing.T) {
	h := newHarness(t)
	h.store.onTransition = func(tr models.Transition) {
		if tr.Status == models.OrderCancelled && tr.PaymentStatus == models.PaymentExpired {
			h.env.SignalWorkflow(workflows.SignalPaymentMatched, pay("late", "995.98"))
		}
	}

	res := h.run()

	assertResult(t, result(models.OrderCancelled, models.PaymentRefundDue, "995.98"), res)
	transitions, _, writes := h.store.snapshot()
	assert.Equal(t, []string{"transition:cancelled/expired", "payment:late", "transition:cancelled/refund_due", "refunds"}, writes)
	assert.Equal(t, transitions[0].At, transitions[1].At, "the cancelled step keeps its time")
	assert.Empty(t, h.ff.Calls())
}

// The payment deadline's timer ends when the wait does: a paid or
// cancelled order shows no pending "payment deadline" in the Temporal UI.
// An unpaid order's timer fires, ending it.
func TestOrderPaymentDeadlineTimerEndsWithTheWait(t *testing.T) {
	for _, tt := range []struct {
		name          string
		setup         func(h *harness)
		wantCancelled bool
	}{
		{name: "paid", setup: func(h *harness) { h.payAt(5*time.Minute, pay("p1", "995.98")) }, wantCancelled: true},
		{name: "cancelled", setup: func(h *harness) { h.cancelAt(5*time.Minute, workflows.CancelSignal{Reason: "asked"}) }, wantCancelled: true},
		{name: "deadline passed", setup: func(*harness) {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.setup(h)
			var deadlineTimer string
			fired, cancelled := map[string]bool{}, map[string]bool{}
			h.env.SetOnTimerScheduledListener(func(id string, d time.Duration) {
				if deadlineTimer == "" {
					deadlineTimer = id // the first timer a run starts
					assert.Equal(t, deadline, d)
				}
			})
			h.env.SetOnTimerFiredListener(func(id string) { fired[id] = true })
			h.env.SetOnTimerCanceledListener(func(id string) { cancelled[id] = true })
			h.run()

			require.NotEmpty(t, deadlineTimer)
			assert.Equal(t, tt.wantCancelled, cancelled[deadlineTimer], "cancelled")
			assert.Equal(t, !tt.wantCancelled, fired[deadlineTimer], "fired")
		})
	}
}
