package models

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func bookHash(c string) string { return strings.Repeat(c, 64) }

// balancedBooks are books in which every place money can be is non-zero
// in test-mode USDC, plus a wrong-asset payment owed back in XLM.
func balancedBooks() Books {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	d := decimal.RequireFromString
	order := func(id string, status OrderStatus, ps PaymentStatus, due, received string) Order {
		return Order{ID: id, Number: "n-" + id, Mode: ModeTest, Status: status, PaymentStatus: ps,
			PaymentAsset: "USDC", PaymentAmount: d(due), AmountReceived: d(received)}
	}
	pay := func(id, orderID string, state PaymentState, amount string) BookPayment {
		return BookPayment{ID: id, Mode: ModeTest, Asset: "USDC", Amount: d(amount), State: state,
			Signaled: state == PaymentStateMatched, OrderID: orderID}
	}
	refund := func(key, orderID string, reason RefundReason, amount, asset string, status RefundStatus, hash string, payments ...string) Refund {
		return Refund{ID: RefundID(key), Key: key, OrderID: orderID, Mode: ModeTest, PaymentIDs: payments, Reason: reason,
			Amount: d(amount), Asset: asset, Status: status, TransactionHash: hash}
	}

	o4 := order("o4", OrderFailed, PaymentRefunded, "4", "4")
	o4.RefundedAt, o4.RefundTx = &at, bookHash("b")
	o3 := order("o3", OrderCancelled, PaymentRefundDue, "9", "3")
	o3.Cancellation = CancellationPaymentWindowExpired

	p9 := pay("p9", "o1", PaymentStateRefunded, "7")
	p9.RefundedAt, p9.RefundTx = &at, bookHash("c")
	p10 := pay("p10", "o1", PaymentStateRefundDue, "20")
	p10.Asset = "XLM"
	p11 := pay("p11", "o1", PaymentStateRefunded, "1")
	p11.RefundedAt, p11.RefundTx = &at, bookHash("d")
	p13 := pay("p13", "", PaymentStateMatched, "0.25")
	p13.OrderID, p13.Signaled = "o6", false

	return Books{
		Orders: []Order{
			order("o1", OrderDelivered, PaymentConfirmed, "10", "12"), // overpaid by 2: refund sent
			order("o2", OrderFailed, PaymentRefunded, "5", "5"),       // refund cancelled
			o3, // expired underpaid: refund awaiting its destination
			o4, // refunded by hand
			order("o5", OrderFailed, PaymentRefundDue, "6", "6"), // waits for mark-refunded
			order("o6", OrderCreated, PaymentPartial, "9", "2"),  // waits for payment
		},
		Payments: []BookPayment{
			pay("p1", "o1", PaymentStateMatched, "10"),
			pay("p2", "o1", PaymentStateMatched, "2"),
			pay("p3", "o2", PaymentStateMatched, "5"),
			pay("p4", "o3", PaymentStateMatched, "3"),
			pay("p5", "o4", PaymentStateMatched, "4"),
			pay("p6", "o5", PaymentStateMatched, "6"),
			pay("p7", "", PaymentStateUnmatched, "1"),
			pay("p8", "", PaymentStateReceived, "0.5"),
			p9, p10, p11,
			pay("p12", "o6", PaymentStateMatched, "2"),
			p13,
		},
		Refunds: []Refund{
			refund("order:o1:1", "o1", RefundOverpaid, "2", "USDC", RefundSent, bookHash("a"), "p2"),
			refund("order:o2:1", "o2", RefundOrderFailed, "5", "USDC", RefundCancelled, "", "p3"),
			refund("order:o3:1", "o3", RefundOrderExpired, "3", "USDC", RefundAwaitingDestination, "", "p4"),
			refund(PaymentRefundKey("p9"), "o1", RefundLatePayment, "7", "USDC", RefundSent, bookHash("c"), "p9"),
			refund(PaymentRefundKey("p10"), "o1", RefundWrongAsset, "20", "XLM", RefundAwaitingApproval, "", "p10"),
		},
	}
}

