// Package chaos is `devstack chaos` (`make chaos`): a load of orders
// created through both API replicas of a running cluster (package cluster)
// while a driver SIGKILLs, at random moments of the load, an API replica, a
// worker replica, the Temporal server and Postgres, and restarts each a
// few seconds later. Most orders are sandbox orders paid through the test
// helper; a share are live orders on the providers' test servers, which
// this process hosts (package testservers): paid on the Horizon test server
// by their memo, some overpaid, some late, some failing at Zinc, each with
// a refund destination set through the API, so that refunds are paid out
// while processes die. It then checks what must hold however the processes
// died (no acknowledged order lost, one order per cart, every paid order
// delivered and placed once, every order with its workflow and every
// workflow with its order, every unpaid order cancelled, every refund owed
// sent, no destination paid twice, `memocart reconcile` balanced) and
// prints them as a table with the figures of the run and the alerts the
// cluster's Prometheus raised (alerts.go). Payouts (payouts.go)
// measures refunds approved at once on the same cluster.
//
// It may import the standard library, package cluster, package
// testservers and the test servers it runs, pgx, decimal, the Temporal SDK
// client and API modules, Prometheus's model (its durations), and models
// (ids, workflow ids, statuses).
package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/devstack/testservers"
	"github.com/memocart/memocart/models"
)

// Options configures a run.
type Options struct {
	// Orders is how many orders the load creates; Unpaid the fraction of
	// them left unpaid, which must end cancelled at their deadline.
	Orders int
	Unpaid float64
	// Concurrency is how many clients run at once.
	Concurrency int
	// LoadTime spreads the order starts over this long, so the kills fall
	// inside the load.
	LoadTime time.Duration
	// Kills is the number of rounds; each round kills one API replica, one
	// worker replica, the Temporal server and Postgres once, in a random
	// order at random moments of the load.
	Kills int
	// Seed makes the kill plan and the unpaid choice reproducible.
	Seed uint64
	// DownMin and DownMax bound how long a killed component stays down.
	DownMin, DownMax time.Duration
	// RequestTimeout is the cluster's MEMOCART_REQUEST_TIMEOUT: a request
	// during the Postgres outage must answer 503 within it (plus Slack).
	RequestTimeout time.Duration
	Slack          time.Duration
	// PaymentWindow is the cluster's MEMOCART_PAYMENT_WINDOW; Settle is how
	// long past the last deadline the run waits for every order to end.
	PaymentWindow time.Duration
	Settle        time.Duration
	// AlertWait bounds the wait, after the checks, for every alert of
	// the cluster's Prometheus to resolve.
	AlertWait time.Duration
	// Live is the providers' test servers the cluster's live mode runs
	// against (nil: sandbox orders only); LiveShare is the fraction of the
	// paid orders that are live, and Overpaid, Late and Failed the
	// fractions of those that are overpaid, paid late, or fail at Zinc
	// (the rest are paid their amount).
	Live                   *testservers.Servers
	LiveShare              float64
	Overpaid, Late, Failed float64
	// Memocart is the prod binary the cluster runs (to create the run's
	// API keys and reconcile its books).
	Memocart string
	// Out receives progress and the report.
	Out io.Writer
}

// order is what the client side knows of one order of the load.
type order struct {
	index   int
	cartID  string
	orderID string // from the order request's 2xx
	number  string
	unpaid  bool   // planned unpaid: never sent a payment
	paid    bool   // the payment helper answered 201 "matched"; live: the payment was sent on Horizon
	payment string // the outcome the payment helper answered
	failure string // why the client gave up, if it did
	// Live orders only: what the order does with its money, the amount
	// it was asked to pay, and where its refunds go.
	kind   liveKind
	amount string
	dest   string
	// lateByClient: planned paid in time, but the client reached the
	// payment too close to the deadline (inTimeMargin), so it paid late.
	lateByClient bool
}

// run is one chaos run.
type run struct {
	opts    Options
	c       *cluster.Cluster
	api     *apiClient
	liveAPI *apiClient     // the live key's client (nil without live orders)
	late    sync.WaitGroup // the late payers (payLate)
	rng     *rand.Rand
	began   time.Time
	started atomic.Int64 // orders whose cart request was sent
	orders  []*order
	mu      sync.Mutex // guards log
	log     []string
	// probeOrder is the order the Postgres-outage probe reads.
	probeOrder string
	pg         probeReport
	report     Report
}

