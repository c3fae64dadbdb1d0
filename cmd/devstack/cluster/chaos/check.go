package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// Invariant is one row of the table: what must be 0, how many broke it,
// and up to a few examples.
type Invariant struct {
	Name     string
	Count    int
	Examples []string
}

// Report is the outcome of a run.
type Report struct {
	Invariants []Invariant
	// Figures are printed under the table, in order.
	Figures [][2]string
	Kills   []killRecord
	// Unplanned lists components that died or stayed unhealthy without
	// being killed.
	Unplanned []string
	// Alerts were pending or firing on the cluster's Prometheus during
	// the run (alerts.go); times are after Began.
	Alerts             []AlertSpan
	AlertWait          time.Duration
	Began              time.Time
	LoadTime, WallTime time.Duration
	Log                []string
}

// Failed says whether an invariant is not 0.
func (rep *Report) Failed() bool {
	for _, inv := range rep.Invariants {
		if inv.Count != 0 {
			return true
		}
	}
	return false
}

// Print writes the table (Markdown, as docs/reliability.md shows it) and
// the figures.
func (rep *Report) Print(w io.Writer) {
	fmt.Fprintln(w, "| Invariant | Count | Must be | Result |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	for _, inv := range rep.Invariants {
		res := "pass"
		if inv.Count != 0 {
			res = "FAIL"
		}
		fmt.Fprintf(w, "| %s | %d | 0 | %s |\n", inv.Name, inv.Count, res)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Figure | Value |")
	fmt.Fprintln(w, "|---|---:|")
	for _, f := range rep.Figures {
		fmt.Fprintf(w, "| %s | %s |\n", f[0], f[1])
	}
	for _, inv := range rep.Invariants {
		if inv.Count != 0 {
			fmt.Fprintf(w, "\n%s (%d), e.g.:\n  %s\n", inv.Name, inv.Count, strings.Join(inv.Examples, "\n  "))
		}
	}
	fmt.Fprintln(w)
	if len(rep.Alerts) == 0 {
		fmt.Fprintln(w, "No alert was pending or fired during the run.")
	} else {
		printAlerts(w, rep.Alerts, rep.Began, rep.AlertWait)
	}
	if len(rep.Unplanned) > 0 {
		fmt.Fprintf(w, "\nComponents that died or stayed unhealthy without being killed:\n  %s\n", strings.Join(rep.Unplanned, "\n  "))
	}
}

// alerts records the run's alerts and the invariant that each one whose
// window fits in the wait resolved: one still firing once the cluster has
// recovered would page an operator about a failure that is over, or one
// that is not.
func (rep *Report) alerts(spans []AlertSpan, began time.Time, wait time.Duration) {
	rep.Alerts, rep.Began, rep.AlertWait = spans, began, wait
	inv := Invariant{Name: "alerts still firing after the run (of those reading windows within the wait)"}
	for _, s := range spans {
		if s.Firing && !s.Outlasts(wait) {
			inv.Count++
			inv.Examples = append(inv.Examples, s.Name+" {"+s.Labels+"}")
		}
	}
	rep.Invariants = append(rep.Invariants, inv)
}

func (rep *Report) figure(name, format string, args ...any) {
	rep.Figures = append(rep.Figures, [2]string{name, fmt.Sprintf(format, args...)})
}

// dbOrder is an order row as the checks read it.
type dbOrder struct {
	id, cartID, mode, status, paymentStatus, supplierRef string
	expiresAt                                            time.Time
	ordered                                              bool // has its "ordered" step
	payments                                             int  // payments attached
	paidAt, deliveredAt                                  *time.Time
}

// readOrders reads every order of the cluster's app database (the
// cluster is the run's own: every order in it is the run's).
func (r *run) readOrders(ctx context.Context) (map[string]*dbOrder, error) {
	conn, err := pgx.Connect(ctx, r.c.PostgresURL(cluster.AppDB))
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `
		SELECT o.id, o.cart_id, o.mode, o.status, o.payment_status, o.supplier_ref, o.payment_expires_at,
		       EXISTS (SELECT 1 FROM order_steps s WHERE s.order_id = o.id AND s.name = 'ordered'),
		       (SELECT count(*) FROM payments p WHERE p.order_id = o.id),
		       (SELECT reached_at FROM order_steps s WHERE s.order_id = o.id AND s.name = 'paid'),
		       (SELECT reached_at FROM order_steps s WHERE s.order_id = o.id AND s.name = 'delivered')
		FROM orders o`)
	if err != nil {
		return nil, err
	}
	out := map[string]*dbOrder{}
	for rows.Next() {
		var o dbOrder
		if err := rows.Scan(&o.id, &o.cartID, &o.mode, &o.status, &o.paymentStatus, &o.supplierRef, &o.expiresAt, &o.ordered, &o.payments, &o.paidAt, &o.deliveredAt); err != nil {
			return nil, err
		}
		out[o.id] = &o
	}
	return out, rows.Err()
}

