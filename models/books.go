package models

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// BookPayment is one stored payment as the books read it: where it
// stands (State) and, for a matched one, whether its order's workflow was
// handed it (Signaled: it is credited, or about to be).
type BookPayment struct {
	ID         string
	Mode       Mode
	Asset      string
	Amount     decimal.Decimal
	State      PaymentState
	Signaled   bool
	OrderID    string // empty while unmatched
	RefundedAt *time.Time
	RefundTx   string
	// Sender is the account that paid (G…, or M… from a custodian):
	// where a to_sender refund of it goes.
	Sender string
}

// Books is what reconciling reads: every payment, every order a payment
// or a refund reached (its Payments need not be loaded), and every refund.
type Books struct {
	Payments []BookPayment
	Orders   []Order
	Refunds  []Refund
}

// Ledger is where the money received in one mode and asset went. Every
// unit received is in exactly one of the other amounts; Difference is what
// is not, zero when the books balance there.
type Ledger struct {
	Mode  Mode
	Asset string
	// Received is every payment stored, whatever became of it.
	Received decimal.Decimal
	// Kept is what orders credited and kept: the amount due of a paid
	// order, nothing of a failed or cancelled one.
	Kept decimal.Decimal
	// Sent is what refunds sent back on the chain; SentByHand what an
	// operator recorded sending (payments mark-refunded) with no refund.
	Sent       decimal.Decimal
	SentByHand decimal.Decimal
	// Cancelled is what refunds an operator cancelled settled another way.
	Cancelled decimal.Decimal
	// Owed is what open refunds (not sent, not cancelled) still owe;
	// OwedByHand what a closed order owes back with no refund and no
	// record of it being sent: an order still waiting for mark-refunded,
	// from before the service paid refunds out.
	Owed       decimal.Decimal
	OwedByHand decimal.Decimal
	// Unmatched is what named no order and waits for an operator.
	Unmatched decimal.Decimal
	// Pending is what is not through the books yet: stored and not
	// matched, matched and being credited by its order's workflow,
	// credited to an order still waiting for payment, or owed back by an
	// order still open, whose run creates its refunds as it closes.
	Pending decimal.Decimal
	// Difference is Received less every amount above: non-zero only
	// where a discrepancy is listed.
	Difference decimal.Decimal
	// Chain is set when the chain was read (CompareChain, live mode):
	// ChainReceived is then what the receiving account was credited on
	// it, ChainPaidOut what left the payout account.
	Chain         bool
	ChainReceived decimal.Decimal
	ChainPaidOut  decimal.Decimal
}

// DiscrepancyKind names one way the books can fail to balance.
type DiscrepancyKind string

// Discrepancy kinds. docs/operators.md ("Reconciling the books") says
// what each means and what to do.
const (
	// An order's credited payments do not add up to its amount_received.
	DiscrepancyCreditMismatch DiscrepancyKind = "credit_mismatch"
	// An order's refunds of its own money do not add up to what it owes
	// back (models.RefundsOwed), and it was not recorded refunded by hand;
	// or they are refunds of an order that waits for payment or is not
	// stored.
	DiscrepancyOrderRefundsMismatch DiscrepancyKind = "order_refunds_mismatch"
	// An order recorded refunded by hand also has refunds of that money.
	DiscrepancyRefundedTwice DiscrepancyKind = "refunded_twice"
	// A refund of one payment whole differs from its payment in amount or
	// asset, or names a payment that is not stored.
	DiscrepancyRefundPaymentMismatch DiscrepancyKind = "refund_payment_mismatch"
	// A payment of no order is due back whole with no refund: only its
	// refund makes an unmatched payment due back. (One of an order with
	// neither a refund nor a record by hand is owed by hand: recorded
	// before refunds were paid out.)
	DiscrepancyPaymentUnrefunded DiscrepancyKind = "payment_unrefunded"
	// Two refunds, or a refund and a record by hand, name the same
	// transaction: one payout counted as two.
	DiscrepancyTransactionReused DiscrepancyKind = "transaction_reused"
	// A refund is sent with no transaction hash.
	DiscrepancySentWithoutTransaction DiscrepancyKind = "sent_without_transaction"
	// A payment is marked refunded while its refund is not settled, or its
	// refund settled and the payment is not marked refunded, or it is
	// unmatched while a refund returns it.
	DiscrepancyPaymentRefundState DiscrepancyKind = "payment_refund_state"
	// A payment is in no place the books know: an unknown state, or
	// credited to an order that is not stored.
	DiscrepancyPaymentUnplaced DiscrepancyKind = "payment_unplaced"
)

