package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/models"
)

// PayoutsOptions configures a payouts measurement.
type PayoutsOptions struct {
	// Refunds is how many refunds are approved at once.
	Refunds int
	// Concurrency is how many clients create the orders owed them.
	Concurrency int
	// Live is the test servers of the cluster's live mode, which must
	// leave live refunds for an operator (MEMOCART_REFUND_AUTO_APPROVE_MAX
	// 0).
	Live *testservers.Servers
	// Memocart is the service binary (the operator's commands).
	Memocart string
	// RequestTimeout is the cluster's MEMOCART_REQUEST_TIMEOUT; Wait
	// bounds each wait (refunds owed, refunds sent).
	RequestTimeout, Wait time.Duration
	// Seed names the refund destinations.
	Seed uint64
	Out  io.Writer
}

// Payouts measures refunds paid out at once across the cluster's workers
// (issue 32, point 5): it creates Refunds live orders, each overpaid on
// the Horizon test server with its refund destination set through the
// API, waits until every refund of the excess awaits an operator's
// approval, approves them all at once (one `memocart refunds approve` each,
// started together), and measures the time until all are sent. The
// report's invariants: every refund sent, once, of its amount, counted on
// the Horizon test server's ledger; no submission answered tx_bad_seq (two
// workers colliding on the payout account's sequence number); the live
// books balanced.
func Payouts(ctx context.Context, c *cluster.Cluster, opts PayoutsOptions) (*Report, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	r := &run{opts: Options{Orders: opts.Refunds, Concurrency: opts.Concurrency, Live: opts.Live, Memocart: opts.Memocart,
		RequestTimeout: opts.RequestTimeout, Seed: opts.Seed, Settle: opts.Wait, Out: opts.Out},
		c: c, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed))}
	r.began = time.Now()
	if err := r.newClients(ctx); err != nil {
		return nil, err
	}
	if err := waitWatcher(ctx, c); err != nil {
		return nil, err
	}
	r.orders = make([]*order, opts.Refunds)
	for i := range r.orders {
		r.orders[i] = &order{index: i, kind: liveOverpaid}
	}
	r.logf("creating %d live orders, each overpaid by %s USDC with its refund destination set", opts.Refunds, overpay)
	r.one(ctx, r.orders[0], 0)
	r.load(ctx)
	for _, o := range r.orders {
		if o.failure != "" {
			return nil, fmt.Errorf("order %d: %s", o.index, o.failure)
		}
	}
	waiting, err := r.waitRefunds(ctx, models.RefundAwaitingApproval)
	if err != nil {
		return nil, err
	}
	r.logf("%d refunds await approval; approving them all at once", len(waiting))

	began := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(waiting))
	for i, f := range waiting {
		wg.Go(func() { _, errs[i] = command(ctx, c, opts.Memocart, "refunds", "approve", f.id) })
	}
	wg.Wait()
	approved := time.Since(began)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.logf("every approve command exited in %.1fs", approved.Seconds())
	sent, err := r.waitRefunds(ctx, models.RefundSent)
	if err != nil {
		return nil, err
	}
	var last, lastApproved time.Time
	var took, afterApproval []time.Duration
	for _, f := range sent {
		if f.sentAt.After(last) {
			last = *f.sentAt
		}
		took = append(took, f.sentAt.Sub(began))
		if f.approvedAt != nil {
			afterApproval = append(afterApproval, f.sentAt.Sub(*f.approvedAt))
			if f.approvedAt.After(lastApproved) {
				lastApproved = *f.approvedAt
			}
		}
	}
	r.logf("every refund sent")

	refunds, err := r.readRefunds(ctx)
	if err != nil {
		return nil, err
	}
	h := opts.Live.Horizon
	owed, unowed := refundsNotSent(r.orders, refunds)
	badSeq := Invariant{Name: "payout submissions answered tx_bad_seq (a sequence collision)"}
	for range h.Rejections()["tx_bad_seq"] {
		badSeq.add("tx_bad_seq")
	}
	rep := &r.report
	rep.Invariants = []Invariant{owed, unowed, paidOtherThanOnce(opts.Live.Payout, refunds, h.LedgerPayments()), badSeq,
		reconcile(ctx, c, opts.Memocart, models.ModeLive)}
	p50, _, slowest := percentiles(took)
	a50, _, aMax := percentiles(afterApproval)
	total := last.Sub(began)
	rep.figure("refunds approved at once", "%d", len(waiting))
	rep.figure("approve commands started together, all exited", "%.2fs", approved.Seconds())
	rep.figure("approve commands started → every refund sent", "%.2fs", total.Seconds())
	rep.figure("approve commands started → a refund sent: median / max", "%.2fs / %.2fs", p50.Seconds(), slowest.Seconds())
	rep.figure("approve commands started → last approval recorded", "%.2fs", lastApproved.Sub(began).Seconds())
	rep.figure("a refund's approval recorded → sent: median / max", "%.2fs / %.2fs", a50.Seconds(), aMax.Seconds())
	rep.figure("refunds sent per second (from the first approve command)", "%.1f", float64(len(sent))/total.Seconds())
	rep.figure("transactions submitted to Horizon / refused before a ledger (by code)", "%d / %s", h.Submissions(), rejections(h))
	by, err := payoutWorkers(ctx, c, sent)
	if err != nil {
		return nil, err
	}
	rep.figure("payouts (SendRefund completed) by worker", "%s", by)
	rep.WallTime = time.Since(r.began)
	rep.Log = r.log
	return rep, nil
}