func final(status string) bool {
	return status == string(models.OrderDelivered) || status == string(models.OrderCancelled) || status == string(models.OrderFailed)
}

// settle waits until every acknowledged order has ended (delivered,
// cancelled or failed), or Settle past the latest payment deadline.
func (r *run) settle(ctx context.Context) error {
	var deadline time.Time
	lastLog := time.Time{}
	for {
		orders, err := r.readOrders(ctx)
		if err != nil {
			return fmt.Errorf("reading orders: %w", err)
		}
		open, byStatus := 0, map[string]int{}
		for _, o := range r.orders {
			if o.orderID == "" {
				continue
			}
			row, ok := orders[o.orderID]
			if !ok {
				continue // missing: the checks count it
			}
			byStatus[row.status]++
			if !final(row.status) {
				open++
			}
			if d := row.expiresAt.Add(r.opts.Settle); d.After(deadline) {
				deadline = d
			}
		}
		if open == 0 {
			r.logf("every acknowledged order has ended: %v", byStatus)
			return nil
		}
		if time.Now().After(deadline) {
			r.logf("settle deadline passed with %d orders open: %v", open, byStatus)
			return nil
		}
		if time.Since(lastLog) > 15*time.Second {
			r.logf("waiting for %d orders to end (deadline in %v): %v", open, time.Until(deadline).Round(time.Second), byStatus)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// check computes the invariants and the figures.
func (r *run) check(ctx context.Context) error {
	orders, err := r.readOrders(ctx)
	if err != nil {
		return fmt.Errorf("reading orders: %w", err)
	}
	tc, err := client.DialContext(ctx, client.Options{
		HostPort:  fmt.Sprintf("127.0.0.1:%d", r.c.Ports().Frontend),
		Namespace: cluster.Namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return fmt.Errorf("dialling Temporal: %w", err)
	}
	defer tc.Close()

	var acked, paid, unpaid, failAtZinc []*order
	ackedIDs := map[string]bool{}
	for _, o := range r.orders {
		if o.orderID == "" {
			continue
		}
		acked = append(acked, o)
		ackedIDs[o.orderID] = true
		switch {
		case o.unpaid, o.kind == liveLate: // unpaid within the window
			unpaid = append(unpaid, o)
		case o.kind == liveFailed:
			failAtZinc = append(failAtZinc, o)
		case o.paid:
			paid = append(paid, o)
		}
	}

	// 1. Acknowledged but missing: no row, or the API does not find it.
	apiStatus := r.readThroughAPI(ctx, acked)
	missing := Invariant{Name: "orders acknowledged by a 2xx but missing"}
	apiDiffers := 0
	for _, o := range acked {
		row, ok := orders[o.orderID]
		st, found := apiStatus[o.orderID]
		switch {
		case !ok:
			missing.add(o.orderID + ": no row in the database")
		case !found:
			missing.add(o.orderID + ": GET answers " + st)
		case st != row.status:
			apiDiffers++
		}
	}

	// 2. Carts with two orders (the schema's unique cart_id forbids it; a
	// broken migration or a retry path around it would not).
	twoOrders := Invariant{Name: "carts with two orders"}
	byCart := map[string][]string{}
	for _, o := range orders {
		byCart[o.cartID] = append(byCart[o.cartID], o.id)
	}
	for cart, ids := range byCart {
		if len(ids) > 1 {
			twoOrders.add(cart + ": " + strings.Join(ids, ", "))
		}
	}

	// 3. Paid (the helper answered 201 matched, or paid on Horizon in
	// full or more) but not delivered; paid for a product Zinc finds out
	// of stock but not failed.
	notDelivered := Invariant{Name: "paid orders not delivered"}
	for _, o := range paid {
		if row, ok := orders[o.orderID]; ok && row.status != string(models.OrderDelivered) {
			notDelivered.add(fmt.Sprintf("%s (%s): %s (payment %s)", o.orderID, o.kindName(), row.status, row.paymentStatus))
		}
	}
	notFailed := Invariant{Name: "live orders out of stock at Zinc not failed"}
	for _, o := range failAtZinc {
		if row, ok := orders[o.orderID]; ok && (!o.paid || row.status != string(models.OrderFailed)) {
			notFailed.add(fmt.Sprintf("%s: %s (payment %s, paid %t)", o.orderID, row.status, row.paymentStatus, o.paid))
		}
	}

	// 4. More than one fulfilment: the sandbox fulfiller keeps no record
	// of its own, so the placements are read from each order's workflow
	// history (PlaceOrder activities scheduled, by attempt number: a
	// second attempt number is a second purchase; a retried activity of
	// the same attempt is the same, idempotent placement) and from the
	// order row (supplier_ref must be the first placement's SBX-<id>, or
	// for a live order the one order Zinc's test server holds for it).
	hist, err := r.histories(ctx, tc, orders)
	if err != nil {
		return err
	}
	placeRetries := 0
	var retried []string
	retriedBy := map[string]int{} // activity type and why -> count
	for _, f := range hist {
		placeRetries += f.placeRetries
		retried = append(retried, f.retried...)
		for _, r := range f.retried {
			typ, rest, _ := strings.Cut(r, "\t")
			_, why, _ := strings.Cut(rest, "previous attempt: ")
			if len(why) > 60 {
				why = why[:60] + "…"
			}
			retriedBy[typ+" ("+why+")"]++
		}
	}
	slices.Sort(retried)
	twoFulfilments := Invariant{Name: "orders with more than one fulfilment"}
	placed := 0
	zincOrders := r.zincOrders()
	for id, o := range orders {
		n := hist[id].placements
		if n > 0 {
			placed++
		}
		want := "SBX-" + id
		if o.mode == string(models.ModeLive) {
			zs := zincOrders[id]
			if len(zs) > 1 {
				twoFulfilments.add(fmt.Sprintf("%s: %d orders at Zinc: %s", id, len(zs), strings.Join(zs, ", ")))
			}
			want = strings.Join(zs, ", ")
		}
		switch {
		case n > 1:
			twoFulfilments.add(fmt.Sprintf("%s: %d placements", id, n))
		case n == 1 && o.supplierRef != want:
			twoFulfilments.add(fmt.Sprintf("%s: supplier_ref %q, placed as %q", id, o.supplierRef, want))
		case n == 0 && (o.ordered || o.supplierRef != ""):
			twoFulfilments.add(fmt.Sprintf("%s: ordered without a PlaceOrder in its history", id))
		}
	}

	// 5. Every order row has its workflow, every order workflow its row.
	wfs, running, err := listOrderWorkflows(ctx, tc)
	if err != nil {
		return err
	}
	noWorkflow := Invariant{Name: "order rows without a workflow"}
	visibilityLag := 0
	for id := range orders {
		if wfs[models.WorkflowID(id)] {
			continue
		}
		_, err := tc.DescribeWorkflowExecution(ctx, models.WorkflowID(id), "")
		switch {
		case err == nil:
			visibilityLag++ // exists; the listing has not caught up
		case isNotFound(err):
			noWorkflow.add(id)
		default:
			return fmt.Errorf("describing %s: %w", models.WorkflowID(id), err)
		}
	}
	noOrder := Invariant{Name: "workflows without an order row"}
	for wf := range wfs {
		if _, ok := orders[strings.TrimPrefix(wf, "order-")]; !ok {
			noOrder.add(wf)
		}
	}

	// 6. Unpaid orders must end cancelled at their deadline.
	notCancelled := Invariant{Name: "unpaid orders not cancelled after the window"}
	for _, o := range unpaid {
		if row, ok := orders[o.orderID]; ok && row.status != string(models.OrderCancelled) {
			notCancelled.add(fmt.Sprintf("%s: %s", o.orderID, row.status))
		}
	}

	// 7. One payment request (one Idempotency-Key, retried) must be one
	// payment: a second one attached to the order is money taken twice.
	paidTwice := Invariant{Name: "orders paid more than once by one (retried) payment request"}
	for _, o := range r.orders {
		if o.orderID == "" || o.unpaid {
			continue
		}
		if row, ok := orders[o.orderID]; ok && row.payments > 1 {
			paidTwice.add(fmt.Sprintf("%s: %d payments (payment %s)", o.orderID, row.payments, row.paymentStatus))
		}
	}

	// 8. The Postgres outage: 503 in the envelope within the bound, and
	// the replica answers again without a restart.
	pgBad := Invariant{Name: "requests during the Postgres outage not answered 503 in the envelope within the bound"}
	pgRecover := Invariant{Name: "API replica not serving again after Postgres came back, without a restart"}
	if r.pg.Ran {
		for _, b := range r.pg.Bad {
			pgBad.add(b)
		}
		if !r.pg.Recovered {
			pgRecover.add(r.pg.Replica + ": no 200 within 2 minutes of Postgres being back")
		}
		if r.pg.ReplicaRestarted {
			pgRecover.add(r.pg.Replica + ": its process changed")
		}
	}

	rep := &r.report
	rep.Invariants = []Invariant{missing, twoOrders, notDelivered, twoFulfilments, paidTwice, noWorkflow, noOrder, notCancelled}
	if r.liveAPI != nil {
		rep.Invariants = append(rep.Invariants, notFailed)
	}
	if r.pg.Ran {
		rep.Invariants = append(rep.Invariants, pgBad, pgRecover)
	}
	// 9. Money back: every refund owed sent, once, and the books balance.
	var money [][2]string
	if r.liveAPI != nil {
		if money, err = r.checkMoney(ctx); err != nil {
			return err
		}
	}

	count := func(status models.OrderStatus) int {
		n := 0
		for _, o := range orders {
			if o.status == string(status) {
				n++
			}
		}
		return n
	}
	notAcked := 0
	for id := range orders {
		if !ackedIDs[id] {
			notAcked++
		}
	}
	var gaveUp []string
	for _, o := range r.orders {
		if o.failure != "" {
			gaveUp = append(gaveUp, fmt.Sprintf("order #%d: %s", o.index, o.failure))
		}
	}
	s := r.api.stats
	rep.figure("orders attempted (clients)", "%d", len(r.orders))
	rep.figure("orders acknowledged (2xx)", "%d", len(acked))
	rep.figure("paid (payment helper answered 201 matched, or live and paid in full in time)", "%d", len(paid))
	rep.figure("left unpaid on purpose (live: or paid after the deadline)", "%d", len(unpaid))
	rep.figure("order rows in the database", "%d", len(orders))
	rep.figure("order rows no client was told of", "%d", notAcked)
	rep.figure("delivered / cancelled / failed / other", "%d / %d / %d / %d", count(models.OrderDelivered), count(models.OrderCancelled),
		count(models.OrderFailed), len(orders)-count(models.OrderDelivered)-count(models.OrderCancelled)-count(models.OrderFailed))
	rep.figure("orders placed with the sandbox fulfiller or Zinc (PlaceOrder in history)", "%d", placed)
	rep.figure("PlaceOrder activity retries (same placement)", "%d", placeRetries)
	var byKind []string
	for k, n := range retriedBy {
		byKind = append(byKind, fmt.Sprintf("%s × %d", k, n))
	}
	slices.Sort(byKind)
	rep.figure("activities that needed a retry (order histories)", "%d %s", len(retried), strings.Join(byKind, "; "))
	p50, p99, slowest := paidToDelivered(orders)
	rep.figure("paid → delivered (steps' times): median / p99 / max", "%.1fs / %.1fs / %.1fs", p50.Seconds(), p99.Seconds(), slowest.Seconds())
	rep.figure("payments answered other than matched", "%d", s.paymentsNotCredited.Load())
	rep.figure("client operations given up or refused (4xx)", "%d", len(gaveUp))
	rep.figure("requests sent by the load", "%d", s.requests.Load())
	rep.figure("client retries (same Idempotency-Key)", "%d", s.retries.Load())
	rep.figure("network errors (connection refused/reset, timeout)", "%d", s.netErrors.Load())
	rep.figure("503s seen by the load", "%d", s.status503.Load())
	rep.figure("other 5xx seen by the load", "%d", s.status5xxOther.Load())
	rep.figure("5xx without the error envelope", "%d", s.notEnvelope5xx.Load())
	rep.figure("409 idempotency_key_in_use (waited for the takeover)", "%d", s.inUse.Load())
	if r.pg.Ran {
		rep.figure("Postgres outage: probes sent while down / answered 503 in the envelope / 200 once Postgres was starting", "%d / %d / %d", r.pg.OutageAnswers, r.pg.Outage503, r.pg.Outage200)
		rep.figure("Postgres outage: slowest 503 (bound)", "%v (%v)", r.pg.Max503.Round(time.Millisecond), r.opts.RequestTimeout+r.opts.Slack)
		rep.figure("Postgres outage: replica's first 200 after Postgres was healthy", "%.1fs (%s, %d × 503 before)", r.pg.Recovery.Seconds(), r.pg.Replica, r.pg.After503)
	}
	for _, k := range rep.Kills {
		when := "during the load"
		if !k.DuringLoad {
			when = "after the load"
		}
		rep.figure("kill -9 "+k.Name, "at %.1fs (%s), healthy again after %.1fs", k.At.Seconds(), when, k.Down.Seconds())
	}
	rep.figure("components that died without being killed", "%d", len(rep.Unplanned))
	rep.figure("order workflows listed / still running", "%d / %d", len(wfs), running)
	rep.figure("orders found by describe but not yet listed (visibility lag)", "%d", visibilityLag)
	rep.figure("API status differs from the database", "%d", apiDiffers)
	rep.Figures = append(rep.Figures, money...)
	rep.figure("load time", "%.1fs", rep.LoadTime.Seconds())
	rep.figure("wall time (load, settle, checks)", "%.1fs", time.Since(r.began).Seconds())
	if len(retried) > 0 {
		r.logf("activities that needed a retry:\n  %s", strings.Join(retried[:min(len(retried), 20)], "\n  "))
	}
	if len(gaveUp) > 0 {
		r.logf("client operations that did not complete:\n  %s", strings.Join(gaveUp[:min(len(gaveUp), 20)], "\n  "))
	}
	return nil
}

func (inv *Invariant) add(example string) {
	inv.Count++
	if len(inv.Examples) < 10 {
		inv.Examples = append(inv.Examples, example)
	}
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// readThroughAPI reads every acknowledged order through the API,
// alternating replicas; it returns each order's status, or for one not
// found (after retries of failed requests) the answer instead.
func (r *run) readThroughAPI(ctx context.Context, acked []*order) map[string]string {
	out := make(map[string]string, len(acked))
	found := map[string]bool{}
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				o := acked[i]
				api := r.api
				if o.kind != "" {
					api = r.liveAPI // a live order is found with a live key only
				}
				var a answer
				var err error
				for attempt := range 5 {
					a, err = api.do(ctx, http.MethodGet, api.bases[(i+attempt)%2]+"/v1/orders/"+o.orderID, "", nil)
					if err == nil && a.status < 500 {
						break
					}
					time.Sleep(time.Second)
				}
				mu.Lock()
				if err == nil && a.status == http.StatusOK {
					ord, _ := a.body["order"].(map[string]any)
					out[o.orderID], _ = ord["status"].(string)
					found[o.orderID] = true
				} else {
					out[o.orderID] = describe("GET", a, err)
				}
				mu.Unlock()
			}
		})
	}
	for i := range acked {
		next <- i
	}
	close(next)
	wg.Wait()
	for id := range out {
		if !found[id] {
			delete(out, id) // the caller reads the answer from missing
		}
	}
	return out
}

// historyFacts is what the checks read from one order workflow's history.
type historyFacts struct {
	// placements is the number of distinct PlaceOrder attempt numbers.
	placements int
	// placeRetries counts PlaceOrder activity retries (same placement).
	placeRetries int
	// retried describes each activity that ran more than once, with the
	// failure of its previous attempt (a timeout when a kill lost it):
	// the history keeps only the attempt that completed, whose started
	// event carries the attempt number and the last failure.
	retried []string
}

// histories reads every order workflow's history, 8 at a time.
func (r *run) histories(ctx context.Context, tc client.Client, orders map[string]*dbOrder) (map[string]historyFacts, error) {
	ids := make([]string, 0, len(orders))
	for id := range orders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make(map[string]historyFacts, len(ids))
	var mu sync.Mutex
	var firstErr error
	next := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id := range next {
				f, err := historyOf(ctx, tc, id)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[id] = f
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return out, firstErr
}

// placementAttempt reads a PlaceOrder's placement attempt from its input:
// one input struct ({"OrderID", "Attempt"}) in runs from baseline-2026-12,
// the order id then the attempt, positional, before.
func placementAttempt(input *commonpb.Payloads) (int, error) {
	dc := converter.GetDefaultDataConverter()
	ps := input.GetPayloads()
	if len(ps) == 1 {
		var in struct{ Attempt int }
		err := dc.FromPayload(ps[0], &in)
		return in.Attempt, err
	}
	var id string
	var attempt int
	err := dc.FromPayloads(input, &id, &attempt)
	return attempt, err
}

func historyOf(ctx context.Context, tc client.Client, orderID string) (historyFacts, error) {
	var f historyFacts
	it := tc.GetWorkflowHistory(ctx, models.WorkflowID(orderID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	attempts := map[int]bool{}
	scheduled := map[int64]string{} // event id -> activity type
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			if isNotFound(err) {
				return historyFacts{}, nil // counted by the workflow check
			}
			return historyFacts{}, fmt.Errorf("history of order %s: %w", orderID, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
			if a.GetActivityType().GetName() == "PlaceOrder" {
				attempt, err := placementAttempt(a.GetInput())
				if err != nil {
					return historyFacts{}, fmt.Errorf("order %s: PlaceOrder input: %w", orderID, err)
				}
				attempts[attempt] = true
			}
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
			typ := scheduled[a.GetScheduledEventId()]
			if typ == "PlaceOrder" {
				f.placeRetries += int(a.GetAttempt()) - 1
			}
			why := a.GetLastFailure().GetMessage()
			if t := a.GetLastFailure().GetTimeoutFailureInfo(); t != nil {
				why = t.GetTimeoutType().String() + " timeout"
			}
			f.retried = append(f.retried, fmt.Sprintf("%s\t%s %s: attempt %d, previous attempt: %s",
				typ, orderID, ev.GetEventTime().AsTime().UTC().Format("15:04:05.000"), a.GetAttempt(), why))
		}
	}
	f.placements = len(attempts)
	return f, nil
}

// listOrderWorkflows lists every Order workflow of the namespace, and how
// many still run.
func listOrderWorkflows(ctx context.Context, tc client.Client) (map[string]bool, int, error) {
	out := map[string]bool{}
	running := 0
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: cluster.Namespace, PageSize: 1000, NextPageToken: token,
			Query: fmt.Sprintf("WorkflowType = %q", workflows.OrderWorkflowName),
		})
		if err != nil {
			return nil, 0, fmt.Errorf("listing order workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			out[e.GetExecution().GetWorkflowId()] = true
			if e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				running++
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, running, nil
		}
	}
}

// paidToDelivered returns the median, 99th percentile and maximum time
// from an order's paid step to its delivered step: with 200 ms steps it is
// about a second, and an activity lost in a kill shows as its timeout.
func paidToDelivered(orders map[string]*dbOrder) (p50, p99, slowest time.Duration) {
	var ds []time.Duration
	for _, o := range orders {
		if o.paidAt != nil && o.deliveredAt != nil {
			ds = append(ds, o.deliveredAt.Sub(*o.paidAt))
		}
	}
	return percentiles(ds)
}
