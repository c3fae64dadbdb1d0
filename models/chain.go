package models

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// ChainPayment is one successful payment operation on the Stellar
// network, as reconciling reads an account's history.
type ChainPayment struct {
	// ID is the id the watcher stores a payment it credits under
	// (Payment.ID: "stellar:<network>:<operation id>").
	ID string
	// TxHash is its transaction's hash; InnerTxHash, for a fee bump, its
	// inner transaction's, which is the one a payout records.
	TxHash, InnerTxHash string
	// From and To are accounts (G…); ToMuxedID is the id of the muxed
	// account (M…) it was paid to, "" for a plain one.
	From, To, ToMuxedID string
	// Asset is named as payments and refunds name it: XLM, USDC (the
	// accepted issuer's), or CODE:ISSUER.
	Asset  string
	Amount decimal.Decimal
}

// Chain is what the network shows of the service's live accounts.
type Chain struct {
	// Receiving is the account payers pay (MEMOCART_STELLAR_ACCOUNT);
	// Payout the one refunds are paid from, "" when not known (its side
	// is then not compared).
	Receiving, Payout string
	// Received are the payments crediting the receiving account (an
	// account merged into it too, with the XLM it credited), from any
	// account but itself.
	Received []ChainPayment
	// Paid are the payments leaving the payout account, to any account
	// but itself.
	Paid []ChainPayment
}

// The discrepancies between the live books and the chain (CompareChain).
// docs/operators.md ("Reconciling the books") says what to do for each.
const (
	// The receiving account was credited a payment that is not stored
	// (the watcher has not read it yet, or missed it). A payment from the
	// payout account is not one: the watcher alerts it instead of storing
	// it, and it is listed as payout_unrefunded.
	DiscrepancyChainPaymentUnrecorded DiscrepancyKind = "chain_payment_unrecorded"
	// A stored live payment is not among the receiving account's
	// payments on the chain.
	DiscrepancyPaymentNotOnChain DiscrepancyKind = "payment_not_on_chain"
	// A stored live payment differs from its payment on the chain in
	// amount or asset.
	DiscrepancyPaymentChainMismatch DiscrepancyKind = "payment_chain_mismatch"
	// Money left the payout account in a transaction that no sent refund
	// (nor one being sent) names.
	DiscrepancyPayoutUnrefunded DiscrepancyKind = "payout_unrefunded"
	// The sent refund of a payout account's transaction differs from
	// what the transaction paid (amount, asset, destination), or the
	// transaction paid more than once.
	DiscrepancyPayoutRefundMismatch DiscrepancyKind = "payout_refund_mismatch"
	// A live refund the service paid (its payout recorded an envelope) is
	// sent in a transaction that is not among the payout account's
	// payments.
	DiscrepancyRefundNotOnChain DiscrepancyKind = "refund_not_on_chain"
)

// LiveBooks keeps, of the books read part by part (BookParts), what
// CompareChain compares with the chain: the live payments, and the live
// refunds paid out (sent, or being sent); no order.
type LiveBooks struct {
	Books Books
}

// Payment keeps p if live, and r if paid out.
func (l *LiveBooks) Payment(p BookPayment, r *Refund) {
	if p.Mode == ModeLive {
		l.Books.Payments = append(l.Books.Payments, p)
	}
	if r != nil {
		l.refunds([]Refund{*r})
	}
}

// Order keeps those of own paid out.
func (l *LiveBooks) Order(_ Order, _ []BookPayment, own []Refund) { l.refunds(own) }

// StrayRefunds keeps those of rs paid out.
func (l *LiveBooks) StrayRefunds(_ string, rs []Refund) { l.refunds(rs) }

// StrayCredit keeps nothing: the payment was handed over already.
func (l *LiveBooks) StrayCredit(BookPayment) {}

func (l *LiveBooks) refunds(rs []Refund) {
	for _, r := range rs {
		if paidOut(r) {
			l.Books.Refunds = append(l.Books.Refunds, r)
		}
	}
}