func TestReconcileBalancedBooks(t *testing.T) {
	ledgers, found := Reconcile(balancedBooks())
	assert.Empty(t, found)
	require.Len(t, ledgers, 2)
	d := decimal.RequireFromString
	usdc := ledgers[0]
	assert.Equal(t, "USDC", usdc.Asset)
	for name, c := range map[string]struct{ got, want decimal.Decimal }{
		"received":     {usdc.Received, d("41.75")},
		"kept":         {usdc.Kept, d("10")},
		"sent":         {usdc.Sent, d("9")},
		"sent by hand": {usdc.SentByHand, d("5")},
		"cancelled":    {usdc.Cancelled, d("5")},
		"owed":         {usdc.Owed, d("3")},
		"owed by hand": {usdc.OwedByHand, d("6")},
		"unmatched":    {usdc.Unmatched, d("1")},
		"pending":      {usdc.Pending, d("2.75")},
		"difference":   {usdc.Difference, decimal.Zero},
	} {
		assert.True(t, c.want.Equal(c.got), "%s: %s, want %s", name, c.got, c.want)
	}
	xlm := ledgers[1]
	assert.Equal(t, "XLM", xlm.Asset)
	assert.True(t, d("20").Equal(xlm.Received) && d("20").Equal(xlm.Owed) && xlm.Difference.IsZero(), "%+v", xlm)
}