// Discrepancy is one place the books do not balance, with the ids an
// operator looks at.
type Discrepancy struct {
	Kind       DiscrepancyKind
	Mode       Mode
	Asset      string
	OrderID    string
	PaymentIDs []string
	RefundIDs  []string
	Detail     string
}

// BooksCheck is the last check of the books made for the metrics: when
// it ran (zero: never) and how many discrepancies the Bookkeeper found per mode.
type BooksCheck struct {
	CheckedAt     time.Time
	Discrepancies map[Mode]int
}

// NewBooksCheck counts the discrepancies found per mode by a check at at.
func NewBooksCheck(at time.Time, found []Discrepancy) BooksCheck {
	c := BooksCheck{CheckedAt: at, Discrepancies: map[Mode]int{ModeTest: 0, ModeLive: 0}}
	for _, d := range found {
		c.Discrepancies[d.Mode]++
	}
	return c
}

type ledgerKey struct {
	mode  Mode
	asset string
}

// Bookkeeper reconciles the books one part at a time (BookParts), so that
// a reader holds one page of them at once. Finish answers the ledgers and
// the discrepancies.
// It keeps one small record per transaction hash claimed (sent refunds,
// records by hand), to find a hash claimed twice.
//
// A payment is placed by its state: credited (matched and handed to its
// workflow) money is its order's, placed by the order; a payment due back
// whole is placed by its refund (the refund keyed PaymentRefundKey) or,
// without one, by its record by hand. An order's own money (its recorded
// amount_received) is kept but for what it owes back (RefundsOwed with
// nothing refunded yet), which its refunds of that money place, or its
// record by hand (mark-refunded), or nothing (owed by hand: its workflow
// waits for mark-refunded).
type Bookkeeper struct {
	ledgers map[ledgerKey]*Ledger
	found   []Discrepancy
	hashes  []hashClaim
	// dueOfOrder are payments of an order due back whole with no refund
	// (late, another asset), placed by their order (or, not stored, as
	// owed by hand by Finish). Few: a refund covers such a payment from
	// when its order closes.
	dueOfOrder map[string][]BookPayment
}

// BookParts takes the books part by part, as a reader of the whole books
// hands them over (sqlstore.ReadBooks): each payment with the refund that
// returns it whole, each order with its credited payments and its
// refunds of its own money, and each row that names one not stored. Every
// payment and every refund is handed over once. Bookkeeper reconciles
// them; LiveBooks keeps what CompareChain needs; EachOf hands them to
// several.
type BookParts interface {
	Payment(p BookPayment, r *Refund)
	Order(o Order, credited []BookPayment, own []Refund)
	StrayRefunds(orderID string, rs []Refund)
	StrayCredit(p BookPayment)
}

// EachOf hands every part to each of parts, in order.
func EachOf(parts ...BookParts) BookParts { return eachOf(parts) }

type eachOf []BookParts

func (e eachOf) Payment(p BookPayment, r *Refund) {
	for _, x := range e {
		x.Payment(p, r)
	}
}

func (e eachOf) Order(o Order, credited []BookPayment, own []Refund) {
	for _, x := range e {
		x.Order(o, credited, own)
	}
}

func (e eachOf) StrayRefunds(orderID string, rs []Refund) {
	for _, x := range e {
		x.StrayRefunds(orderID, rs)
	}
}

func (e eachOf) StrayCredit(p BookPayment) {
	for _, x := range e {
		x.StrayCredit(p)
	}
}

// NewBookkeeper returns a Bookkeeper with nothing in its books.
func NewBookkeeper() *Bookkeeper {
	return &Bookkeeper{ledgers: map[ledgerKey]*Ledger{}, dueOfOrder: map[string][]BookPayment{}}
}

// Credited reports whether p is its order's money: matched and handed to
// the order's workflow. Bookkeeper.Order places it.
func (p BookPayment) Credited() bool {
	return p.State == PaymentStateMatched && p.Signaled
}