// CompareChain compares the live books b with the chain c, and returns
// ledgers with the live ones' on-chain totals filled in (a ledger added
// for an asset only the chain shows), and the discrepancies found, sorted
// as Bookkeeper.Finish sorts them. It reads nothing but its arguments.
//
//   - Received: every payment crediting the receiving account but the
//     payout account's is a stored payment of the same id, amount and
//     asset, and every stored live payment is such a payment.
//   - Paid: every payment leaving the payout account is the payout of
//     exactly one sent live refund (or one being sent, whose payout may
//     be applied before the refund is written sent), found by its
//     transaction's hash (a fee bump's inner one too), of the refund's
//     amount and asset, to its destination (for to_sender, the account
//     its payments came from).
//     Every sent live refund the service paid (its payout recorded an
//     envelope) is such a payment. A refund an operator marked sent
//     (mark-sent: paid from another wallet, checked on the chain then) is
//     not looked for: it left no trace in the payout account. Nor, after
//     the payout key is rotated, are the old account's payouts: they are
//     listed as refund_not_on_chain until the rotation's refunds are
//     reconciled by hand.
//
// Without a payout account (c.Payout empty), its side is not compared.
func CompareChain(ledgers []Ledger, b Books, c Chain) ([]Ledger, []Discrepancy) {
	cc := chainCompare{ledgers: map[ledgerKey]*Ledger{}}
	for i := range ledgers {
		l := ledgers[i]
		cc.ledgers[ledgerKey{l.Mode, l.Asset}] = &l
	}
	payments := map[string]BookPayment{}
	senders := map[string]string{}
	for _, p := range b.Payments {
		senders[p.ID] = p.Sender
		if p.Mode == ModeLive {
			payments[p.ID] = p
		}
	}

	onChain := map[string]bool{}
	for _, cp := range c.Received {
		l := cc.ledger(cp.Asset)
		l.ChainReceived = l.ChainReceived.Add(cp.Amount)
		onChain[cp.ID] = true
		if c.Payout != "" && cp.From == c.Payout {
			continue // not stored: listed with the payout account's payments
		}
		p, ok := payments[cp.ID]
		switch {
		case !ok:
			cc.add(Discrepancy{Kind: DiscrepancyChainPaymentUnrecorded, Mode: ModeLive, Asset: cp.Asset, PaymentIDs: []string{cp.ID},
				Detail: fmt.Sprintf("%s %s received in transaction %s is not stored", cp.Amount, cp.Asset, cp.TxHash)})
		case !p.Amount.Equal(cp.Amount) || !strings.EqualFold(p.Asset, cp.Asset):
			cc.add(Discrepancy{Kind: DiscrepancyPaymentChainMismatch, Mode: ModeLive, Asset: p.Asset, OrderID: p.OrderID, PaymentIDs: []string{p.ID},
				Detail: fmt.Sprintf("stored as %s %s, received %s %s in transaction %s", p.Amount, p.Asset, cp.Amount, cp.Asset, cp.TxHash)})
		}
	}
	for _, p := range b.Payments {
		if p.Mode == ModeLive && !onChain[p.ID] {
			cc.add(Discrepancy{Kind: DiscrepancyPaymentNotOnChain, Mode: ModeLive, Asset: p.Asset, OrderID: p.OrderID, PaymentIDs: []string{p.ID},
				Detail: fmt.Sprintf("%s %s is stored, and not among the receiving account's payments on the chain", p.Amount, p.Asset)})
		}
	}

	if c.Payout == "" {
		return cc.done()
	}
	// A refund being sent names its payout's transaction too: it may be
	// on the chain before the refund is written sent.
	sent := map[string][]Refund{} // by transaction hash
	for _, r := range b.Refunds {
		if paidOut(r) {
			h := strings.ToLower(r.TransactionHash)
			sent[h] = append(sent[h], r)
		}
	}
	paidBy := map[string][]ChainPayment{} // refund id → its payments on the chain
	for _, cp := range c.Paid {
		l := cc.ledger(cp.Asset)
		l.ChainPaidOut = l.ChainPaidOut.Add(cp.Amount)
		rs := sent[strings.ToLower(cp.TxHash)]
		if len(rs) == 0 && cp.InnerTxHash != "" {
			rs = sent[strings.ToLower(cp.InnerTxHash)]
		}
		if len(rs) == 0 {
			cc.add(Discrepancy{Kind: DiscrepancyPayoutUnrefunded, Mode: ModeLive, Asset: cp.Asset,
				Detail: fmt.Sprintf("%s %s left the payout account in transaction %s (operation %s), which no sent refund names", cp.Amount, cp.Asset, cp.TxHash, cp.ID)})
			continue
		}
		for _, r := range rs {
			paidBy[r.ID] = append(paidBy[r.ID], cp)
		}
	}
	for _, r := range b.Refunds {
		if !paidOut(r) {
			continue
		}
		cps := paidBy[r.ID]
		mismatch := func(format string, args ...any) {
			cc.add(Discrepancy{Kind: DiscrepancyPayoutRefundMismatch, Mode: ModeLive, Asset: r.Asset, OrderID: r.OrderID,
				PaymentIDs: r.PaymentIDs, RefundIDs: []string{r.ID}, Detail: fmt.Sprintf(format, args...)})
		}
		switch {
		case len(cps) == 0 && r.Status == RefundSent && r.Envelope != "":
			cc.add(Discrepancy{Kind: DiscrepancyRefundNotOnChain, Mode: ModeLive, Asset: r.Asset, OrderID: r.OrderID,
				PaymentIDs: r.PaymentIDs, RefundIDs: []string{r.ID},
				Detail: fmt.Sprintf("paid by the service in transaction %s, which is not among the payout account's payments", r.TransactionHash)})
		case len(cps) == 0:
		case len(sent[strings.ToLower(r.TransactionHash)]) > 1:
			// transaction_reused lists the refunds that share it.
		case len(cps) > 1:
			mismatch("transaction %s paid %d times from the payout account", r.TransactionHash, len(cps))
		case !cps[0].Amount.Equal(r.Amount) || !strings.EqualFold(cps[0].Asset, r.Asset):
			mismatch("refund of %s %s, transaction %s paid %s %s", r.Amount, r.Asset, r.TransactionHash, cps[0].Amount, cps[0].Asset)
		case !paidTo(cps[0], r, senders):
			mismatch("transaction %s paid another account than the refund's destination", r.TransactionHash)
		}
	}
	return cc.done()
}

