package models

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompareChain: the live books balance with the chain when every
// payment the receiving account was credited is stored as it was
// received, and every payment out of the payout account is one sent
// refund's payout, as sent; each way they can differ is its own
// discrepancy, naming what to look at.
func TestCompareChain(t *testing.T) {
	receiving := StellarAccountID([32]byte{1})
	payout := StellarAccountID([32]byte{2})
	payer := StellarAccountID([32]byte{3})
	dest := StellarAccountID([32]byte{4})
	other := StellarAccountID([32]byte{5})
	d := func(s string) decimal.Decimal { return decimal.RequireFromString(s) }
	hash := func(c string) string { return strings.Repeat(c, 64) }

	// A payer paid 10 USDC (unmatched) and 5 XLM; the XLM payment is refunded to dest
	// by the service (hash b), a stray 2 USDC refunded to its sender
	// (hash c), and a refund marked sent by an operator (hash e, paid
	// from another wallet).
	books := func() Books {
		return Books{
			Payments: []BookPayment{
				{ID: "stellar:testnet:1", Mode: ModeLive, Asset: "USDC", Amount: d("10"), State: PaymentStateUnmatched, Sender: payer},
				{ID: "stellar:testnet:2", Mode: ModeLive, Asset: "XLM", Amount: d("5"), State: PaymentStateRefunded, Sender: payer},
				{ID: "stellar:testnet:3", Mode: ModeLive, Asset: "USDC", Amount: d("2"), State: PaymentStateRefunded, Sender: payer},
				{ID: "stellar:testnet:4", Mode: ModeLive, Asset: "USDC", Amount: d("1"), State: PaymentStateRefunded, Sender: payer},
				{ID: "sandbox_1", Mode: ModeTest, Asset: "USDC", Amount: d("9"), State: PaymentStateUnmatched},
			},
			Refunds: []Refund{
				{ID: "rfd_b", Key: PaymentRefundKey("stellar:testnet:2"), Mode: ModeLive, PaymentIDs: []string{"stellar:testnet:2"}, Reason: RefundLatePayment,
					Amount: d("5"), Asset: "XLM", Status: RefundSent, TransactionHash: hash("b"), Envelope: "recorded", Destination: &RefundDestination{Address: dest}},
				{ID: "rfd_c", Key: PaymentRefundKey("stellar:testnet:3"), Mode: ModeLive, PaymentIDs: []string{"stellar:testnet:3"}, Reason: RefundUnmatchedPayment,
					Amount: d("2"), Asset: "USDC", Status: RefundSent, TransactionHash: hash("c"), Envelope: "recorded", Destination: &RefundDestination{ToSender: true}},
				{ID: "rfd_e", Key: PaymentRefundKey("stellar:testnet:4"), Mode: ModeLive, PaymentIDs: []string{"stellar:testnet:4"}, Reason: RefundUnmatchedPayment,
					Amount: d("1"), Asset: "USDC", Status: RefundSent, TransactionHash: hash("e")},
			},
		}
	}
	chain := func() Chain {
		return Chain{
			Receiving: receiving, Payout: payout,
			Received: []ChainPayment{
				{ID: "stellar:testnet:1", TxHash: hash("1"), From: payer, To: receiving, Asset: "USDC", Amount: d("10")},
				{ID: "stellar:testnet:2", TxHash: hash("2"), From: payer, To: receiving, Asset: "XLM", Amount: d("5")},
				{ID: "stellar:testnet:3", TxHash: hash("3"), From: payer, To: receiving, Asset: "USDC", Amount: d("2")},
				{ID: "stellar:testnet:4", TxHash: hash("4"), From: payer, To: receiving, Asset: "USDC", Amount: d("1")},
			},
			Paid: []ChainPayment{
				{ID: "stellar:testnet:10", TxHash: hash("b"), From: payout, To: dest, Asset: "XLM", Amount: d("5")},
				// Paid in a fee bump: the refund records the inner hash.
				{ID: "stellar:testnet:11", TxHash: hash("9"), InnerTxHash: hash("c"), From: payout, To: payer, Asset: "USDC", Amount: d("2")},
			},
		}
	}

	t.Run("balanced", func(t *testing.T) {
		b := books()
		ledgers, found := Reconcile(b)
		require.Empty(t, found)
		ledgers, found = CompareChain(ledgers, b, chain())
		assert.Empty(t, found)
		byKey := map[string]Ledger{}
		for _, l := range ledgers {
			byKey[string(l.Mode)+" "+l.Asset] = l
		}
		assert.True(t, byKey["live USDC"].Chain)
		assert.Equal(t, "13", byKey["live USDC"].ChainReceived.String())
		assert.Equal(t, "2", byKey["live USDC"].ChainPaidOut.String())
		assert.Equal(t, "5", byKey["live XLM"].ChainPaidOut.String())
		assert.False(t, byKey["test USDC"].Chain, "test mode has no chain")
	})

	cases := []struct {
		name  string
		edit  func(*Books, *Chain)
		kind  DiscrepancyKind
		ids   []string // payment or refund ids it names
		about string   // in the detail
	}{
		{"a payment received and not stored", func(b *Books, c *Chain) {
			c.Received = append(c.Received, ChainPayment{ID: "stellar:testnet:5", TxHash: hash("5"), From: other, To: receiving, Asset: "USDC", Amount: d("3")})
		}, DiscrepancyChainPaymentUnrecorded, []string{"stellar:testnet:5"}, hash("5")},
		{"a stored payment not on the chain", func(b *Books, c *Chain) {
			c.Received = c.Received[1:]
		}, DiscrepancyPaymentNotOnChain, []string{"stellar:testnet:1"}, "10 USDC"},
		{"a stored payment of another amount", func(b *Books, c *Chain) {
			c.Received[0].Amount = d("10.0000001")
		}, DiscrepancyPaymentChainMismatch, []string{"stellar:testnet:1"}, "received 10.0000001 USDC"},
		{"a stored payment of another asset", func(b *Books, c *Chain) {
			c.Received[0].Asset = "USDC:" + other
		}, DiscrepancyPaymentChainMismatch, []string{"stellar:testnet:1"}, "stored as 10 USDC"},
		{"money out of the payout account for no refund", func(b *Books, c *Chain) {
			c.Paid = append(c.Paid, ChainPayment{ID: "stellar:testnet:12", TxHash: hash("7"), From: payout, To: other, Asset: "USDC", Amount: d("4")})
		}, DiscrepancyPayoutUnrefunded, nil, hash("7")},
		{"a refund paid to the receiving account: not a payer's payment, not a refund", func(b *Books, c *Chain) {
			c.Received = append(c.Received, ChainPayment{ID: "stellar:testnet:13", TxHash: hash("8"), From: payout, To: receiving, Asset: "USDC", Amount: d("4")})
			c.Paid = append(c.Paid, ChainPayment{ID: "stellar:testnet:13", TxHash: hash("8"), From: payout, To: receiving, Asset: "USDC", Amount: d("4")})
		}, DiscrepancyPayoutUnrefunded, nil, hash("8")},
		{"a refund paid another amount", func(b *Books, c *Chain) {
			c.Paid[0].Amount = d("50")
		}, DiscrepancyPayoutRefundMismatch, []string{"rfd_b"}, "paid 50 XLM"},
		{"a refund paid another asset", func(b *Books, c *Chain) {
			c.Paid[0].Asset = "USDC"
		}, DiscrepancyPayoutRefundMismatch, []string{"rfd_b"}, "paid 5 USDC"},
		{"a refund paid to another account", func(b *Books, c *Chain) {
			c.Paid[0].To = other
		}, DiscrepancyPayoutRefundMismatch, []string{"rfd_b"}, "another account"},
		{"a to_sender refund paid to another account than the sender", func(b *Books, c *Chain) {
			c.Paid[1].To = dest
		}, DiscrepancyPayoutRefundMismatch, []string{"rfd_c"}, "another account"},
		{"a muxed destination paid another id", func(b *Books, c *Chain) {
			m := "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK" // id 2^63
			b.Refunds[0].Destination = &RefundDestination{Address: m}
			c.Paid[0].To, c.Paid[0].ToMuxedID = RefundAccount(m), "7"
		}, DiscrepancyPayoutRefundMismatch, []string{"rfd_b"}, "another account"},
		{"a refund paid twice in its transaction", func(b *Books, c *Chain) {
			c.Paid = append(c.Paid, c.Paid[0])
			c.Paid[2].ID = "stellar:testnet:14"
		}, DiscrepancyPayoutRefundMismatch, []string{"rfd_b"}, "paid 2 times"},
		{"a refund the service paid, not on the chain", func(b *Books, c *Chain) {
			c.Paid = c.Paid[1:]
		}, DiscrepancyRefundNotOnChain, []string{"rfd_b"}, hash("b")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, c := books(), chain()
			tc.edit(&b, &c)
			ledgers, _ := Reconcile(b)
			_, found := CompareChain(ledgers, b, c)
			require.Len(t, found, 1, "%+v", found)
			got := found[0]
			assert.Equal(t, tc.kind, got.Kind)
			assert.Equal(t, ModeLive, got.Mode)
			named := append(append([]string{}, got.PaymentIDs...), got.RefundIDs...)
			for _, id := range tc.ids {
				assert.Contains(t, named, id)
			}
			assert.Contains(t, got.Detail, tc.about)
		})
	}

	t.Run("ids named", func(t *testing.T) {
		b, c := books(), chain()
		c.Received = c.Received[1:]
		_, found := CompareChain(nil, b, c)
		require.Len(t, found, 1)
		assert.Equal(t, []string{"stellar:testnet:1"}, found[0].PaymentIDs)
	})

	t.Run("a refund being sent whose payout is on the chain", func(t *testing.T) {
		b, c := books(), chain()
		b.Refunds[0].Status = RefundSending
		b.Payments[1].State = PaymentStateRefundDue
		_, found := CompareChain(nil, b, c)
		assert.Empty(t, found, "its payout is named: not money out for no refund")
	})

	t.Run("no payout account: its side is not compared", func(t *testing.T) {
		b, c := books(), chain()
		c.Payout, c.Paid = "", nil
		b.Refunds[0].TransactionHash = hash("0")
		_, found := CompareChain(nil, b, c)
		assert.Empty(t, found)
	})
}
