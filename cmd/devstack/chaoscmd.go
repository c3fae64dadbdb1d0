package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/devstack/cluster/chaos"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/cmd/internal/app"
)

const chaosUsage = `Usage: devstack chaos [flags]

Brings up a cluster of its own (devstack cluster: Postgres, Redis, Temporal,
two api and two worker processes of bin/memocart) on free ports in a
temporary directory, its live mode pointed at the providers' test servers
(Creators, Browse, Zinc, Horizon) that this process runs, and creates -orders
orders through both API replicas while SIGKILLing, at random moments of the
load, an API replica, a worker replica, the Temporal server and Postgres
(-kills rounds), each restarted a few seconds later. A -live share of the paid
orders are live: eBay products bought with Zinc, paid on the Horizon test
server by their memo, -overpaid, -late or -failed (out of stock at Zinc) in
those shares, each with a refund destination set through the API; the rest
are sandbox orders paid through the test helper. Then it waits for every
order to end and every refund owed to be sent, and prints, as a table, what
must be 0: acknowledged orders missing, carts with two orders, paid orders not
delivered, orders placed more than once, orders without a workflow and
workflows without an order, unpaid orders not cancelled, orders out of stock
not failed, requests during the Postgres outage not answered 503 within
MEMOCART_REQUEST_TIMEOUT (plus slack) or a replica that needs a restart to
serve again, refunds owed not sent (or sent where none is owed), refund
destinations paid other than once on the Horizon test server, and the
discrepancies of memocart reconcile in each mode. It exits 1 when one is not
0, and always stops its cluster. Zinc's test server sends its webhooks to the
first API replica (Zinc has one webhook URL); orders are polled too.

Flags:`

// runChaos is `devstack chaos` (make chaos).
func runChaos(ctx context.Context, e app.Env, args []string) error {
	fs := newFlagSet("chaos", chaosUsage, e.Stderr)
	var o chaos.Options
	fs.IntVar(&o.Orders, "orders", 1000, "orders to create")
	fs.Float64Var(&o.Unpaid, "unpaid", 0.1, "fraction of the orders left unpaid (they must end cancelled)")
	fs.Float64Var(&o.LiveShare, "live", 0.3, "fraction of the paid orders that are live orders on the test servers (0: sandbox only)")
	fs.Float64Var(&o.Overpaid, "overpaid", 0.25, "fraction of the live orders overpaid (the excess refunded)")
	fs.Float64Var(&o.Late, "late", 0.25, "fraction of the live orders paid after their deadline (the payment refunded)")
	fs.Float64Var(&o.Failed, "failed", 0.25, "fraction of the live orders out of stock at Zinc (failed, refunded)")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "clients at once")
	fs.DurationVar(&o.LoadTime, "load-time", 2*time.Minute, "spread the order starts over this long, so the kills fall inside the load")
	fs.IntVar(&o.Kills, "kills", 1, "rounds of kills: each kills an api, a worker, temporal and postgres once")
	seed := fs.Uint64("seed", 0, "seed of the kill plan and the unpaid choice (0: from the clock; printed)")
	fs.DurationVar(&o.DownMin, "down-min", 3*time.Second, "shortest time a killed component stays down")
	fs.DurationVar(&o.DownMax, "down-max", 6*time.Second, "longest time a killed component stays down")
	window := fs.Duration("payment-window", 90*time.Second, "the cluster's MEMOCART_PAYMENT_WINDOW")
	stepDelay := fs.Duration("step-delay", 200*time.Millisecond, "the cluster's MEMOCART_SANDBOX_STEP_DELAY")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", 10*time.Second, "the cluster's MEMOCART_REQUEST_TIMEOUT (the bound on a 503 during the Postgres outage)")
	fs.DurationVar(&o.Slack, "slack", 2*time.Second, "added to -request-timeout for the bound")
	fs.DurationVar(&o.Settle, "settle", 3*time.Minute, "how long past the last payment deadline to wait for every order to end")
	fs.DurationVar(&o.AlertWait, "alert-wait", 10*time.Minute, "how long after the checks to wait for every alert of the cluster's Prometheus to resolve")
	var own ownClusterFlags
	own.register(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if o.Orders < 1 || o.Concurrency < 1 || o.Kills < 0 || o.Unpaid < 0 || o.Unpaid > 1 || o.DownMin <= 0 || o.DownMax < o.DownMin ||
		o.LiveShare < 0 || o.LiveShare > 1 || o.Overpaid < 0 || o.Late < 0 || o.Failed < 0 || o.Overpaid+o.Late+o.Failed > 1 {
		return errors.New("chaos: -orders and -concurrency must be positive, -kills not negative, -unpaid and -live in 0..1, 0 < -down-min <= -down-max, -overpaid, -late and -failed not negative and adding up to at most 1")
	}
	o.PaymentWindow = *window
	o.Seed = *seed
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	o.Out = e.Stdout

	title := fmt.Sprintf("devstack chaos -orders %d -live %g -kills %d -seed %d", o.Orders, o.LiveShare, o.Kills, o.Seed)
	return runOwnClusterDriver(ctx, e, "chaos", title, own, o.LiveShare > 0, map[string]string{
		"MEMOCART_PAYMENT_WINDOW": window.String(), "MEMOCART_SANDBOX_STEP_DELAY": stepDelay.String(),
		"MEMOCART_REQUEST_TIMEOUT": o.RequestTimeout.String(),
	}, func(oc *ownCluster) (*chaos.Report, error) {
		o.Memocart, o.Live = oc.memocart, oc.live
		return chaos.Run(ctx, oc.c, o)
	})
}