// Run runs the load and the kills against c (which must be up), waits for
// every order to end, checks the invariants and returns the report. An
// error means the run itself could not be carried out; failed invariants
// are in the report (Report.Failed).
func Run(ctx context.Context, c *cluster.Cluster, opts Options) (*Report, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	r := &run{opts: opts, c: c, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))}
	if err := r.newClients(ctx); err != nil {
		return nil, err
	}
	r.orders = make([]*order, opts.Orders)
	for i := range r.orders {
		r.orders[i] = &order{index: i, unpaid: r.rng.Float64() < opts.Unpaid}
		if !r.orders[i].unpaid && r.liveAPI != nil && r.rng.Float64() < opts.LiveShare {
			r.orders[i].kind = r.drawKind()
		}
	}
	// The first order is the one the Postgres-outage probe reads: made
	// before the load, left unpaid (it must end cancelled like the rest).
	r.orders[0].unpaid, r.orders[0].kind = true, ""
	plan := r.killPlan()
	r.logf("seed %d; %d orders (%d planned unpaid; live: %s), %d clients over %v; kills: %s",
		opts.Seed, opts.Orders, r.countPlannedUnpaid(), r.liveMix(), opts.Concurrency, opts.LoadTime, plan)
	if r.liveAPI != nil {
		if err := waitWatcher(ctx, c); err != nil {
			return nil, err
		}
	}
	if err := waitScraped(ctx, c); err != nil {
		return nil, err
	}

	r.began = time.Now()
	r.one(ctx, r.orders[0], 0)
	if r.orders[0].orderID == "" {
		return nil, fmt.Errorf("the first order failed before any kill: %s", r.orders[0].failure)
	}
	r.probeOrder = r.orders[0].orderID
	loadDone := make(chan struct{})
	killsDone := make(chan error, 1)
	go func() { killsDone <- r.kill(ctx, plan, loadDone) }()
	r.load(ctx)
	close(loadDone)
	r.report.LoadTime = time.Since(r.began)
	r.logf("load done: %d orders acknowledged", r.countAcked())
	if err := <-killsDone; err != nil {
		return nil, fmt.Errorf("kill driver: %w", err)
	}
	if err := r.settle(ctx); err != nil {
		return nil, err
	}
	if r.liveAPI != nil {
		if err := r.settleRefunds(ctx); err != nil {
			return nil, err
		}
	}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	spans, err := waitAlerts(ctx, c, r.began, opts.AlertWait, r.logf)
	if err != nil {
		return nil, fmt.Errorf("reading the alerts: %w", err)
	}
	r.report.alerts(spans, r.began, opts.AlertWait)
	r.report.WallTime = time.Since(r.began)
	r.report.Log = r.log
	return &r.report, nil
}

// newClients makes the run's API clients: the test key's, and the live
// key's when the cluster runs live mode on test servers.
func (r *run) newClients(ctx context.Context) error {
	key, err := createKey(ctx, r.c, r.opts.Memocart, models.ModeTest)
	if err != nil {
		return err
	}
	p := r.c.Ports()
	r.api = &apiClient{
		bases: [2]string{fmt.Sprintf("http://127.0.0.1:%d", p.API[0]), fmt.Sprintf("http://127.0.0.1:%d", p.API[1])},
		key:   key,
		// Past the request timeout the service answers 503 itself; a
		// client timeout above it only fires when a process hangs.
		hc:     &http.Client{Timeout: r.opts.RequestTimeout + 5*time.Second},
		giveUp: 5 * time.Minute,
		stats:  &clientStats{},
	}
	if r.opts.Live == nil {
		return nil
	}
	if key, err = createKey(ctx, r.c, r.opts.Memocart, models.ModeLive); err != nil {
		return err
	}
	live := *r.api
	live.key = key
	r.liveAPI = &live
	return nil
}

// createKey makes the run's own enterprise key of the mode: a Pro key's
// 600 requests a minute would make the load wait on the rate limiter
// instead of the failures.
func createKey(ctx context.Context, c *cluster.Cluster, memocart string, mode models.Mode) (string, error) {
	out, err := command(ctx, c, memocart, "keys", "create", "--account", "chaos", "--mode", string(mode),
		"--tier", "enterprise", "--per-minute", "600000")
	return strings.TrimSpace(out), err
}