// waitRefunds waits until every order of the run has one live refund, all
// of them at status, for at most Settle, and returns them.
func (r *run) waitRefunds(ctx context.Context, status models.RefundStatus) ([]dbRefund, error) {
	deadline := time.Now().Add(r.opts.Settle)
	lastLog := time.Now()
	for {
		refunds, err := r.readRefunds(ctx)
		if err != nil {
			return nil, err
		}
		var at []dbRefund
		byStatus := map[string]int{}
		for _, f := range refunds {
			byStatus[f.status]++
			if f.status == string(status) {
				at = append(at, f)
			}
		}
		if len(at) == len(r.orders) && len(refunds) == len(r.orders) {
			return at, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d refunds, %d of them %s, after %v: %v", len(refunds), len(at), status, r.opts.Settle, byStatus)
		}
		if time.Since(lastLog) > 15*time.Second {
			r.logf("waiting for %d refunds %s: %v", len(r.orders), status, byStatus)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// payoutWorkers counts, by worker replica, the SendRefund activities of
// the refunds' workflows that completed (the identity of their started
// event names the worker process): both workers pay, serialised on the
// payout account.
func payoutWorkers(ctx context.Context, c *cluster.Cluster, refunds []dbRefund) (string, error) {
	tc, err := client.DialContext(ctx, client.Options{
		HostPort:  fmt.Sprintf("127.0.0.1:%d", c.Ports().Frontend),
		Namespace: cluster.Namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return "", fmt.Errorf("dialling Temporal: %w", err)
	}
	defer tc.Close()
	byPID := map[string]string{}
	for name, pid := range c.PIDs() {
		byPID[strconv.Itoa(pid)] = name
	}
	count := map[string]int{}
	for _, f := range refunds {
		it := tc.GetWorkflowHistory(ctx, models.RefundWorkflowID(f.id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		sends := map[int64]bool{}
		started := map[int64]string{} // scheduled event id -> identity
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return "", fmt.Errorf("history of refund %s: %w", f.id, err)
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "SendRefund" {
				sends[ev.GetEventId()] = true
			}
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && sends[a.GetScheduledEventId()] {
				started[a.GetScheduledEventId()] = a.GetIdentity()
			}
			if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && sends[a.GetScheduledEventId()] {
				pid, _, _ := strings.Cut(started[a.GetScheduledEventId()], "@")
				count[cmp.Or(byPID[pid], "pid "+pid)]++
			}
		}
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%s × %d", name, count[name]))
	}
	return strings.Join(parts, ", "), nil
}