// runOwnClusterDriver runs drive on the driver name's own cluster (see
// startOwnCluster), then prints title (the command line), the date and
// the load averages before and after the run, and the report; a report
// with an invariant not 0 is an error.
func runOwnClusterDriver(ctx context.Context, e app.Env, name, title string, own ownClusterFlags, live bool, env map[string]string,
	drive func(oc *ownCluster) (*chaos.Report, error)) error {
	oc, err := startOwnCluster(ctx, e, name, own, live, env)
	if err != nil {
		return err
	}
	defer oc.down()
	load1, _ := os.ReadFile("/proc/loadavg")
	rep, err := drive(oc)
	if err != nil {
		return err
	}
	load2, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(e.Stdout, "\n%s (%s; load average before %s, after %s)\n\n",
		title, time.Now().UTC().Format(time.DateOnly), field3(load1), field3(load2))
	rep.Print(e.Stdout)
	if rep.Failed() {
		return fmt.Errorf("%s: an invariant is not 0 (see the table)", name)
	}
	return nil
}

// ownClusterFlags are the flags of a driver that runs a cluster of its own
// (chaos, payouts).
type ownClusterFlags struct {
	ports            int
	stateDir, binDir string
	memocart         string
	keep             bool
}

func (f *ownClusterFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.ports, "ports", 0, "port base of the cluster (default: the first free one from 29000, away from make cluster's 17000 and make cluster-test's 27000)")
	fs.StringVar(&f.stateDir, "state-dir", "", "the cluster's state directory (default: a new temporary one, removed at the end unless -keep)")
	fs.BoolVar(&f.keep, "keep", false, "keep the state directory (logs) at the end")
	fs.StringVar(&f.binDir, "bin-dir", "", "where the Temporal binaries are built (default: the user cache, shared with make cluster-test)")
	fs.StringVar(&f.memocart, "memocart", filepath.Join("bin", "memocart"), "the service binary run as api and worker (make build)")
}

// ownCluster is a driver's cluster, up, with the providers' test servers
// its live mode runs against (nil without live mode).
type ownCluster struct {
	c        *cluster.Cluster
	live     *testservers.Servers
	memocart string // absolute path
	down     func()
}

