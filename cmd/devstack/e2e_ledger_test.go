package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/models/sqlstore"
)

// operator runs a memocart command against the stack as an operator would,
// with the stack's database and Temporal, and answers its output and error.
func (s *liveStack) operator(args ...string) (string, error) {
	s.t.Helper()
	env := func(k string) string {
		if k == "MEMOCART_TEMPORAL_ADDRESS" {
			return s.temporal
		}
		return s.env[k]
	}
	var out, errOut syncBuffer
	err := run(context.Background(), args, env, &out, &errOut)
	return out.String() + errOut.String(), err
}

// reconcileLive runs `memocart reconcile --mode live --json` as an
// operator with the payout account's seed file (the dev stack's) would:
// the books compared with both accounts on the Horizon test server. It
// answers the discrepancies' kinds and the live ledgers.
func (s *liveStack) reconcileLive() (kinds []string, ledgers []map[string]string) {
	s.t.Helper()
	s.env["MEMOCART_STELLAR_PAYOUT_SECRET_FILE"] = filepath.Join(s.env["MEMOCART_DATA_DIR"], testservers.PayoutSeedFile)
	defer delete(s.env, "MEMOCART_STELLAR_PAYOUT_SECRET_FILE")
	out, _ := s.operator("reconcile", "--mode", "live", "--json")
	var got struct {
		Ledgers       []map[string]string `json:"ledgers"`
		Discrepancies []struct {
			Kind   string `json:"kind"`
			Detail string `json:"detail"`
		} `json:"discrepancies"`
	}
	require.NoError(s.t, json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &got), out)
	for _, d := range got.Discrepancies {
		kinds = append(kinds, d.Kind+": "+d.Detail)
	}
	return kinds, got.Ledgers
}

// owedByHand is what `memocart payments list --json` shows an operator:
// the unmatched payments' ids and the orders and payments owed back by
// hand.
func (s *liveStack) owedByHand() (unmatched, due []string) {
	s.t.Helper()
	out, err := s.operator("payments", "list", "--json")
	require.NoError(s.t, err, out)
	var list struct {
		Unmatched []struct {
			ID string `json:"id"`
		} `json:"unmatched"`
		RefundsDue []struct {
			OrderNumber string `json:"order_number"`
			PaymentID   string `json:"payment_id"`
		} `json:"refunds_due"`
	}
	require.NoError(s.t, json.Unmarshal([]byte(out), &list), out)
	for _, p := range list.Unmatched {
		unmatched = append(unmatched, p.ID)
	}
	for _, r := range list.RefundsDue {
		due = append(due, r.OrderNumber+"/"+r.PaymentID)
	}
	return unmatched, due
}

// TestE2EOneRefundLedger: money a refund covers is the refund's alone.
// payments list never shows it as owed by hand, payments mark-refunded is
// refused for it, and the order keeps showing its refund, which the
// service then pays once. An unmatched payment an operator refunds leaves
// the unmatched list and can no longer be attached to an order.
func TestE2EOneRefundLedger(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	o, r := s.failedLiveOrder()
	number, refundID := str(o, "number"), str(r, "id")

	_, due := s.owedByHand()
	for _, d := range due {
		assert.False(t, strings.HasPrefix(d, number+"/"), "order %s is owed back by its refund, not by hand: %v", number, due)
	}
	out, err := s.operator("payments", "mark-refunded", "--order", number, "--tx", strings.Repeat("ab", 32))
	require.Error(t, err, out)
	assert.Contains(t, err.Error(), refundID, "the refusal names the refund to move instead")
	_, b := s.do(s.liveKey, "GET", "/v1/orders/"+number, nil)
	assert.Equal(t, "refund_due", str(obj(b, "order"), "payment_status"))
	rs, _ := obj(b, "order")["refunds"].([]any)
	require.Len(t, rs, 1, "the order shows its refund")

	// A payment with a mistyped memo, refunded by the operator: no longer
	// unmatched, and never attached to an order.
	tok := s.pay(usdc("4", "1234 typo"))
	stray := paymentID(tok)
	require.Eventually(t, func() bool { return s.status(stray) == sqlstore.PaymentUnmatched }, 30*time.Second, 50*time.Millisecond)
	out, err = s.operator("refunds", "create", "--payment", stray)
	require.NoError(t, err, out)
	unmatched, _ := s.owedByHand()
	assert.NotContains(t, unmatched, stray, "being refunded, it is not unmatched")
	open := s.liveOrder("USDC")
	out, err = s.operator("payments", "attach", stray, str(open, "number"))
	require.Error(t, err, out)
	assert.Contains(t, err.Error(), "being refunded")
	assert.Equal(t, sqlstore.PaymentRefundDue, s.status(stray))

	// The client gives the destination: the service pays the refund, once.
	dest := s.refundAccount("one ledger", true)
	code, body := s.setRefundDestination(o, dest, "one ledger")
	require.Equal(t, http.StatusOK, code, body)
	sent := s.waitRefund(refundID, "sent")
	pays := s.horizon.LedgerPayments()
	var toDest int
	for _, p := range successfulPayments(pays) {
		if p.To == dest {
			toDest++
		}
	}
	assert.Equal(t, 1, toDest, "paid once:%s", describe(pays))
	_, b = s.do(s.liveKey, "GET", "/v1/orders/"+number, nil)
	assert.Equal(t, "refunded", str(obj(b, "order"), "payment_status"))
	rs, _ = obj(b, "order")["refunds"].([]any)
	require.Len(t, rs, 1, "the order still shows its refund, settled")
	assert.Equal(t, str(sent, "transaction_hash"), str(rs[0].(map[string]any), "transaction_hash"))

	// The books balance with the chain: both payments received are
	// stored, and the payout account paid the one refund, as sent.
	found, ledgers := s.reconcileLive()
	assert.Empty(t, found)
	require.Len(t, ledgers, 1)
	assert.Equal(t, "USDC", ledgers[0]["asset"])
	assert.Equal(t, ledgers[0]["received"], ledgers[0]["chain_received"])
	assert.Equal(t, str(sent, "amount"), ledgers[0]["chain_paid_out"])
}