// paidOut reports whether r is a live refund whose payout names a
// transaction that may be on the chain: sent, or being sent.
func paidOut(r Refund) bool {
	return r.Mode == ModeLive && (r.Status == RefundSent || r.Status == RefundSending) && r.TransactionHash != ""
}

// paidTo reports whether cp paid refund r's destination: its account
// and, for a muxed one, its id; for to_sender, the account its payments
// came from (the one account they all came from).
func paidTo(cp ChainPayment, r Refund, senders map[string]string) bool {
	if r.Destination == nil {
		return false
	}
	addr := r.Destination.Address
	if r.Destination.ToSender {
		addr = ""
		for i, id := range r.PaymentIDs {
			s := senders[id]
			if s == "" || (i > 0 && s != addr) {
				return false
			}
			addr = s
		}
	}
	if RefundAccount(addr) != cp.To {
		return false
	}
	id, muxed := muxedID(addr)
	return !muxed || id == cp.ToMuxedID
}

// muxedID is the id, in decimal, of a muxed address (M…); false for any
// other.
func muxedID(addr string) (string, bool) {
	if ValidateRefundAddress(addr) != nil || addr[0] != 'M' {
		return "", false
	}
	raw, _ := strKeyEncoding.DecodeString(addr)
	return strconv.FormatUint(binary.BigEndian.Uint64(raw[33:41]), 10), true
}

type chainCompare struct {
	ledgers map[ledgerKey]*Ledger
	found   []Discrepancy
}

func (cc *chainCompare) add(d Discrepancy) { cc.found = append(cc.found, d) }

// ledger is the live ledger of asset, with its chain totals counted.
func (cc *chainCompare) ledger(asset string) *Ledger {
	k := ledgerKey{ModeLive, strings.ToUpper(asset)}
	l, ok := cc.ledgers[k]
	if !ok {
		l = &Ledger{Mode: ModeLive, Asset: k.asset}
		cc.ledgers[k] = l
	}
	l.Chain = true
	return l
}

func (cc *chainCompare) done() ([]Ledger, []Discrepancy) {
	var ledgers []Ledger
	for _, l := range cc.ledgers {
		if l.Mode == ModeLive {
			l.Chain = true
		}
		ledgers = append(ledgers, *l)
	}
	slices.SortFunc(ledgers, func(a, b Ledger) int {
		return cmp.Or(cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Asset, b.Asset))
	})
	sortDiscrepancies(cc.found)
	return ledgers, cc.found
}
