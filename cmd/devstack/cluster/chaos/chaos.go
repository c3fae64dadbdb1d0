// Package chaos is `devstack chaos` (`make chaos`): a load of sandbox
// orders created and paid through both API replicas of a running cluster
// (package cluster) while a driver SIGKILLs, at random moments of the load,
// an API replica, a worker replica, the Temporal server and Postgres, and
// restarts each a few seconds later. It then checks what must hold however
// the processes died (no acknowledged order lost, one order per cart, every
// paid order delivered and placed once, every order with its workflow and
// every workflow with its order, every unpaid order cancelled) and prints
// them as a table with the figures of the run.
//
// It may import the standard library, package cluster, pgx, the Temporal
// SDK client and API modules, and models (ids, workflow ids).
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

	"github.com/memocart/memocart/cmd/devstack/cluster"
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
	// Memocart is the prod binary the cluster runs (to create the run's
	// API key).
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
	paid    bool   // the payment helper answered 201 "matched"
	payment string // the outcome the payment helper answered
	failure string // why the client gave up, if it did
}

// run is one chaos run.
type run struct {
	opts    Options
	c       *cluster.Cluster
	api     *apiClient
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
	key, err := r.createKey(ctx)
	if err != nil {
		return nil, err
	}
	p := c.Ports()
	r.api = &apiClient{
		bases: [2]string{fmt.Sprintf("http://127.0.0.1:%d", p.API[0]), fmt.Sprintf("http://127.0.0.1:%d", p.API[1])},
		key:   key,
		// Past the request timeout the service answers 503 itself; a
		// client timeout above it only fires when a process hangs.
		hc:     &http.Client{Timeout: opts.RequestTimeout + 5*time.Second},
		giveUp: 5 * time.Minute,
		stats:  &clientStats{},
	}
	r.orders = make([]*order, opts.Orders)
	for i := range r.orders {
		r.orders[i] = &order{index: i, unpaid: r.rng.Float64() < opts.Unpaid}
	}
	// The first order is the one the Postgres-outage probe reads: made
	// before the load, left unpaid (it must end cancelled like the rest).
	r.orders[0].unpaid = true
	plan := r.killPlan()
	r.logf("seed %d; %d orders (%d planned unpaid), %d clients over %v; kills: %s",
		opts.Seed, opts.Orders, r.countPlannedUnpaid(), opts.Concurrency, opts.LoadTime, plan)

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
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	r.report.WallTime = time.Since(r.began)
	r.report.Log = r.log
	return &r.report, nil
}

// createKey makes the run's own enterprise test key: a Pro key's 600
// requests a minute would make the load wait on the rate limiter instead
// of the failures.
func (r *run) createKey(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.opts.Memocart, "keys", "create", "--account", "chaos", "--mode", "test",
		"--tier", "enterprise", "--per-minute", "600000")
	env := r.c.AppEnv("cli", 0)
	cmd.Env = []string{}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("memocart keys create: %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
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