// TestE2ETestModeRefundsSpendNoLiveBudget: the daily maximum of automatic
// approvals is live mode's own. A test key's sandbox refund worth the whole
// maximum, approved and sent first, leaves a live refund within the
// maximum approved.
func TestE2ETestModeRefundsSpendNoLiveBudget(t *testing.T) {
	const dailyMax = 1000
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_REFUND_DAILY_MAX": "1000"})
	o, r := s.failedLiveOrder()
	require.True(t, decimal.RequireFromString(str(r, "amount")).LessThanOrEqual(decimal.NewFromInt(dailyMax)),
		"the live refund (%s) fits the daily maximum alone", str(r, "amount"))

	// A test-mode order overpaid by the whole daily maximum, its excess
	// sent back to the payer.
	sandbox := s.newOrder(s.key, product)
	amount := decimal.RequireFromString(str(sandbox, "payment_amount")).Add(decimal.NewFromInt(dailyMax))
	code, body := s.do(s.key, "POST", "/v1/test_helpers/orders/"+str(sandbox, "number")+"/payments", map[string]any{"amount": amount.String()})
	require.Equal(t, http.StatusCreated, code, body)
	s.waitStatus(s.key, str(sandbox, "number"), "delivered")
	testRefund := s.soleRefund(s.key, str(sandbox, "number"), "the excess's refund is created")
	code, body = s.do(s.key, "POST", "/v1/orders/"+str(sandbox, "number")+"/refund_destination",
		map[string]any{"address": s.refundAccount("test budget", true), "memo_type": "text", "memo": "test budget"})
	require.Equal(t, http.StatusOK, code, body)
	var last map[string]any
	require.Eventually(t, func() bool {
		_, b := s.do(s.key, "GET", "/v1/refunds/"+str(testRefund, "id"), nil)
		last = obj(b, "refund")
		return str(last, "status") == "sent"
	}, 45*time.Second, 50*time.Millisecond, "test mode approves and sends its refund: %v", last)

	dest := s.refundAccount("live budget", true)
	code, b := s.setRefundDestination(o, dest, "live budget")
	require.Equal(t, http.StatusOK, code, b)
	s.waitRefund(str(r, "id"), "sent")
}

// TestE2EMarkSentIsCheckedOnHorizon: an operator's `refunds mark-sent`
// of a live refund is taken only for a transaction Horizon shows paying
// it. A payment of another amount, or the payer's own payment into the
// receiving account (a copy-paste slip of the same amount), is refused
// with what does not match, and the refund keeps waiting; the
// transaction that paid it settles it.
func TestE2EMarkSentIsCheckedOnHorizon(t *testing.T) {
	s := startLive(t, "sqlite", nil)
	o, r := s.failedLiveOrder()
	refundID := str(r, "id")
	amount := decimal.RequireFromString(str(r, "amount"))
	wallet := horizontest.AccountID("operator wallet")
	dest := s.refundAccount("paid by hand", true)
	byHand := func(hash string, to string, amount decimal.Decimal) {
		p := usdc(amount.StringFixed(7), "")
		p.From, p.To, p.TxHash, p.MemoType, p.Memo = wallet, to, hash, "", ""
		s.horizon.AddPayment(p)
	}

	short, incoming, paid := strings.Repeat("a1", 32), strings.Repeat("b2", 32), strings.Repeat("c3", 32)
	byHand(short, dest, amount.Sub(decimal.RequireFromString("0.01")))
	in := usdc(amount.StringFixed(7), "no order")
	in.TxHash = incoming
	s.pay(in)
	byHand(paid, dest, amount)

	for _, hash := range []string{short, incoming, strings.Repeat("d4", 32)} {
		out, err := s.refunds("mark-sent", refundID, "--tx", hash)
		require.Error(t, err, out)
		assert.Contains(t, err.Error(), "Transaction "+hash, "the refusal says which transaction, and why")
		assert.Equal(t, "awaiting_destination", str(s.getRefund(refundID), "status"))
	}
	out, err := s.refunds("mark-sent", refundID, "--tx", paid)
	require.NoError(t, err, out)
	got := s.waitRefund(refundID, "sent")
	assert.Equal(t, paid, str(got, "transaction_hash"))
	_, b := s.do(s.liveKey, "GET", "/v1/orders/"+str(o, "number"), nil)
	assert.Equal(t, "refunded", str(obj(b, "order"), "payment_status"))

	// Paid from another wallet, the refund is not looked for in the
	// payout account's history: the books balance with the chain.
	found, ledgers := s.reconcileLive()
	assert.Empty(t, found)
	require.Len(t, ledgers, 1)
	assert.Equal(t, "0", ledgers[0]["chain_paid_out"])
}