func TestReconcileFindsEachDiscrepancy(t *testing.T) {
	at := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
	refund := func(b *Books, key string) *Refund {
		for i := range b.Refunds {
			if b.Refunds[i].Key == key {
				return &b.Refunds[i]
			}
		}
		t.Fatalf("no refund %s", key)
		return nil
	}
	payment := func(b *Books, id string) *BookPayment {
		for i := range b.Payments {
			if b.Payments[i].ID == id {
				return &b.Payments[i]
			}
		}
		t.Fatalf("no payment %s", id)
		return nil
	}
	cases := []struct {
		name    string
		corrupt func(b *Books)
		want    Discrepancy
	}{
		{"credited payments differ from amount_received", func(b *Books) {
			payment(b, "p2").Amount = decimal.RequireFromString("3")
		}, Discrepancy{Kind: DiscrepancyCreditMismatch, OrderID: "o1", PaymentIDs: []string{"p1", "p2"}}},
		{"order's refunds short of what it owes", func(b *Books) {
			refund(b, "order:o1:1").Amount = decimal.RequireFromString("1.5")
		}, Discrepancy{Kind: DiscrepancyOrderRefundsMismatch, OrderID: "o1", RefundIDs: []string{RefundID("order:o1:1")}}},
		{"refunded by hand and by a refund", func(b *Books) {
			b.Orders[1].RefundedAt, b.Orders[1].RefundTx = &at, bookHash("e")
		}, Discrepancy{Kind: DiscrepancyRefundedTwice, OrderID: "o2", RefundIDs: []string{RefundID("order:o2:1")}}},
		{"payment refund differs from its payment", func(b *Books) {
			refund(b, PaymentRefundKey("p9")).Amount = decimal.RequireFromString("6")
		}, Discrepancy{Kind: DiscrepancyRefundPaymentMismatch, OrderID: "o1", PaymentIDs: []string{"p9"}, RefundIDs: []string{RefundID(PaymentRefundKey("p9"))}}},
		{"payment of no order due back with no refund", func(b *Books) {
			b.Refunds = b.Refunds[:4] // drops p10's
			payment(b, "p10").OrderID = ""
		}, Discrepancy{Kind: DiscrepancyPaymentUnrefunded, PaymentIDs: []string{"p10"}}},
		{"one transaction for a refund and a record by hand", func(b *Books) {
			refund(b, "order:o1:1").TransactionHash = bookHash("b")
		}, Discrepancy{Kind: DiscrepancyTransactionReused, OrderID: "o4", RefundIDs: []string{RefundID("order:o1:1")}}},
		{"sent without a transaction", func(b *Books) {
			refund(b, "order:o1:1").TransactionHash = ""
		}, Discrepancy{Kind: DiscrepancySentWithoutTransaction, OrderID: "o1", PaymentIDs: []string{"p2"}, RefundIDs: []string{RefundID("order:o1:1")}}},
		{"payment refunded by a refund not settled", func(b *Books) {
			refund(b, PaymentRefundKey("p9")).Status = RefundSending
		}, Discrepancy{Kind: DiscrepancyPaymentRefundState, OrderID: "o1", PaymentIDs: []string{"p9"}, RefundIDs: []string{RefundID(PaymentRefundKey("p9"))}}},
		{"refunds of an order not stored", func(b *Books) {
			b.Orders = b.Orders[1:] // o1: its payments and its refunds have no order
			b.Payments = slices.DeleteFunc(b.Payments, func(p BookPayment) bool { return p.OrderID == "o1" })
			b.Refunds = slices.DeleteFunc(b.Refunds, func(r Refund) bool { return r.Key != "order:o1:1" && r.OrderID == "o1" })
		}, Discrepancy{Kind: DiscrepancyOrderRefundsMismatch, OrderID: "o1", RefundIDs: []string{RefundID("order:o1:1")}}},
		{"payment credited to an order not stored", func(b *Books) {
			b.Orders = b.Orders[1:]
			b.Payments = slices.DeleteFunc(b.Payments, func(p BookPayment) bool { return p.OrderID == "o1" && p.ID != "p1" })
			b.Refunds = slices.DeleteFunc(b.Refunds, func(r Refund) bool { return r.OrderID == "o1" })
		}, Discrepancy{Kind: DiscrepancyPaymentUnplaced, OrderID: "o1", PaymentIDs: []string{"p1"}}},
		{"payment in an unknown state", func(b *Books) {
			payment(b, "p7").State = "lost"
		}, Discrepancy{Kind: DiscrepancyPaymentUnplaced, PaymentIDs: []string{"p7"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := balancedBooks()
			c.corrupt(&b)
			_, found := Reconcile(b)
			require.Len(t, found, 1, "%+v", found)
			got := found[0]
			assert.Equal(t, c.want.Kind, got.Kind)
			assert.Equal(t, c.want.OrderID, got.OrderID)
			assert.Equal(t, c.want.PaymentIDs, got.PaymentIDs)
			assert.Equal(t, c.want.RefundIDs, got.RefundIDs)
			assert.NotEmpty(t, got.Detail)
		})
	}
}

// TestReconcileOpenOrderOwesNothingByHandYet: an order still open that
// was overpaid, or paid in another asset, has no refund yet (its run
// creates them as it closes): that money is pending, not owed by hand;
// once the order is closed with no refund, it is owed by hand.
func TestReconcileOpenOrderOwesNothingByHandYet(t *testing.T) {
	d := decimal.RequireFromString
	books := func(status OrderStatus) Books {
		return Books{
			Orders: []Order{{ID: "o1", Number: "n-o1", Mode: ModeLive, Status: status, PaymentStatus: PaymentOverpaid,
				PaymentAsset: "USDC", PaymentAmount: d("10"), AmountReceived: d("12")}},
			Payments: []BookPayment{
				{ID: "p1", Mode: ModeLive, Asset: "USDC", Amount: d("12"), State: PaymentStateMatched, Signaled: true, OrderID: "o1"},
				{ID: "p2", Mode: ModeLive, Asset: "XLM", Amount: d("30"), State: PaymentStateRefundDue, OrderID: "o1"},
			},
		}
	}
	for _, c := range []struct {
		status            OrderStatus
		pending, byHand   string
		xlmPend, xlmByHnd string
	}{
		{OrderShipped, "2", "0", "30", "0"},
		{OrderDelivered, "0", "2", "0", "30"},
	} {
		ledgers, found := Reconcile(books(c.status))
		assert.Empty(t, found)
		require.Len(t, ledgers, 2)
		usdc, xlm := ledgers[0], ledgers[1]
		assert.True(t, d(c.pending).Equal(usdc.Pending) && d(c.byHand).Equal(usdc.OwedByHand) && usdc.Difference.IsZero(),
			"%s USDC: %+v", c.status, usdc)
		assert.True(t, d(c.xlmPend).Equal(xlm.Pending) && d(c.xlmByHnd).Equal(xlm.OwedByHand) && xlm.Difference.IsZero(),
			"%s XLM: %+v", c.status, xlm)
	}
}
