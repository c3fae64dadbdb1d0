package models

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// owed is what a test expects of one refund: its key, reason, amount,
// asset and payments.
type owed struct {
	key      string
	reason   RefundReason
	amount   string
	asset    string
	payments []string
}

func credited(id, amount string) OrderPayment {
	return OrderPayment{ID: id, Asset: "USDC", Amount: dec(amount), Outcome: DispositionCredited}
}

// Every owed-money path of today produces the right refund, and nothing
// else does.
func TestRefundsOwed(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	order := func(status OrderStatus, ps PaymentStatus, received string, payments ...OrderPayment) Order {
		return Order{
			ID: "ord_1", Status: status, PaymentStatus: ps, PaymentAsset: "USDC",
			PaymentAmount: dec("100"), AmountReceived: dec(received), Payments: payments,
		}
	}
	refunded := now.Add(-time.Hour)
	tests := []struct {
		name     string
		order    Order
		existing []Refund
		want     []owed
	}{
		{
			name:  "paid, purchase failed: everything credited",
			order: order(OrderFailed, PaymentRefundDue, "100", credited("p1", "60"), credited("p2", "40")),
			want:  []owed{{"order:ord_1:1", RefundOrderFailed, "100", "USDC", []string{"p1", "p2"}}},
		},
		{
			name: "underpaid, expired: everything credited",
			order: func() Order {
				o := order(OrderCancelled, PaymentRefundDue, "60", credited("p1", "60"))
				o.Cancellation = CancellationPaymentWindowExpired
				return o
			}(),
			want: []owed{{"order:ord_1:1", RefundOrderExpired, "60", "USDC", []string{"p1"}}},
		},
		{
			name: "underpaid, cancelled by the client: everything credited",
			order: func() Order {
				o := order(OrderCancelled, PaymentRefundDue, "60.5000001", credited("p1", "60.5000001"))
				o.Cancellation = CancellationRequestedByCustomer
				return o
			}(),
			want: []owed{{"order:ord_1:1", RefundOrderCancelled, "60.5000001", "USDC", []string{"p1"}}},
		},
		{
			name: "underpaid, cancelled before reasons existed: read from the status reason",
			order: func() Order {
				o := order(OrderCancelled, PaymentRefundDue, "10", credited("p1", "10"))
				o.StatusReason = "payment deadline passed"
				return o
			}(),
			want: []owed{{"order:ord_1:1", RefundOrderExpired, "10", "USDC", []string{"p1"}}},
		},
		{
			name:  "cancelled with nothing received owes nothing",
			order: order(OrderCancelled, PaymentCancelled, "0"),
		},
		{
			name:  "overpaid: the excess, from the payments credited beyond the amount due",
			order: order(OrderPaid, PaymentOverpaid, "130", credited("p1", "90"), credited("p2", "15"), credited("p3", "25")),
			want:  []owed{{"order:ord_1:1", RefundOverpaid, "30", "USDC", []string{"p2", "p3"}}},
		},
		{
			name:  "overpaid and delivered: still the excess",
			order: order(OrderDelivered, PaymentOverpaid, "100.0000001", credited("p1", "100.0000001")),
			want:  []owed{{"order:ord_1:1", RefundOverpaid, "0.0000001", "USDC", []string{"p1"}}},
		},
		{
			name:  "paid exactly owes nothing",
			order: order(OrderShipped, PaymentConfirmed, "100", credited("p1", "100")),
		},
		{
			name:  "overpaid but not yet moved to paid: nothing until it is",
			order: order(OrderCreated, PaymentOverpaid, "120", credited("p1", "120")),
		},
		{
			name:  "waiting for payment, partly paid: nothing yet",
			order: order(OrderCreated, PaymentPartial, "50", credited("p1", "50")),
		},
		{
			name: "a late payment: that payment",
			order: order(OrderCancelled, PaymentRefundDue, "0",
				OrderPayment{ID: "late1", Asset: "USDC", Amount: dec("100"), Outcome: DispositionLate}),
			want: []owed{{"payment:late1", RefundLatePayment, "100", "USDC", []string{"late1"}}},
		},
		{
			name: "a wrong-asset payment: that payment, in its asset",
			order: order(OrderDelivered, PaymentRefundDue, "100", credited("p1", "100"),
				OrderPayment{ID: "xlm1", Asset: "XLM", Amount: dec("250.1234567"), Outcome: DispositionWrongAsset},
				OrderPayment{ID: "fake1", Asset: "USDC:GBADISSUER", Amount: dec("3"), Outcome: DispositionWrongAsset}),
			want: []owed{
				{"payment:xlm1", RefundWrongAsset, "250.1234567", "XLM", []string{"xlm1"}},
				{"payment:fake1", RefundWrongAsset, "3", "USDC:GBADISSUER", []string{"fake1"}},
			},
		},
		{
			name: "failed with a wrong-asset payment: two refunds, one per asset",
			order: order(OrderFailed, PaymentRefundDue, "100", credited("p1", "100"),
				OrderPayment{ID: "xlm1", Asset: "XLM", Amount: dec("7"), Outcome: DispositionWrongAsset}),
			want: []owed{
				{"order:ord_1:1", RefundOrderFailed, "100", "USDC", []string{"p1"}},
				{"payment:xlm1", RefundWrongAsset, "7", "XLM", []string{"xlm1"}},
			},
		},
		{
			name: "a payment still being credited owes nothing yet",
			order: order(OrderCancelled, PaymentCancelled, "0",
				OrderPayment{ID: "p9", Asset: "USDC", Amount: dec("5"), Outcome: DispositionProcessing}),
		},
		{
			name: "refunded by hand (mark-refunded) owes nothing",
			order: func() Order {
				o := order(OrderFailed, PaymentRefunded, "100", credited("p1", "100"),
					OrderPayment{ID: "late1", Asset: "USDC", Amount: dec("1"), Outcome: DispositionRefunded, RefundedAt: &refunded})
				o.RefundedAt = &refunded
				return o
			}(),
		},
		{
			name: "payments not loaded: the order's own money is still owed in full",
			order: func() Order {
				o := order(OrderFailed, PaymentRefundDue, "100")
				return o
			}(),
			want: []owed{{"order:ord_1:1", RefundOrderFailed, "100", "USDC", nil}},
		},
		{
			name:  "refunds already created (any status) are not created again",
			order: order(OrderFailed, PaymentRefundDue, "100", credited("p1", "100"), OrderPayment{ID: "late1", Asset: "USDC", Amount: dec("1"), Outcome: DispositionLate}),
			existing: []Refund{
				{Key: "order:ord_1:1", ID: RefundID("order:ord_1:1"), OrderID: "ord_1", Reason: RefundOrderFailed, Amount: dec("100"), Status: RefundFailed},
				{Key: "payment:late1", ID: RefundID("payment:late1"), OrderID: "ord_1", Reason: RefundLatePayment, Amount: dec("1"), Status: RefundCancelled},
			},
		},
		{
			name:  "more credited after an overpayment's refund: a second refund for the difference",
			order: order(OrderOrdered, PaymentOverpaid, "150", credited("p1", "110"), credited("p2", "40")),
			existing: []Refund{
				{Key: "order:ord_1:1", OrderID: "ord_1", Reason: RefundOverpaid, Amount: dec("10"), Status: RefundSent},
			},
			want: []owed{{"order:ord_1:2", RefundOverpaid, "40", "USDC", []string{"p2"}}},
		},
		{
			name:  "failed after an overpayment's refund: the rest",
			order: order(OrderFailed, PaymentRefundDue, "110", credited("p1", "110")),
			existing: []Refund{
				{Key: "order:ord_1:1", OrderID: "ord_1", Reason: RefundOverpaid, Amount: dec("10"), Status: RefundAwaitingDestination},
			},
			want: []owed{{"order:ord_1:2", RefundOrderFailed, "100", "USDC", []string{"p1"}}},
		},
		{
			name:  "another order's refunds cover nothing here",
			order: order(OrderFailed, PaymentRefundDue, "100", credited("p1", "100")),
			existing: []Refund{
				{Key: "order:ord_2:1", OrderID: "ord_2", Reason: RefundOrderFailed, Amount: dec("100"), Status: RefundSent},
			},
			want: []owed{{"order:ord_1:1", RefundOrderFailed, "100", "USDC", []string{"p1"}}},
		},
		{
			name: "a payment listed twice is refunded once",
			order: order(OrderCancelled, PaymentRefundDue, "0",
				OrderPayment{ID: "late1", Asset: "USDC", Amount: dec("2"), Outcome: DispositionLate},
				OrderPayment{ID: "late1", Asset: "USDC", Amount: dec("2"), Outcome: DispositionLate}),
			want: []owed{{"payment:late1", RefundLatePayment, "2", "USDC", []string{"late1"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RefundsOwed(tc.order, tc.existing, now)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				r := got[i]
				assert.Equal(t, w.key, r.Key)
				assert.Equal(t, RefundID(w.key), r.ID)
				assert.Equal(t, w.reason, r.Reason)
				assert.Truef(t, dec(w.amount).Equal(r.Amount), "amount %s, want %s", r.Amount, w.amount)
				assert.Equal(t, w.asset, r.Asset)
				assert.Equal(t, w.payments, r.PaymentIDs)
				assert.Equal(t, "ord_1", r.OrderID)
				assert.Equal(t, RefundAwaitingDestination, r.Status)
				assert.Equal(t, now, r.CreatedAt)
				assert.Nil(t, r.Destination)
			}
			// Created, they are owed no more: asking again creates nothing.
			again := RefundsOwed(tc.order, append(append([]Refund(nil), tc.existing...), got...), now.Add(time.Minute))
			assert.Empty(t, again)
			// And asking twice before creating names the same refunds.
			assert.Equal(t, got, RefundsOwed(tc.order, tc.existing, now))
		})
	}
}

func TestRefundOfUnmatchedPayment(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	p := Payment{ID: "stellar:pubnet:42", Asset: "XLM", Amount: dec("12.5")}
	r, err := RefundOfUnmatchedPayment(p, PaymentStateUnmatched, now)
	require.NoError(t, err)
	assert.Equal(t, "payment:stellar:pubnet:42", r.Key)
	assert.Equal(t, RefundID(r.Key), r.ID)
	assert.Empty(t, r.OrderID)
	assert.Equal(t, []string{p.ID}, r.PaymentIDs)
	assert.Equal(t, RefundUnmatchedPayment, r.Reason)
	assert.True(t, dec("12.5").Equal(r.Amount))
	assert.Equal(t, "XLM", r.Asset)
	assert.Equal(t, RefundAwaitingDestination, r.Status)
	assert.Equal(t, now, r.CreatedAt)

	for _, s := range []PaymentState{PaymentStateReceived, PaymentStateMatched, PaymentStateLate, PaymentStateRefundDue, PaymentStateRefunded} {
		_, err := RefundOfUnmatchedPayment(p, s, now)
		assert.Error(t, err, s)
	}
	matched := p
	matched.OrderID = "ord_1"
	_, err = RefundOfUnmatchedPayment(matched, PaymentStateUnmatched, now)
	assert.Error(t, err)
	zero := p
	zero.Amount = dec("0")
	_, err = RefundOfUnmatchedPayment(zero, PaymentStateUnmatched, now)
	assert.Error(t, err)
}

func TestRefundsSettled(t *testing.T) {
	with := func(ss ...RefundStatus) []Refund {
		var rs []Refund
		for _, s := range ss {
			rs = append(rs, Refund{Status: s})
		}
		return rs
	}
	assert.False(t, RefundsSettled(nil), "no refund has returned nothing")
	assert.True(t, RefundsSettled(with(RefundSent)))
	assert.True(t, RefundsSettled(with(RefundSent, RefundCancelled)))
	assert.True(t, RefundsSettled(with(RefundCancelled)))
	for _, open := range []RefundStatus{RefundAwaitingDestination, RefundAwaitingApproval, RefundSending, RefundFailed} {
		assert.False(t, RefundsSettled(with(RefundSent, open)), open)
	}
}

// payment_status becomes refunded only when every refund of the order is
// sent or cancelled and nothing more is owed.
func TestPaymentStatusAfterRefunds(t *testing.T) {
	failed := Order{ID: "ord_1", Status: OrderFailed, PaymentStatus: PaymentRefundDue, PaymentAsset: "USDC",
		PaymentAmount: dec("100"), AmountReceived: dec("100"), Payments: []OrderPayment{credited("p1", "100")}}
	overpaid := Order{ID: "ord_1", Status: OrderDelivered, PaymentStatus: PaymentOverpaid, PaymentAsset: "USDC",
		PaymentAmount: dec("100"), AmountReceived: dec("120"), Payments: []OrderPayment{credited("p1", "120")}}
	stray := Order{ID: "ord_1", Status: OrderDelivered, PaymentStatus: PaymentRefundDue, PaymentAsset: "USDC",
		PaymentAmount: dec("100"), AmountReceived: dec("100"), Payments: []OrderPayment{credited("p1", "100"),
			{ID: "x1", Asset: "XLM", Amount: dec("3"), Outcome: DispositionWrongAsset}}}
	ref := func(o Order, s RefundStatus) []Refund {
		rs := RefundsOwed(o, nil, time.Time{})
		for i := range rs {
			rs[i].Status = s
		}
		return rs
	}
	tests := []struct {
		name    string
		order   Order
		refunds []Refund
		want    PaymentStatus
	}{
		{"failed, refund sent", failed, ref(failed, RefundSent), PaymentRefunded},
		{"failed, refund cancelled", failed, ref(failed, RefundCancelled), PaymentRefunded},
		{"failed, refund sending", failed, ref(failed, RefundSending), PaymentRefundDue},
		{"failed, refund failed", failed, ref(failed, RefundFailed), PaymentRefundDue},
		{"failed, no refund yet", failed, nil, PaymentRefundDue},
		{"failed, a settled refund of part only", failed, []Refund{{Key: "order:ord_1:1", OrderID: "ord_1", Reason: RefundOrderFailed, Amount: dec("40"), Status: RefundSent}}, PaymentRefundDue},
		{"overpaid, excess sent: the order kept the amount due", overpaid, ref(overpaid, RefundSent), PaymentConfirmed},
		{"overpaid, excess awaiting destination", overpaid, ref(overpaid, RefundAwaitingDestination), PaymentOverpaid},
		{"delivered with a stray payment, returned", stray, ref(stray, RefundSent), PaymentConfirmed},
		{"confirmed stays confirmed", Order{Status: OrderDelivered, PaymentStatus: PaymentConfirmed}, []Refund{{Status: RefundSent}}, PaymentConfirmed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, PaymentStatusAfterRefunds(tc.order, tc.refunds))
		})
	}
}