// command runs a memocart command against the cluster, as an operator
// would, and returns its output.
func command(ctx context.Context, c *cluster.Cluster, memocart string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, memocart, args...)
	cmd.Env = c.CommandEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("memocart %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// drawKind draws a live order's kind by the shares of Options.
func (r *run) drawKind() liveKind {
	x := r.rng.Float64()
	for _, k := range []struct {
		kind  liveKind
		share float64
	}{{liveOverpaid, r.opts.Overpaid}, {liveLate, r.opts.Late}, {liveFailed, r.opts.Failed}} {
		if x < k.share {
			return k.kind
		}
		x -= k.share
	}
	return liveExact
}

// liveMix counts the planned live orders by kind.
func (r *run) liveMix() string {
	n := map[liveKind]int{}
	for _, o := range r.orders {
		n[o.kind]++
	}
	return fmt.Sprintf("%d exact, %d overpaid, %d late, %d failing at Zinc", n[liveExact], n[liveOverpaid], n[liveLate], n[liveFailed])
}

// waitWatcher waits until the Stellar watcher has recorded where it
// starts: the service takes live orders from then on.
func waitWatcher(ctx context.Context, c *cluster.Cluster) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		conn, err := pgx.Connect(ctx, c.PostgresURL(cluster.AppDB))
		if err == nil {
			var n int
			err = conn.QueryRow(ctx, `SELECT count(*) FROM stellar_cursors WHERE cursor <> ''`).Scan(&n)
			conn.Close(context.WithoutCancel(ctx))
			if err == nil && n > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Stellar watcher recorded no cursor within 2 minutes (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (r *run) logf(format string, args ...any) {
	line := fmt.Sprintf("%7.1fs  ", time.Since(r.began).Seconds()) + fmt.Sprintf(format, args...)
	if r.began.IsZero() {
		line = "          " + fmt.Sprintf(format, args...)
	}
	r.mu.Lock()
	r.log = append(r.log, line)
	r.mu.Unlock()
	fmt.Fprintln(r.opts.Out, line)
}

func (r *run) countPlannedUnpaid() int {
	n := 0
	for _, o := range r.orders {
		if o.unpaid {
			n++
		}
	}
	return n
}

func (r *run) countAcked() int {
	n := 0
	for _, o := range r.orders {
		if o.orderID != "" {
			n++
		}
	}
	return n
}

// load runs the clients: order i starts no earlier than i*LoadTime/Orders
// after the start, so the load lasts about LoadTime unless the service is
// slower.
func (r *run) load(ctx context.Context) {
	next := make(chan int)
	go func() {
		defer close(next)
		interval := r.opts.LoadTime / time.Duration(max(1, r.opts.Orders))
		for i := 1; i < len(r.orders); i++ {
			if d := time.Until(r.began.Add(time.Duration(i) * interval)); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
			select {
			case <-ctx.Done():
				return
			case next <- i:
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range r.opts.Concurrency {
		wg.Go(func() {
			for i := range next {
				r.started.Add(1)
				r.one(ctx, r.orders[i], w)
			}
		})
	}
	wg.Wait()
}

var (
	cartBody = map[string]any{
		"items":           []map[string]any{{"product_url": "https://www.amazon.com/dp/B08N5WRWNW", "quantity": 1}},
		"ship_to_country": "US",
	}
	shipTo = map[string]any{"name": "Ada Lovelace", "phone": "+1 415 555 0100", "line1": "1 Market St",
		"city": "San Francisco", "region": "CA", "postal_code": "94107", "country": "US"}
)

// one takes order o through cart, order and (unless planned unpaid)
// payment. Client w starts on replica w%2; every retry switches replica.
func (r *run) one(ctx context.Context, o *order, w int) {
	if o.kind != "" {
		r.oneLive(ctx, o, w)
		return
	}
	a, err := r.api.post(ctx, w%2, "/v1/carts", cartBody)
	if err != nil || a.status != http.StatusCreated {
		o.failure = describe("cart", a, err)
		return
	}
	cart, _ := a.body["cart"].(map[string]any)
	o.cartID, _ = cart["id"].(string)

	a, err = r.api.post(ctx, w%2+1, "/v1/orders", map[string]any{
		"cart_id": o.cartID, "customer_email": fmt.Sprintf("chaos-%d@example.com", o.index), "payment_asset": "USDC",
		"shipping_address": shipTo,
	})
	if err != nil || (a.status != http.StatusCreated && a.status != http.StatusOK) {
		o.failure = describe("order", a, err)
		return
	}
	ord, _ := a.body["order"].(map[string]any)
	id, _ := ord["id"].(string)
	o.number, _ = ord["number"].(string)
	o.orderID = id
	if o.unpaid {
		return
	}

	a, err = r.api.post(ctx, w%2, "/v1/test_helpers/orders/"+id+"/payments", nil)
	if err != nil || a.status != http.StatusCreated {
		o.failure = describe("payment", a, err)
		return
	}
	p, _ := a.body["payment"].(map[string]any)
	o.payment, _ = p["outcome"].(string)
	o.paid = o.payment == "matched"
	if !o.paid {
		r.api.stats.paymentsNotCredited.Add(1)
	}
}

func describe(step string, a answer, err error) string {
	if err != nil {
		return step + ": " + err.Error()
	}
	return fmt.Sprintf("%s: %d %s", step, a.status, a.errorCode())
}