// Payment counts p received and places it, with r, the refund keyed
// PaymentRefundKey(p.ID), when there is one; a credited payment is placed
// by its order.
func (k *Bookkeeper) Payment(p BookPayment, r *Refund) {
	l := k.ledger(p.Mode, p.Asset)
	l.Received = l.Received.Add(p.Amount)
	switch {
	case p.State == PaymentStateReceived || (p.State == PaymentStateMatched && !p.Signaled):
		l.Pending = l.Pending.Add(p.Amount)
	case p.Credited():
	case p.State == PaymentStateUnmatched:
		l.Unmatched = l.Unmatched.Add(p.Amount)
	case r != nil:
		// Placed with the refund below; its state must follow it.
		if (p.State == PaymentStateRefunded) != r.Status.Settled() {
			k.add(Discrepancy{Kind: DiscrepancyPaymentRefundState, Mode: p.Mode, Asset: p.Asset, OrderID: p.OrderID,
				PaymentIDs: []string{p.ID}, RefundIDs: []string{r.ID},
				Detail: fmt.Sprintf("payment is %s, its refund is %s", p.State, r.Status)})
		}
	case p.State == PaymentStateRefunded:
		l.SentByHand = l.SentByHand.Add(p.Amount)
		k.hashes = append(k.hashes, hashClaim{hash: p.RefundTx, what: "payment " + p.ID + " (by hand)", payment: p.ID, mode: p.Mode, asset: p.Asset})
	case p.State.DueBack() && p.OrderID != "":
		k.dueOfOrder[p.OrderID] = append(k.dueOfOrder[p.OrderID], p)
	case p.State.DueBack():
		// An unmatched payment becomes due back only with its refund.
		l.OwedByHand = l.OwedByHand.Add(p.Amount)
		k.add(Discrepancy{Kind: DiscrepancyPaymentUnrefunded, Mode: p.Mode, Asset: p.Asset,
			PaymentIDs: []string{p.ID}, Detail: fmt.Sprintf("%s %s %s of no order is due back with no refund", p.State, p.Amount, p.Asset)})
	default:
		k.add(Discrepancy{Kind: DiscrepancyPaymentUnplaced, Mode: p.Mode, Asset: p.Asset, OrderID: p.OrderID,
			PaymentIDs: []string{p.ID}, Detail: fmt.Sprintf("payment is in unknown state %q", p.State)})
	}
	if r == nil {
		return
	}
	k.refund(*r)
	if !p.Amount.Equal(r.Amount) || !strings.EqualFold(p.Asset, r.Asset) {
		k.add(Discrepancy{Kind: DiscrepancyRefundPaymentMismatch, Mode: p.Mode, Asset: p.Asset, OrderID: p.OrderID,
			PaymentIDs: []string{p.ID}, RefundIDs: []string{r.ID},
			Detail: fmt.Sprintf("refund is %s %s, its payment %s %s", r.Amount, r.Asset, p.Amount, p.Asset)})
	}
	switch p.State {
	case PaymentStateUnmatched:
		k.add(Discrepancy{Kind: DiscrepancyPaymentRefundState, Mode: p.Mode, Asset: p.Asset,
			PaymentIDs: []string{p.ID}, RefundIDs: []string{r.ID}, Detail: "payment is unmatched while a refund returns it"})
	case PaymentStateMatched, PaymentStateReceived:
		// Its order's money, or not through the books yet: placed above.
	default:
		k.place(k.ledger(p.Mode, p.Asset), r.Status, p.Amount)
	}
}

// StrayRefunds lists refunds that name a row not stored: of orderID's own
// money when orderID is not empty (the order is not stored), else each
// returning a payment whole that is not stored.
func (k *Bookkeeper) StrayRefunds(orderID string, rs []Refund) {
	if len(rs) == 0 {
		return
	}
	for _, r := range rs {
		k.refund(r)
		if orderID == "" {
			k.add(Discrepancy{Kind: DiscrepancyRefundPaymentMismatch, Mode: r.Mode, Asset: r.Asset, OrderID: r.OrderID,
				PaymentIDs: r.PaymentIDs, RefundIDs: []string{r.ID}, Detail: "returns a payment that is not stored"})
		}
	}
	if orderID != "" {
		k.add(Discrepancy{Kind: DiscrepancyOrderRefundsMismatch, Mode: rs[0].Mode, Asset: rs[0].Asset, OrderID: orderID,
			RefundIDs: idsOf(rs), Detail: "refunds of the money of an order that is not stored"})
	}
}

