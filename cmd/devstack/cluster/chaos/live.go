package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/activities/stellar/horizontest"
	"github.com/memocart/memocart/activities/zinc/zinctest"
	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/models"
)

// liveKind is what a live order of the load does with its money.
type liveKind string

// The live orders' kinds: each but exact owes a refund, paid out to the
// destination the client set through the API.
const (
	liveExact    liveKind = "exact"    // paid its amount: bought with Zinc and delivered
	liveOverpaid liveKind = "overpaid" // paid overpay more: delivered, the excess refunded
	liveLate     liveKind = "late"     // paid its amount after the deadline: cancelled, the payment refunded
	liveFailed   liveKind = "failed"   // paid, then out of stock at Zinc: failed, everything refunded
)

// overpay is what an overpaid live order is paid beyond its amount.
var overpay = decimal.RequireFromString("1.25")

// owesRefund says whether an order of kind k is owed money back.
func (k liveKind) owesRefund() bool { return k == liveOverpaid || k == liveLate || k == liveFailed }

// productURL is the eBay listing a live order buys (the Browse API test
// server prices any well-formed item id; Zinc's test server finds
// OutOfStockItem out of stock).
func (o *order) productURL() string {
	if o.kind == liveFailed {
		return "https://www.ebay.com/itm/" + zinctest.OutOfStockItem
	}
	return fmt.Sprintf("https://www.ebay.com/itm/3%011d", o.index)
}

// refundOwed is what the live order is owed back, once paid.
func (o *order) refundOwed() decimal.Decimal {
	if o.kind == liveOverpaid {
		return overpay
	}
	return decimal.RequireFromString(o.amount)
}

// chaosPayer is the account the load's live payments come from.
var chaosPayer = horizontest.AccountID("chaos payer")

// destinationOf is the account order i's refunds go to: one per order,
// so a payout counted on the Horizon test server names its refund.
func destinationOf(seed uint64, i int) string {
	return horizontest.AccountID(fmt.Sprintf("chaos %d refund destination %d", seed, i))
}

// oneLive takes live order o through cart and order with the live key,
// creates its refund destination on the Horizon test server and sets it
// through the API, and pays it on Horizon by its memo as its kind says (a
// late one from a goroutine of its own, once the order is cancelled).
func (r *run) oneLive(ctx context.Context, o *order, w int) {
	a, err := r.liveAPI.post(ctx, w%2, "/v1/carts", map[string]any{
		"items": []map[string]any{{"product_url": o.productURL(), "quantity": 1}}, "ship_to_country": "US",
	})
	if err != nil || a.status != http.StatusCreated {
		o.failure = describe("live cart", a, err)
		return
	}
	cart, _ := a.body["cart"].(map[string]any)
	o.cartID, _ = cart["id"].(string)
	a, err = r.liveAPI.post(ctx, w%2+1, "/v1/orders", map[string]any{
		"cart_id": o.cartID, "customer_email": fmt.Sprintf("chaos-%d@example.com", o.index), "payment_asset": "USDC",
		"shipping_address": shipTo,
	})
	if err != nil || (a.status != http.StatusCreated && a.status != http.StatusOK) {
		o.failure = describe("live order", a, err)
		return
	}
	ord, _ := a.body["order"].(map[string]any)
	o.number, _ = ord["number"].(string)
	o.amount, _ = ord["payment_amount"].(string)
	o.orderID, _ = ord["id"].(string)

	o.dest = destinationOf(r.opts.Seed, o.index)
	if err := r.opts.Live.Horizon.SetAccount(horizontest.Account{ID: o.dest, XLM: "5", TrustUSDC: true}); err != nil {
		o.failure = "refund destination: " + err.Error()
		return
	}
	a, err = r.liveAPI.post(ctx, w%2, "/v1/orders/"+o.orderID+"/refund_destination", map[string]any{
		"address": o.dest, "memo_type": "text", "memo": fmt.Sprintf("chaos %d", o.index),
	})
	if err != nil || a.status != http.StatusOK {
		o.failure = describe("refund destination", a, err)
		return
	}
	// The order counts a payment when its signal reaches the workflow: one
	// sent close to the deadline may reach it after, while the watcher
	// waits out its worker's kill. An order whose client took so long is
	// paid late on purpose.
	if exp, err := time.Parse(time.RFC3339, fmt.Sprint(ord["payment_expires_at"])); o.kind != liveLate &&
		(err != nil || time.Until(exp) < r.inTimeMargin()) {
		o.kind, o.lateByClient = liveLate, true
	}
	switch o.kind {
	case liveLate:
		r.late.Go(func() { r.payLate(ctx, o) })
	case liveOverpaid:
		r.payLive(o, decimal.RequireFromString(o.amount).Add(overpay))
	default:
		r.payLive(o, decimal.RequireFromString(o.amount))
	}
}