// startOwnCluster brings up a cluster on free ports in a state directory
// of its own, api and worker given env (MEMOCART_* tuning) and, with live,
// the variables that point live mode at test servers this process runs
// (testservers.Configure), Zinc's webhooks going to the first API
// replica. down stops the cluster and the servers.
func startOwnCluster(ctx context.Context, e app.Env, name string, f ownClusterFlags, live bool, env map[string]string) (*ownCluster, error) {
	// Absolute: the cluster starts it from its own directories.
	bin, err := filepath.Abs(f.memocart)
	if err != nil {
		return nil, err
	}
	var cleanup []func()
	down := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	dir := f.stateDir
	if dir == "" {
		d, err := os.MkdirTemp("", "memocart-"+name+"-")
		if err != nil {
			return nil, err
		}
		// Postgres runs as the postgres user when we are root: it must
		// reach its data directory.
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, err
		}
		dir = d
		if !f.keep {
			cleanup = append(cleanup, func() { os.RemoveAll(d) })
		}
	}
	if f.binDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			down()
			return nil, err
		}
		f.binDir = filepath.Join(cache, "memocart", "cluster-bin")
	}
	base := f.ports
	if base == 0 {
		if base, err = freePortBase(29000); err != nil {
			down()
			return nil, err
		}
	}
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "MEMOCART_LOG_LEVEL": "info"}
	maps.Copy(vars, env)
	var servers *testservers.Servers
	if live {
		servers = testservers.Start()
		cleanup = append(cleanup, servers.Close)
		// Only what api and worker will see decides what is overridden,
		// never this shell's variables.
		lv, err := servers.Configure(func(k string) string { return vars[k] }, filepath.Join(dir, "live"))
		if err != nil {
			down()
			return nil, err
		}
		maps.Copy(vars, lv)
		servers.Listening(net.JoinHostPort("127.0.0.1", strconv.Itoa(cluster.PortsAt(base).API[0])))
	}
	var list []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		list = append(list, k+"="+vars[k])
	}
	c, err := cluster.New(cluster.Options{
		StateDir: dir, BinDir: f.binDir, ModuleDir: moduleDir(ctx), Memocart: bin, PortBase: base, Env: list, Out: e.Stdout,
	})
	if err != nil {
		down()
		return nil, err
	}
	// Down on every way out, with a context of its own: an interrupted
	// run must not leave the cluster running.
	cleanup = append(cleanup, func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		if err := c.Down(dctx); err != nil {
			fmt.Fprintf(e.Stderr, "%s: stopping the cluster: %v\n", name, err)
		}
		if f.keep || f.stateDir != "" {
			fmt.Fprintln(e.Stdout, "state and logs kept in", dir)
		}
	})
	fmt.Fprintf(e.Stdout, "devstack %s: cluster on port base %d in %s\n", name, base, dir)
	began := time.Now()
	if err := c.Up(ctx); err != nil {
		down()
		return nil, err
	}
	fmt.Fprintf(e.Stdout, "cluster up in %.1fs\n", time.Since(began).Seconds())
	return &ownCluster{c: c, live: servers, memocart: bin, down: down}, nil
}

// field3 returns the 1, 5 and 15 minute load averages of /proc/loadavg.
func field3(b []byte) string {
	var a, b5, c string
	if _, err := fmt.Sscan(string(b), &a, &b5, &c); err != nil {
		return "?"
	}
	return a + " " + b5 + " " + c
}

// freePortBase returns the first base from start, by thousands, whose
// every cluster port is free now.
func freePortBase(start int) (int, error) {
	for base := start; base+939 <= cluster.MaxMembershipPort; base += 1000 {
		free := true
		for _, p := range cluster.PortsAt(base).All() {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return base, nil
		}
	}
	return 0, errors.New("chaos: no free port base")
}