// StrayCredit lists p, credited to an order that is not stored.
func (k *Bookkeeper) StrayCredit(p BookPayment) {
	k.add(Discrepancy{Kind: DiscrepancyPaymentUnplaced, Mode: p.Mode, Asset: p.Asset, OrderID: p.OrderID,
		PaymentIDs: []string{p.ID}, Detail: "payment is credited to an order that is not stored"})
}

// refund checks what every refund must hold, whatever it returns: a sent
// one names its transaction, which it claims.
func (k *Bookkeeper) refund(r Refund) {
	if r.Status != RefundSent {
		return
	}
	if r.TransactionHash == "" {
		k.add(Discrepancy{Kind: DiscrepancySentWithoutTransaction, Mode: r.Mode, Asset: r.Asset, OrderID: r.OrderID,
			PaymentIDs: r.PaymentIDs, RefundIDs: []string{r.ID}, Detail: "sent with no transaction hash"})
	}
	k.hashes = append(k.hashes, hashClaim{hash: r.TransactionHash, what: "refund " + r.ID, refund: r.ID, mode: r.Mode, asset: r.Asset})
}

// Finish answers the books: per mode and asset, where the money received
// went (sorted by mode then asset), and every discrepancy found (sorted
// by kind, then ids).
func (k *Bookkeeper) Finish() ([]Ledger, []Discrepancy) {
	for _, ps := range k.dueOfOrder {
		k.dueWithNoRefund(ps, true)
	}
	clear(k.dueOfOrder)
	k.transactions()
	var ledgers []Ledger
	for _, l := range k.ledgers {
		l.Difference = l.Received.Sub(l.Kept).Sub(l.Sent).Sub(l.SentByHand).Sub(l.Cancelled).
			Sub(l.Owed).Sub(l.OwedByHand).Sub(l.Unmatched).Sub(l.Pending)
		ledgers = append(ledgers, *l)
	}
	slices.SortFunc(ledgers, func(a, b Ledger) int {
		return cmp.Or(cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.Asset, b.Asset))
	})
	sortDiscrepancies(k.found)
	return ledgers, k.found
}

// sortDiscrepancies sorts ds by kind, then the ids they name.
func sortDiscrepancies(ds []Discrepancy) {
	slices.SortStableFunc(ds, func(a, b Discrepancy) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.OrderID, b.OrderID),
			slices.Compare(a.PaymentIDs, b.PaymentIDs), slices.Compare(a.RefundIDs, b.RefundIDs))
	})
}

type hashClaim struct {
	hash    string
	what    string
	refund  string
	payment string
	order   string
	mode    Mode
	asset   string
}

func (k *Bookkeeper) add(d Discrepancy) { k.found = append(k.found, d) }

func (k *Bookkeeper) ledger(mode Mode, asset string) *Ledger {
	key := ledgerKey{mode, strings.ToUpper(asset)}
	l, ok := k.ledgers[key]
	if !ok {
		l = &Ledger{Mode: mode, Asset: key.asset}
		k.ledgers[key] = l
	}
	return l
}

// place counts amount, returned by a refund at status, in l.
func (k *Bookkeeper) place(l *Ledger, status RefundStatus, amount decimal.Decimal) {
	switch status {
	case RefundSent:
		l.Sent = l.Sent.Add(amount)
	case RefundCancelled:
		l.Cancelled = l.Cancelled.Add(amount)
	default:
		l.Owed = l.Owed.Add(amount)
	}
}

