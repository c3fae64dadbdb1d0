package chaos

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	"github.com/memocart/memocart/activities/stellar/horizontest"
)

// TestPaidOtherThanOnceCountsTheLedger: a sent refund is paid by exactly
// one successful payment from the payout account to its destination, of
// its amount, in the transaction it records; anything else on the ledger
// is a finding.
func TestPaidOtherThanOnceCountsTheLedger(t *testing.T) {
	payout, a, b := horizontest.AccountID("payout"), horizontest.AccountID("a"), horizontest.AccountID("b")
	ok, failed := true, false
	sent := func(id, dest, amount, tx string) dbRefund {
		return dbRefund{id: id, mode: "live", status: "sent", dest: dest, amount: decimal.RequireFromString(amount), txHash: tx}
	}
	pay := func(to, amount, tx string, successful *bool) horizontest.Payment {
		return horizontest.Payment{From: payout, To: to, Amount: amount, TxHash: tx, Successful: successful}
	}
	cases := []struct {
		name    string
		refunds []dbRefund
		ledger  []horizontest.Payment
		want    int
	}{
		{"each paid once", []dbRefund{sent("r1", a, "1.25", "t1"), sent("r2", b, "10", "t2")},
			[]horizontest.Payment{pay(a, "1.2500000", "t1", &ok), pay(b, "10.0000000", "t2", &ok)}, 0},
		{"a failed payment does not count", []dbRefund{sent("r1", a, "1.25", "t2")},
			[]horizontest.Payment{pay(a, "1.25", "t1", &failed), pay(a, "1.25", "t2", &ok)}, 0},
		{"a refund still waiting is paid nothing", []dbRefund{{id: "r1", mode: "live", status: "awaiting_approval", dest: a}}, nil, 0},
		{"paid twice", []dbRefund{sent("r1", a, "1.25", "t1")},
			[]horizontest.Payment{pay(a, "1.25", "t1", &ok), pay(a, "1.25", "t2", &ok)}, 1},
		{"sent but never paid", []dbRefund{sent("r1", a, "1.25", "t1")}, nil, 1},
		{"paid another amount", []dbRefund{sent("r1", a, "1.25", "t1")}, []horizontest.Payment{pay(a, "1.24", "t1", &ok)}, 1},
		{"paid in another transaction", []dbRefund{sent("r1", a, "1.25", "t1")}, []horizontest.Payment{pay(a, "1.25", "t9", &ok)}, 1},
		{"paid where no refund was sent", nil, []horizontest.Payment{pay(b, "3", "t1", &ok)}, 1},
		{"two refunds sent to one destination", []dbRefund{sent("r1", a, "1", "t1"), sent("r2", a, "1", "t2")},
			[]horizontest.Payment{pay(a, "1", "t1", &ok)}, 1},
		{"payments from others are not payouts", nil, []horizontest.Payment{{From: a, To: b, Amount: "1", Successful: &ok}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv := paidOtherThanOnce(payout, tc.refunds, tc.ledger)
			assert.Equal(t, tc.want, inv.Count, inv.Examples)
		})
	}
}

// TestRefundsNotSentWantsOneSentRefundOfWhatIsOwed: each live order owed
// money back has one refund, sent, of what it is owed; an order owed
// nothing has none.
func TestRefundsNotSentWantsOneSentRefundOfWhatIsOwed(t *testing.T) {
	now := time.Now()
	refund := func(order, status, amount string) dbRefund {
		return dbRefund{id: "rfd_" + order, orderID: order, status: status, amount: decimal.RequireFromString(amount), sentAt: &now}
	}
	orders := []*order{
		{orderID: "o1", kind: liveOverpaid, paid: true, amount: "20"},
		{orderID: "o2", kind: liveFailed, paid: true, amount: "20"},
		{orderID: "o3", kind: liveLate, paid: true, amount: "20"},
		{orderID: "o4", kind: liveExact, paid: true, amount: "20"},
		{orderID: "o5", paid: true},
	}
	owed, unowed := refundsNotSent(orders, []dbRefund{refund("o1", "sent", "1.25"), refund("o2", "sent", "20"), refund("o3", "sent", "20")})
	assert.Zero(t, owed.Count, owed.Examples)
	assert.Zero(t, unowed.Count, unowed.Examples)

	owed, unowed = refundsNotSent(orders, []dbRefund{refund("o1", "sent", "20"), refund("o2", "sending", "20"), refund("o4", "sent", "1")})
	assert.Equal(t, 3, owed.Count, "o1's amount, o2 not sent, o3 without a refund: %v", owed.Examples)
	assert.Equal(t, 1, unowed.Count, "o4 is owed nothing: %v", unowed.Examples)
}

// TestDrawKindFollowsTheShares: the live orders' kinds come in the shares
// the flags give, the rest paid their amount, and a seed repeats them.
func TestDrawKindFollowsTheShares(t *testing.T) {
	newRun := func(overpaid, late, failed float64) *run {
		return &run{opts: Options{Overpaid: overpaid, Late: late, Failed: failed}, rng: rand.New(rand.NewPCG(3, 3))}
	}
	r := newRun(0.25, 0.25, 0.25)
	n := map[liveKind]int{}
	for range 10_000 {
		n[r.drawKind()]++
	}
	for _, k := range []liveKind{liveExact, liveOverpaid, liveLate, liveFailed} {
		assert.InDelta(t, 2500, n[k], 200, "%s: %v", k, n)
	}
	r = newRun(0, 1, 0)
	for range 100 {
		assert.Equal(t, liveLate, r.drawKind())
	}
	a, b := newRun(0.2, 0.3, 0.1), newRun(0.2, 0.3, 0.1)
	for range 100 {
		assert.Equal(t, a.drawKind(), b.drawKind())
	}
}
