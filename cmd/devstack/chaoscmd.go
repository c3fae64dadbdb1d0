package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/devstack/cluster/chaos"
	"github.com/memocart/memocart/cmd/internal/app"
)

const chaosUsage = `Usage: devstack chaos [flags]

Brings up a cluster of its own (devstack cluster: Postgres, Redis, Temporal,
two api and two worker processes of bin/memocart) on free ports in a
temporary directory, and creates and pays -orders sandbox orders through both
API replicas while SIGKILLing, at random moments of the load, an API replica,
a worker replica, the Temporal server and Postgres (-kills rounds), each
restarted a few seconds later. Then it waits for every order to end and
prints, as a table, what must be 0: acknowledged orders missing, carts with
two orders, paid orders not delivered, orders placed more than once, orders
without a workflow and workflows without an order, unpaid orders not
cancelled, and requests during the Postgres outage not answered 503 within
MEMOCART_REQUEST_TIMEOUT (plus slack) or a replica that needs a restart to
serve again. It exits 1 when one is not 0, and always stops its cluster.

Flags:`

// runChaos is `devstack chaos` (make chaos).
func runChaos(ctx context.Context, e app.Env, args []string) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	var o chaos.Options
	fs.IntVar(&o.Orders, "orders", 1000, "orders to create")
	fs.Float64Var(&o.Unpaid, "unpaid", 0.1, "fraction of the orders left unpaid (they must end cancelled)")
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
	ports := fs.Int("ports", 0, "port base of the cluster (default: the first free one from 29000, away from make cluster's 17000 and make cluster-test's 27000)")
	stateDir := fs.String("state-dir", "", "the cluster's state directory (default: a new temporary one, removed at the end unless -keep)")
	keep := fs.Bool("keep", false, "keep the state directory (logs) at the end")
	binDir := fs.String("bin-dir", "", "where the Temporal binaries are built (default: the user cache, shared with make cluster-test)")
	memocart := fs.String("memocart", filepath.Join("bin", "memocart"), "the service binary run as api and worker (make build)")
	fs.Usage = func() {
		fmt.Fprintln(e.Stderr, chaosUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("chaos: unexpected arguments %q", fs.Args())
	}
	if o.Orders < 1 || o.Concurrency < 1 || o.Kills < 0 || o.Unpaid < 0 || o.Unpaid > 1 || o.DownMin <= 0 || o.DownMax < o.DownMin {
		return errors.New("chaos: -orders and -concurrency must be positive, -kills not negative, -unpaid in 0..1, 0 < -down-min <= -down-max")
	}
	o.PaymentWindow = *window
	o.Seed = *seed
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	o.Out = e.Stdout

	// Absolute: the cluster starts it from its own directories.
	bin, err := filepath.Abs(*memocart)
	if err != nil {
		return err
	}
	o.Memocart = bin
	dir := *stateDir
	if dir == "" {
		d, err := os.MkdirTemp("", "memocart-chaos-")
		if err != nil {
			return err
		}
		// Postgres runs as the postgres user when we are root: it must
		// reach its data directory.
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
		dir = d
		if !*keep {
			defer os.RemoveAll(d)
		}
	}
	if *binDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		*binDir = filepath.Join(cache, "memocart", "cluster-bin")
	}
	base := *ports
	if base == 0 {
		var err error
		if base, err = freePortBase(29000); err != nil {
			return err
		}
	}
	c, err := cluster.New(cluster.Options{
		StateDir: dir, BinDir: *binDir, ModuleDir: moduleDir(ctx), Memocart: bin, PortBase: base,
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
			"MEMOCART_PAYMENT_WINDOW=" + window.String(), "MEMOCART_SANDBOX_STEP_DELAY=" + stepDelay.String(),
			"MEMOCART_REQUEST_TIMEOUT=" + o.RequestTimeout.String(), "MEMOCART_LOG_LEVEL=info"},
		Out: e.Stdout,
	})
	if err != nil {
		return err
	}
	// Down on every way out, with a context of its own: an interrupted
	// run must not leave the cluster running.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		if err := c.Down(dctx); err != nil {
			fmt.Fprintln(e.Stderr, "chaos: stopping the cluster:", err)
		}
		if *keep || *stateDir != "" {
			fmt.Fprintln(e.Stdout, "state and logs kept in", dir)
		}
	}()
	fmt.Fprintf(e.Stdout, "devstack chaos: cluster on port base %d in %s\n", base, dir)
	began := time.Now()
	if err := c.Up(ctx); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "cluster up in %.1fs\n", time.Since(began).Seconds())
	load1, _ := os.ReadFile("/proc/loadavg")
	rep, err := chaos.Run(ctx, c, o)
	if err != nil {
		return err
	}
	load2, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(e.Stdout, "\ndevstack chaos -orders %d -kills %d -seed %d (%s; load average before %s, after %s)\n\n",
		o.Orders, o.Kills, o.Seed, time.Now().UTC().Format(time.DateOnly), field3(load1), field3(load2))
	rep.Print(e.Stdout)
	if rep.Failed() {
		return errors.New("chaos: an invariant is not 0 (see the table)")
	}
	return nil
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