// Order places order o's own money: what its credited payments brought
// (checked against its amount_received), kept but for what it owes back,
// which refunds, its refunds of that money (Reason ofOrder), or its record
// by hand place.
func (k *Bookkeeper) Order(o Order, credited []BookPayment, refunds []Refund) {
	for _, r := range refunds {
		k.refund(r)
	}
	k.dueWithNoRefund(k.dueOfOrder[o.ID], o.Status.Final())
	delete(k.dueOfOrder, o.ID)
	l := k.ledger(o.Mode, o.PaymentAsset)
	var sum decimal.Decimal
	var ids []string
	for _, p := range credited {
		sum = sum.Add(p.Amount)
		ids = append(ids, p.ID)
	}
	if !sum.Equal(o.AmountReceived) {
		k.add(Discrepancy{Kind: DiscrepancyCreditMismatch, Mode: o.Mode, Asset: o.PaymentAsset, OrderID: o.ID, PaymentIDs: ids,
			Detail: fmt.Sprintf("order %s credited payments add up to %s, its amount_received is %s", o.Number, sum, o.AmountReceived)})
	}

	if o.Status == OrderCreated {
		l.Pending = l.Pending.Add(o.AmountReceived)
		if len(refunds) > 0 || o.RefundedAt != nil {
			k.add(Discrepancy{Kind: DiscrepancyOrderRefundsMismatch, Mode: o.Mode, Asset: o.PaymentAsset, OrderID: o.ID,
				RefundIDs: idsOf(refunds), Detail: fmt.Sprintf("order %s waits for payment and has refunds of its money", o.Number)})
		}
		return
	}

	// What it owes back of its own money, nothing refunded yet.
	bare := o
	bare.RefundedAt, bare.Payments = nil, nil
	var owed decimal.Decimal
	for _, r := range RefundsOwed(bare, nil, time.Time{}) {
		owed = owed.Add(r.Amount)
	}
	l.Kept = l.Kept.Add(o.AmountReceived.Sub(owed))

	var refunded decimal.Decimal
	refundIDs := idsOf(refunds)
	for _, r := range refunds {
		refunded = refunded.Add(r.Amount)
		k.place(l, r.Status, r.Amount)
	}
	switch {
	case o.RefundedAt != nil:
		k.hashes = append(k.hashes, hashClaim{hash: o.RefundTx, what: "order " + o.Number + " (by hand)", order: o.ID, mode: o.Mode, asset: o.PaymentAsset})
		if len(refunds) > 0 {
			k.add(Discrepancy{Kind: DiscrepancyRefundedTwice, Mode: o.Mode, Asset: o.PaymentAsset, OrderID: o.ID, RefundIDs: refundIDs,
				Detail: fmt.Sprintf("order %s is recorded refunded by hand and has refunds of the same money", o.Number)})
			return
		}
		l.SentByHand = l.SentByHand.Add(owed)
	case len(refunds) == 0 && !o.Status.Final():
		l.Pending = l.Pending.Add(owed) // its refunds are created as it closes
	case len(refunds) == 0:
		l.OwedByHand = l.OwedByHand.Add(owed)
	case !refunded.Equal(owed):
		k.add(Discrepancy{Kind: DiscrepancyOrderRefundsMismatch, Mode: o.Mode, Asset: o.PaymentAsset, OrderID: o.ID, RefundIDs: refundIDs,
			Detail: fmt.Sprintf("order %s owes back %s, its refunds add up to %s", o.Number, owed, refunded)})
	}
}

// dueWithNoRefund places payments of one order due back whole with no
// refund: owed by hand once the order is closed (recorded before refunds
// were paid out: an operator's to send, payments list, mark-refunded),
// pending while it is open (its run creates their refunds as it closes).
func (k *Bookkeeper) dueWithNoRefund(ps []BookPayment, closed bool) {
	for _, p := range ps {
		l := k.ledger(p.Mode, p.Asset)
		if closed {
			l.OwedByHand = l.OwedByHand.Add(p.Amount)
		} else {
			l.Pending = l.Pending.Add(p.Amount)
		}
	}
}

// transactions lists each transaction hash claimed twice: a payout counts
// for one refund (or one record by hand) only.
func (k *Bookkeeper) transactions() {
	by := map[string][]hashClaim{}
	var order []string
	for _, c := range k.hashes {
		h := strings.ToLower(strings.TrimSpace(c.hash))
		if h == "" {
			continue
		}
		if by[h] == nil {
			order = append(order, h)
		}
		by[h] = append(by[h], c)
	}
	for _, h := range order {
		cs := by[h]
		if len(cs) < 2 {
			continue
		}
		d := Discrepancy{Kind: DiscrepancyTransactionReused, Mode: cs[0].mode, Asset: cs[0].asset}
		var whats []string
		for _, c := range cs {
			whats = append(whats, c.what)
			if c.refund != "" {
				d.RefundIDs = append(d.RefundIDs, c.refund)
			}
			if c.payment != "" {
				d.PaymentIDs = append(d.PaymentIDs, c.payment)
			}
			if c.order != "" && d.OrderID == "" {
				d.OrderID = c.order
			}
		}
		d.Detail = fmt.Sprintf("transaction %s is claimed by %s", h, strings.Join(whats, ", "))
		k.add(d)
	}
}

func idsOf(refunds []Refund) []string {
	var ids []string
	for _, r := range refunds {
		ids = append(ids, r.ID)
	}
	return ids
}
