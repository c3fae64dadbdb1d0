package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memocart/memocart/cmd/devstack/cluster/chaos"
	"github.com/memocart/memocart/cmd/internal/app"
)

const payoutsUsage = `Usage: devstack payouts [flags]

Measures refunds paid out at once by the production topology: brings up a
cluster of its own (as devstack chaos does: Postgres, Redis, Temporal, two api
and two worker processes of bin/memocart) with live mode on the providers'
test servers this process runs, and live refunds left for an operator
(MEMOCART_REFUND_AUTO_APPROVE_MAX=0). It creates -refunds live orders, each
overpaid on the Horizon test server with its refund destination set through
the API, waits until every refund of the excess awaits approval, starts one
memocart refunds approve per refund at once, and measures the time until all
are sent. It prints the figures and, as a table, what must be 0: refunds not
sent once for their amount, destinations paid other than once on the Horizon
test server, submissions answered tx_bad_seq (the two workers colliding on
the payout account's sequence number), and memocart reconcile's live
discrepancies. It exits 1 when one is not 0, and always stops its cluster.

Flags:`

// runPayouts is `devstack payouts` (make payouts).
func runPayouts(ctx context.Context, e app.Env, args []string) error {
	fs := newFlagSet("payouts", payoutsUsage, e.Stderr)
	var o chaos.PayoutsOptions
	fs.IntVar(&o.Refunds, "refunds", 50, "refunds approved at once")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "clients creating the orders owed them")
	fs.DurationVar(&o.Wait, "wait", 5*time.Minute, "how long to wait for the refunds to await approval, then to be sent")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 10*time.Second, "the cluster's MEMOCART_REQUEST_TIMEOUT")
	var own ownClusterFlags
	own.register(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if o.Refunds < 1 || o.Concurrency < 1 || o.Wait <= 0 {
		return errors.New("payouts: -refunds, -concurrency and -wait must be positive")
	}
	o.Seed = uint64(time.Now().UnixNano())
	o.Out = e.Stdout
	title := fmt.Sprintf("devstack payouts -refunds %d", o.Refunds)
	return runOwnClusterDriver(ctx, e, "payouts", title, own, true, map[string]string{
		"MEMOCART_REFUND_AUTO_APPROVE_MAX": "0", "MEMOCART_REQUEST_TIMEOUT": o.RequestTimeout.String(),
	}, func(oc *ownCluster) (*chaos.Report, error) {
		o.Memocart, o.Live = oc.memocart, oc.live
		return chaos.Payouts(ctx, oc.c, o)
	})
}