// inTimeMargin is how much of its window a live order must have left when
// its client pays it in time: the Stellar watcher's heartbeat timeout
// (30 s, then it restarts on the other worker and catches up) with room to
// spare, or three quarters of a shorter window.
func (r *run) inTimeMargin() time.Duration {
	return min(45*time.Second, r.opts.PaymentWindow*3/4)
}

// payLive sends amount USDC to the receiving account with the order's
// number as memo, as a payer's wallet does.
func (r *run) payLive(o *order, amount decimal.Decimal) {
	r.opts.Live.Horizon.AddPayment(horizontest.Payment{From: chaosPayer, To: testservers.Account,
		AssetType: "credit_alphanum4", AssetCode: "USDC", AssetIssuer: r.opts.Live.USDCIssuer,
		Amount: amount.String(), MemoType: "text", Memo: o.number})
	o.paid = true
}

// payLate waits until the order is cancelled at its deadline, then pays
// it in full: a payment the service must send back.
func (r *run) payLate(ctx context.Context, o *order) {
	giveUp := time.Now().Add(r.opts.PaymentWindow + r.opts.Settle)
	for i := 0; time.Now().Before(giveUp); i++ {
		a, err := r.liveAPI.do(ctx, http.MethodGet, r.liveAPI.bases[i%2]+"/v1/orders/"+o.orderID, "", nil)
		if err == nil && a.status == http.StatusOK {
			ord, _ := a.body["order"].(map[string]any)
			if st, _ := ord["status"].(string); st == string(models.OrderCancelled) {
				r.payLive(o, decimal.RequireFromString(o.amount))
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	o.failure = "late payment: the order was not cancelled by its deadline and the settle time"
}

// dbRefund is a refund row as the checks read it.
type dbRefund struct {
	id, orderID, mode, reason, status, asset, dest, txHash string
	amount                                                 decimal.Decimal
	createdAt                                              time.Time
	approvedAt, sentAt                                     *time.Time
}

// readRefunds reads every refund of the cluster's app database.
func (r *run) readRefunds(ctx context.Context) ([]dbRefund, error) {
	return readRefunds(ctx, r.c)
}

func readRefunds(ctx context.Context, c *cluster.Cluster) ([]dbRefund, error) {
	conn, err := pgx.Connect(ctx, c.PostgresURL(cluster.AppDB))
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `
		SELECT id, COALESCE(order_id, ''), mode, reason, status, asset, destination_address, transaction_hash,
		       amount::text, created_at, approved_at, sent_at
		FROM refunds ORDER BY created_at`)
	if err != nil {
		return nil, err
	}
	var out []dbRefund
	for rows.Next() {
		var f dbRefund
		var amount string
		if err := rows.Scan(&f.id, &f.orderID, &f.mode, &f.reason, &f.status, &f.asset, &f.dest, &f.txHash, &amount, &f.createdAt, &f.approvedAt, &f.sentAt); err != nil {
			return nil, err
		}
		if f.amount, err = decimal.NewFromString(amount); err != nil {
			return nil, fmt.Errorf("refund %s: amount %q: %w", f.id, amount, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// settleRefunds waits, after the orders have ended, for the late payments
// to be sent, then for every live order owed money to have its refunds
// settled, or Settle.
func (r *run) settleRefunds(ctx context.Context) error {
	r.late.Wait()
	deadline := time.Now().Add(r.opts.Settle)
	lastLog := time.Time{}
	for {
		refunds, err := r.readRefunds(ctx)
		if err != nil {
			return fmt.Errorf("reading refunds: %w", err)
		}
		byOrder := map[string][]dbRefund{}
		for _, f := range refunds {
			byOrder[f.orderID] = append(byOrder[f.orderID], f)
		}
		open, byStatus := 0, map[string]int{}
		for _, o := range r.orders {
			if !o.kind.owesRefund() || !o.paid {
				continue
			}
			rs := byOrder[o.orderID]
			if len(rs) == 0 {
				open++
				byStatus["not created"]++
			}
			for _, f := range rs {
				byStatus[f.status]++
				if !models.RefundStatus(f.status).Settled() {
					open++
				}
			}
		}
		if open == 0 {
			r.logf("every refund owed is settled: %v", byStatus)
			return nil
		}
		if time.Now().After(deadline) {
			r.logf("settle deadline passed with %d refunds owed open: %v", open, byStatus)
			return nil
		}
		if time.Since(lastLog) > 15*time.Second {
			r.logf("waiting for %d refunds owed (deadline in %v): %v", open, time.Until(deadline).Round(time.Second), byStatus)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// refundsNotSent is the invariant "every refund owed ends sent": each live
// order owed money back has exactly one refund, sent, for what it is
// owed; no order that owes nothing has one.
func refundsNotSent(orders []*order, refunds []dbRefund) (owed, unowed Invariant) {
	owed = Invariant{Name: "live orders owed money back without one refund sent for what is owed"}
	unowed = Invariant{Name: "refunds of orders that owe nothing back"}
	byOrder := map[string][]dbRefund{}
	for _, f := range refunds {
		byOrder[f.orderID] = append(byOrder[f.orderID], f)
	}
	for _, o := range orders {
		if o.orderID == "" {
			continue
		}
		rs := byOrder[o.orderID]
		if !o.kind.owesRefund() || !o.paid {
			for _, f := range rs {
				unowed.add(fmt.Sprintf("%s (%s order %s): %s %s %s", f.id, o.kindName(), o.orderID, f.reason, f.amount, f.status))
			}
			continue
		}
		switch {
		case len(rs) == 0:
			owed.add(fmt.Sprintf("%s (%s): no refund", o.orderID, o.kind))
		case len(rs) > 1:
			owed.add(fmt.Sprintf("%s (%s): %d refunds", o.orderID, o.kind, len(rs)))
		case rs[0].status != string(models.RefundSent):
			owed.add(fmt.Sprintf("%s (%s): refund %s %s", o.orderID, o.kind, rs[0].id, rs[0].status))
		case !rs[0].amount.Equal(o.refundOwed()):
			owed.add(fmt.Sprintf("%s (%s): refund %s of %s, owed %s", o.orderID, o.kind, rs[0].id, rs[0].amount, o.refundOwed()))
		}
	}
	return owed, unowed
}

// kindName names an order's kind for a report: live's, or sandbox.
func (o *order) kindName() string {
	if o.kind == "" {
		return "sandbox"
	}
	return "live " + string(o.kind)
}

// paidOtherThanOnce is the invariant "no destination paid twice", counted
// on the Horizon test server's ledger: every successful payment from the
// payout account goes to the destination of a sent refund, each sent live
// refund is paid by exactly one, of its amount, in the transaction it
// records, and no destination receives more than one.
func paidOtherThanOnce(payout string, refunds []dbRefund, ledger []horizontest.Payment) Invariant {
	inv := Invariant{Name: "refund destinations paid other than once (Horizon test server's ledger)"}
	toDest := map[string][]horizontest.Payment{}
	for _, p := range ledger {
		if p.From == payout && p.Successful != nil && *p.Successful {
			toDest[p.To] = append(toDest[p.To], p)
		}
	}
	sentTo := map[string]dbRefund{}
	for _, f := range refunds {
		if f.mode != string(models.ModeLive) || f.status != string(models.RefundSent) {
			continue
		}
		if prev, ok := sentTo[f.dest]; ok {
			inv.add(fmt.Sprintf("%s: refunds %s and %s both sent there", f.dest, prev.id, f.id))
			continue
		}
		sentTo[f.dest] = f
		ps := toDest[f.dest]
		switch {
		case len(ps) != 1:
			inv.add(fmt.Sprintf("%s: refund %s of %s sent, %d payments on the ledger", f.dest, f.id, f.amount, len(ps)))
		case !decimal.RequireFromString(ps[0].Amount).Equal(f.amount):
			inv.add(fmt.Sprintf("%s: refund %s of %s, paid %s", f.dest, f.id, f.amount, ps[0].Amount))
		case ps[0].TxHash != f.txHash:
			inv.add(fmt.Sprintf("%s: refund %s records transaction %s, paid in %s", f.dest, f.id, f.txHash, ps[0].TxHash))
		}
	}
	for dest, ps := range toDest {
		if _, ok := sentTo[dest]; !ok {
			inv.add(fmt.Sprintf("%s: %d payments from the payout account, no refund sent there", dest, len(ps)))
		}
	}
	return inv
}

// zincOrders lists the orders Zinc's test server holds, by the Memocart
// order they were placed for (metadata memocart_order_id).
func (r *run) zincOrders() map[string][]string {
	out := map[string][]string{}
	if r.opts.Live == nil {
		return out
	}
	for _, z := range r.opts.Live.Zinc.Orders() {
		id, _ := z.Metadata["memocart_order_id"].(string)
		out[id] = append(out[id], z.ID)
	}
	return out
}

// checkMoney adds the invariants of the money sent back (refunds owed
// sent, once each, counted on the Horizon test server; the books of both
// modes balanced) and returns the figures of the refunds.
func (r *run) checkMoney(ctx context.Context) ([][2]string, error) {
	refunds, err := r.readRefunds(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading refunds: %w", err)
	}
	h := r.opts.Live.Horizon
	ledger := h.LedgerPayments()
	owed, unowed := refundsNotSent(r.orders, refunds)
	rep := &r.report
	rep.Invariants = append(rep.Invariants, owed, unowed, paidOtherThanOnce(r.opts.Live.Payout, refunds, ledger))
	for _, mode := range []models.Mode{models.ModeLive, models.ModeTest} {
		rep.Invariants = append(rep.Invariants, reconcile(ctx, r.c, r.opts.Memocart, mode))
	}

	kinds, lateByClient := map[liveKind]int{}, 0
	for _, o := range r.orders {
		if o.orderID != "" && o.kind != "" {
			kinds[o.kind]++
		}
		if o.lateByClient {
			lateByClient++
		}
	}
	sent, duringLoad, payouts := 0, 0, 0
	var took []time.Duration
	for _, f := range refunds {
		if f.status == string(models.RefundSent) && f.sentAt != nil {
			sent++
			took = append(took, f.sentAt.Sub(f.createdAt))
			if f.sentAt.Before(r.began.Add(r.report.LoadTime)) {
				duringLoad++
			}
		}
	}
	for _, p := range ledger {
		if p.From == r.opts.Live.Payout && p.Successful != nil && *p.Successful {
			payouts++
		}
	}
	p50, _, slowest := percentiles(took)
	return [][2]string{
		{"live orders acknowledged: exact / overpaid / late / out of stock at Zinc", fmt.Sprintf("%d / %d / %d / %d",
			kinds[liveExact], kinds[liveOverpaid], kinds[liveLate], kinds[liveFailed])},
		{"live orders the client reached the payment of too late, paid late instead", fmt.Sprintf("%d", lateByClient)},
		{"refunds in the database / sent / sent during the load (and its kills)", fmt.Sprintf("%d / %d / %d", len(refunds), sent, duringLoad)},
		{"refund created → sent: median / max", fmt.Sprintf("%.1fs / %.1fs", p50.Seconds(), slowest.Seconds())},
		{"payments from the payout account on the Horizon test server", fmt.Sprintf("%d", payouts)},
		{"transactions submitted to Horizon / refused before a ledger (by code)", fmt.Sprintf("%d / %s", h.Submissions(), rejections(h))},
	}, nil
}

// rejections renders the Horizon test server's refusals by code.
func rejections(h *horizontest.Server) string {
	rs := h.Rejections()
	if len(rs) == 0 {
		return "0"
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(rs)) {
		parts = append(parts, fmt.Sprintf("%s × %d", code, rs[code]))
	}
	return strings.Join(parts, ", ")
}

// reconcile is the invariant "the books balance": `memocart reconcile`
// of the mode against the cluster, as an operator runs it; each
// discrepancy it lists counts, and so does a run that exits non-zero
// without listing one.
func reconcile(ctx context.Context, c *cluster.Cluster, memocart string, mode models.Mode) Invariant {
	inv := Invariant{Name: "memocart reconcile --mode " + string(mode) + ": discrepancies"}
	out, err := command(ctx, c, memocart, "reconcile", "--mode", string(mode), "--json")
	var res struct {
		Discrepancies []struct {
			Kind       string   `json:"kind"`
			Asset      string   `json:"asset"`
			OrderID    string   `json:"order_id"`
			PaymentIDs []string `json:"payment_ids"`
			RefundIDs  []string `json:"refund_ids"`
			Detail     string   `json:"detail"`
		} `json:"discrepancies"`
	}
	if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
		inv.add(fmt.Sprintf("no report (%v): %v", jerr, err))
		return inv
	}
	for _, d := range res.Discrepancies {
		inv.add(fmt.Sprintf("%s %s order %s payments %v refunds %v: %s", d.Kind, d.Asset, d.OrderID, d.PaymentIDs, d.RefundIDs, d.Detail))
	}
	if err != nil && inv.Count == 0 {
		inv.add(err.Error())
	}
	return inv
}

// percentiles returns the median, 99th percentile and maximum of ds.
func percentiles(ds []time.Duration) (p50, p99, slowest time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2], ds[(len(ds)*99)/100], ds[len(ds)-1]
}
