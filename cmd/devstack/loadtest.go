package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/devstack/loadtest"
	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/models/sqlstore"
)

// loadOptions are `devstack loadtest`'s flags.
type loadOptions struct {
	stack       string
	apis        []string
	clusterDir  string
	key         string
	conns       int
	duration    time.Duration
	pairs       int
	create      int
	deliver     int
	sizes       []int
	waiting     []int
	splitWorker bool
	profileDir  string
	pgScale     int
	pgDatabase  string
	settle      time.Duration
	keepDir     bool
}

const loadtestUsage = `Usage: devstack loadtest [flags]

Measures the service against its references, on the same machine and in the
same window, and prints the ratios (issue 9's figures):

  order creation    POST /v1/orders, -connections at a time, against bare
                    StartWorkflow calls of the same workflow on the same
                    Temporal server (a task queue no worker polls);
  reads             GET /v1/orders/{id} from -connections connections for
                    -duration, at each -orders size, against the reference
                    server (started in this process: Go net/http and a
                    pgxpool on the app database, the key checked from
                    memory, the service's own order query answered as
                    JSON), read the same way, and against pgbench -S -M
                    prepared with as many clients on the same Postgres
                    server; and GET /healthz (the same HTTP stack without a
                    key or the database), the ceiling of any endpoint;
  latency           GET at half the measured maximum rate (open loop): p50,
                    p90, p99, max; against pgbench -S -R at half its own
                    maximum, latency counted the same way;
  creation to       -deliver orders created (cart, order) and paid with the
  delivered         sandbox test helper, -connections at a time, then
                    followed in the app database until delivered: delivered
                    orders per second from the first POST to the last
                    delivery, and each order's time from its POST to
                    delivered, split at its paid step. No reference. Each
                    order waits for the sandbox fulfiller's three steps
                    (MEMOCART_SANDBOX_STEP_DELAY each): with few orders in
                    flight that wait sets the rate, with many the stack's
                    capacity does and the orders queue before paid.

Each service run is paired with its reference run (-pairs pairs, the order
alternating), and the median ratio is reported. With -waiting, it measures
memory instead: it creates that many waiting orders and prints each
process's resident memory at each count.

-stack dev (the default) starts ` + "`devstack dev`" + ` as a child process on free
ports with the app data in the Postgres database memocart_loadtest (dropped
and recreated) on the server of MEMOCART_DATABASE_URL, and stops it at the
end. -stack external measures a running stack: the API at -api, the app
database MEMOCART_DATABASE_URL (a key is created there unless -key is
given), Temporal at MEMOCART_TEMPORAL_ADDRESS. -api takes several base URLs,
comma-separated, for API replicas: each request goes to the next one in
turn. With -cluster, the processor time is split into the cluster's
processes (api, worker, Temporal, Redis, its Postgres). pgbench's tables
live in the database memocart_pgbench on the same Postgres server. Nothing
is written to any other database.

Flags:`

func runLoadtest(ctx context.Context, e app.Env, args []string) error {
	fs := newFlagSet("loadtest", loadtestUsage, e.Stderr)
	var o loadOptions
	var sizes, waiting, apis string
	fs.StringVar(&o.stack, "stack", "dev", "dev (start one) or external (measure a running stack)")
	fs.StringVar(&apis, "api", "", "external: the API's base URL, or several comma-separated (replicas: requests go to each in turn) (default http://MEMOCART_HTTP_ADDR)")
	fs.StringVar(&o.clusterDir, "cluster", "", "external: the state directory of the `devstack cluster` under load (e.g. .data/cluster), whose processes the CPU split then names")
	fs.StringVar(&o.key, "key", "", "external: a test-mode API key to use (default: create an enterprise key)")
	fs.IntVar(&o.conns, "connections", 16, "concurrent connections (and pgbench clients, and concurrent starts)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each read run")
	fs.IntVar(&o.pairs, "pairs", 3, "service runs, each paired with a reference run")
	fs.IntVar(&o.create, "create", 300, "orders created (and bare starts) per creation run")
	fs.IntVar(&o.deliver, "deliver", 300, "orders taken from creation to delivered in the last phase; 0 skips it")
	fs.StringVar(&sizes, "orders", "1000,10000", "orders in the account for the read runs, comma-separated")
	fs.StringVar(&waiting, "waiting", "", "memory mode: counts of waiting orders at which to read memory, e.g. 10000,100000")
	fs.BoolVar(&o.splitWorker, "split-worker", false, "dev: run the worker as its own process (devstack dev -no-worker + memocart worker)")
	fs.StringVar(&o.profileDir, "profile", "", "dev: write CPU profiles of the service's processes during the first run of each kind, an execution trace during each latency run and, with -waiting, heap profiles at each count into this directory; the children log the collector's cycles (GODEBUG=gctrace=1)")
	fs.IntVar(&o.pgScale, "pgbench-scale", 10, "pgbench scale factor (100,000 accounts each)")
	fs.StringVar(&o.pgDatabase, "pgbench-db", "memocart_pgbench", "database for pgbench's tables, on the app database's server (created if missing)")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "pause after creating orders, so the worker's first workflow tasks finish before the next run")
	fs.BoolVar(&o.keepDir, "keep", false, "dev: keep the stack's data directory and logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.sizes, err = parseCounts(sizes); err != nil {
		return fmt.Errorf("-orders: %w", err)
	}
	if waiting != "" {
		if o.waiting, err = parseCounts(waiting); err != nil {
			return fmt.Errorf("-waiting: %w", err)
		}
	}
	if o.conns < 1 || o.pairs < 1 || o.create < 1 || o.deliver < 0 || o.duration < time.Second {
		return errors.New("-connections, -pairs and -create must be positive, -deliver not negative and -duration at least 1s")
	}
	if apis != "" {
		if o.apis, err = parseAPIs(apis); err != nil {
			return fmt.Errorf("-api: %w", err)
		}
	}
	if o.clusterDir != "" && o.stack != "external" {
		return errors.New("-cluster needs -stack external")
	}
	if !plainIdentifier(o.pgDatabase) {
		return errors.New("-pgbench-db must be lowercase letters, digits and underscores")
	}
	if o.stack != "dev" && o.stack != "external" {
		return errors.New("-stack must be dev or external")
	}
	if !strings.HasPrefix(e.Cfg.DatabaseURL, "postgres") {
		return errors.New("MEMOCART_DATABASE_URL must be a postgres:// URL: the reads are measured against pgbench on the same server")
	}
	pg, err := loadtest.Pgbench{}.Find()
	if err != nil {
		return err
	}

	var st *loadStack
	if o.stack == "dev" {
		st, err = startLoadStack(ctx, e, o, pg)
	} else {
		st, err = externalLoadStack(e, o)
	}
	if err != nil {
		return err
	}
	defer st.stop(e)

	lt := &loadRun{e: e, o: o, st: st, pg: pg}
	return lt.run(ctx)
}

// plainIdentifier reports whether s can stand in SQL unquoted.
func plainIdentifier(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// parseAPIs parses -api: base URLs, comma-separated.
func parseAPIs(s string) ([]string, error) {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimRight(strings.TrimSpace(f), "/")
		u, err := url.Parse(f)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("%q is not a base URL (http://host:port)", f)
		}
		out = append(out, f)
	}
	return out, nil
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, errors.New("counts must increase")
		}
		out = append(out, n)
	}
	return out, nil
}

// loadStack is the service under load: its addresses and, for -stack dev,
// the child processes this command started.
type loadStack struct {
	apis         []string
	dbURL        string
	temporalAddr string
	dir          string
	keepDir      bool
	procs        []*childProc
	// cluster is, with -cluster, the cluster's processes.
	cluster []stackPart
}

// stackPart is a process of the stack whose processor time the tool
// reads, with its descendants': a child it started, or a component of a
// `devstack cluster`.
type stackPart struct {
	// role names it in the CPU split: dev or worker; api, worker, temporal,
	// redis or postgres (which takes the place of every Postgres on the
	// machine).
	role string
	pid  int
}

// parts lists the stack's processes the tool knows.
func (st *loadStack) parts() []stackPart {
	out := slices.Clone(st.cluster)
	for _, p := range st.procs {
		out = append(out, stackPart{role: p.name, pid: p.cmd.Process.Pid})
	}
	return out
}

type childProc struct {
	name      string
	cmd       *exec.Cmd
	adminAddr string
	logPath   string
	done      chan error
}

func externalLoadStack(e app.Env, o loadOptions) (*loadStack, error) {
	apis := o.apis
	if len(apis) == 0 {
		apis = []string{"http://" + e.Cfg.HTTPAddr}
	}
	st := &loadStack{apis: apis, dbURL: e.Cfg.DatabaseURL, temporalAddr: e.Cfg.TemporalAddress}
	if o.clusterDir != "" {
		var err error
		if st.cluster, err = clusterParts(o.clusterDir); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// clusterParts returns the running processes of the cluster whose state
// directory is dir, by role. The Temporal UI is left out: idle under this
// load, it counts with the rest.
func clusterParts(dir string) ([]stackPart, error) {
	if _, err := os.Stat(filepath.Join(dir, "cluster.json")); err != nil {
		return nil, fmt.Errorf("-cluster: no cluster state in %s: %w", dir, err)
	}
	c, err := cluster.New(cluster.Options{StateDir: dir})
	if err != nil {
		return nil, err
	}
	var parts []stackPart
	for name, pid := range c.PIDs() {
		role, _, _ := strings.Cut(name, "-")
		if name == "temporal-ui" {
			continue
		}
		parts = append(parts, stackPart{role: role, pid: pid})
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("-cluster: nothing of the cluster in %s is running", dir)
	}
	slices.SortFunc(parts, func(a, b stackPart) int { return a.pid - b.pid })
	return parts, nil
}

// freePort returns a TCP port on 127.0.0.1 nothing listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startLoadStack starts `devstack dev` (and `memocart worker` with
// -split-worker) from this executable on free ports, with the app data in
// a fresh database on the configured Postgres server.
func startLoadStack(ctx context.Context, e app.Env, o loadOptions, pg loadtest.Pgbench) (*loadStack, error) {
	dbURL, err := loadtest.WithDatabase(e.Cfg.DatabaseURL, "memocart_loadtest")
	if err != nil {
		return nil, fmt.Errorf("MEMOCART_DATABASE_URL: %w", err)
	}
	if err := recreateDatabase(ctx, pg, e.Cfg.DatabaseURL, "memocart_loadtest"); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "memocart-loadtest-")
	if err != nil {
		return nil, err
	}
	st := &loadStack{dbURL: dbURL, dir: dir, keepDir: o.keepDir}
	httpPort, err1 := freePort()
	temporalPort, err2 := freePort()
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	st.apis = []string{fmt.Sprintf("http://127.0.0.1:%d", httpPort)}
	st.temporalAddr = fmt.Sprintf("127.0.0.1:%d", temporalPort)
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	base := map[string]string{
		"MEMOCART_DATABASE_URL":     dbURL,
		"MEMOCART_DATA_DIR":         filepath.Join(dir, "data"),
		"MEMOCART_HTTP_ADDR":        fmt.Sprintf("127.0.0.1:%d", httpPort),
		"MEMOCART_TEMPORAL_ADDRESS": st.temporalAddr,
		"MEMOCART_TEMPORAL_UI_PORT": "-1",
		// Waiting orders must still be waiting when their memory is read.
		"MEMOCART_PAYMENT_WINDOW": "24h",
		"MEMOCART_LOG_FORMAT":     "json",
	}
	devArgs := []string{"dev"}
	if o.splitWorker {
		devArgs = append(devArgs, "-no-worker")
	}
	start := func(name string, args []string) error {
		env := maps.Clone(base)
		p := &childProc{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan error, 1)}
		if o.profileDir != "" {
			port, err := freePort()
			if err != nil {
				return err
			}
			p.adminAddr = fmt.Sprintf("127.0.0.1:%d", port)
			env["MEMOCART_ADMIN_ADDR"] = p.adminAddr
			env["GODEBUG"] = "gctrace=1"
		}
		logf, err := os.Create(p.logPath)
		if err != nil {
			return err
		}
		cmd := exec.Command(self, args...)
		cmd.Env = childEnv(os.Environ(), env)
		cmd.Stdout, cmd.Stderr = logf, logf
		// The children die with this process, however it ends.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return fmt.Errorf("starting memocart %s: %w", name, err)
		}
		p.cmd = cmd
		go func() { p.done <- cmd.Wait(); logf.Close() }()
		st.procs = append(st.procs, p)
		e.Log.Info("started", slog.String("process", "memocart "+strings.Join(args, " ")), slog.Int("pid", cmd.Process.Pid), slog.String("log", p.logPath))
		return nil
	}
	if err := start("dev", devArgs); err != nil {
		st.stop(e)
		return nil, err
	}
	readyCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c := loadtest.NewClient(st.apis, "", 1)
	defer c.Close()
	if err := st.waitReady(readyCtx, c); err != nil {
		st.stop(e)
		return nil, err
	}
	if o.splitWorker {
		if err := start("worker", []string{"worker"}); err != nil {
			st.stop(e)
			return nil, err
		}
	}
	return st, nil
}

// waitReady waits for the API while watching that no child has exited.
func (st *loadStack) waitReady(ctx context.Context, c *loadtest.Client) error {
	ready := make(chan error, 1)
	go func() { ready <- c.WaitReady(ctx) }()
	for _, p := range st.procs {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("memocart %s exited while starting (%v); see %s", p.name, err, p.logPath)
		default:
		}
	}
	select {
	case err := <-ready:
		return err
	case err := <-st.procs[0].done:
		st.procs[0].done <- err
		return fmt.Errorf("memocart %s exited while starting (%v); see %s", st.procs[0].name, err, st.procs[0].logPath)
	}
}

// childEnv is environ with set's variables replaced.
func childEnv(environ []string, set map[string]string) []string {
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

// stop stops the children (SIGTERM, then SIGKILL after 30 s) in reverse
// order and removes the data directory unless asked to keep it.
func (st *loadStack) stop(e app.Env) {
	for i := len(st.procs) - 1; i >= 0; i-- {
		p := st.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if st.dir == "" {
		return
	}
	if st.keepDir {
		e.Log.Info("kept the stack's data and logs", slog.String("dir", st.dir))
		return
	}
	_ = os.RemoveAll(st.dir)
}

// recreateDatabase drops and creates name on the server of serverURL.
func recreateDatabase(ctx context.Context, pg loadtest.Pgbench, serverURL, name string) error {
	psql := pg.Psql()
	for _, q := range []string{
		fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name),
		fmt.Sprintf("CREATE DATABASE %s", name),
	} {
		if out, err := exec.CommandContext(ctx, psql, "-Xq", "-v", "ON_ERROR_STOP=1", "-c", q, serverURL).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", q, err, out)
		}
	}
	return nil
}

// ensureDatabase creates name on the server of serverURL if it is missing.
func ensureDatabase(ctx context.Context, pg loadtest.Pgbench, serverURL, name string) error {
	psql := pg.Psql()
	out, err := exec.CommandContext(ctx, psql, "-XAtq", "-c",
		fmt.Sprintf("SELECT 1 FROM pg_database WHERE datname = '%s'", name), serverURL).CombinedOutput()
	if err != nil {
		return fmt.Errorf("looking for database %s: %w\n%s", name, err, out)
	}
	if strings.TrimSpace(string(out)) == "1" {
		return nil
	}
	if out, err := exec.CommandContext(ctx, psql, "-Xq", "-c", "CREATE DATABASE "+name, serverURL).CombinedOutput(); err != nil {
		return fmt.Errorf("creating database %s: %w\n%s", name, err, out)
	}
	return nil
}

// loadRun is one `devstack loadtest` run.
type loadRun struct {
	e   app.Env
	o   loadOptions
	st  *loadStack
	pg  loadtest.Pgbench
	key string
	api *loadtest.Client
	// ref is the reads' reference server (loadtest.Reference), refAPI
	// its client, with the same key.
	ref    *loadtest.Reference
	refAPI *loadtest.Client
	tc     client.Client
	pgURL  string
	orders []loadtest.Order
	stamp  string
	// idle is the processor time per second the service's known processes
	// use at rest, read before the first run: settle waits until they are
	// back near it (a Temporal server polls its queues even when idle).
	idle float64
}

func (lt *loadRun) run(ctx context.Context) error {
	key := lt.o.key
	if key == "" {
		var err error
		if key, err = createLoadKey(ctx, lt.e, lt.st.dbURL); err != nil {
			return err
		}
	}
	lt.key = key
	lt.api = loadtest.NewClient(lt.st.apis, key, lt.o.conns)
	defer lt.api.Close()
	ref, err := startReference(ctx, lt.e, lt.st.dbURL, key)
	if err != nil {
		return err
	}
	defer func() { _ = ref.Close(context.WithoutCancel(ctx)) }()
	lt.ref = ref
	lt.refAPI = loadtest.NewClient([]string{ref.URL}, key, lt.o.conns)
	defer lt.refAPI.Close()
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := lt.api.WaitReady(readyCtx); err != nil {
		return err
	}
	var stamp [3]byte
	_, _ = rand.Read(stamp[:])
	lt.stamp = fmt.Sprintf("%x", stamp)

	w := lt.e.Stdout
	fmt.Fprintf(w, "devstack loadtest, %s, %d CPUs, load average %s\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAverage())
	fmt.Fprintf(w, "stack: %s (API %s, Temporal %s)%s; %d connections\n", lt.o.stack, strings.Join(lt.st.apis, " and "), lt.st.temporalAddr,
		map[bool]string{true: ", worker in its own process", false: ""}[lt.o.splitWorker], lt.o.conns)
	if len(lt.st.apis) > 1 {
		fmt.Fprintf(w, "requests go to the %d API replicas in turn, one request each\n", len(lt.st.apis))
	}
	if len(lt.st.cluster) > 0 {
		fmt.Fprintf(w, "CPU split over the cluster's processes: %s\n", describeParts(lt.st.cluster))
	}
	if len(lt.st.parts()) > 0 {
		var u cpuUse
		stop := lt.startCPU()
		time.Sleep(2 * time.Second)
		stop(&u)
		lt.idle = u.serviceTotal() / 2
		fmt.Fprintf(w, "at rest the service's processes use %.2f cores\n", lt.idle)
	}

	if len(lt.o.waiting) > 0 {
		return lt.memory(ctx)
	}

	topts, err := app.TemporalOptions(lt.e, lt.st.temporalAddr)
	if err != nil {
		return err
	}
	topts.Logger = quietTemporalLogger{}
	tc, err := client.DialContext(ctx, topts)
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", lt.st.temporalAddr, err)
	}
	defer tc.Close()
	lt.tc = tc
	if lt.pgURL, err = loadtest.WithDatabase(lt.e.Cfg.DatabaseURL, lt.o.pgDatabase); err != nil {
		return err
	}
	if err := ensureDatabase(ctx, lt.pg, lt.e.Cfg.DatabaseURL, lt.o.pgDatabase); err != nil {
		return err
	}
	if err := lt.pg.Init(ctx, lt.pgURL, lt.o.pgScale); err != nil {
		return err
	}
	fmt.Fprintf(w, "references: bare StartWorkflow on the same Temporal server; for reads, a minimal Go net/http + pgxpool server in this process (%s: the key from memory, the service's order query, JSON) and pgbench -S -M prepared (scale %d), on the same Postgres server\n", lt.ref.URL, lt.o.pgScale)

	if err := lt.creation(ctx); err != nil {
		return err
	}
	for _, n := range lt.o.sizes {
		if err := lt.reads(ctx, n); err != nil {
			return err
		}
	}
	if lt.o.deliver > 0 {
		if err := lt.delivery(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nload average at the end: %s\n", loadAverage())
	return nil
}

// createLoadKey creates a test-mode enterprise key at the largest budget
// in the stack's database, for an account of its own.
func createLoadKey(ctx context.Context, e app.Env, dbURL string) (string, error) {
	st, err := sqlstore.Open(ctx, dbURL, e.Log)
	if err != nil {
		return "", err
	}
	defer st.Close()
	now := time.Now()
	acct, err := st.EnsureAccount(ctx, "loadtest", now)
	if err != nil {
		return "", err
	}
	secret, err := models.NewAPIKeySecret(e.Cfg.KeyPrefix, models.ModeTest, rand.Reader)
	if err != nil {
		return "", err
	}
	_, err = st.CreateAPIKey(ctx, sqlstore.NewAPIKey{Secret: secret, AccountID: acct.ID, Mode: models.ModeTest,
		Tier: models.TierEnterprise, PerMinute: models.MaxPerMinute, CreatedAt: now})
	return secret, err
}

// startReference starts the reads' reference server on the app database
// dbURL, knowing the one key the load uses (read from the database once:
// the reference itself never reads keys there).
func startReference(ctx context.Context, e app.Env, dbURL, key string) (*loadtest.Reference, error) {
	st, err := sqlstore.Open(ctx, dbURL, e.Log)
	if err != nil {
		return nil, err
	}
	k, err := st.AuthenticateAPIKey(ctx, models.HashAPIKey(key))
	st.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the load's key for the reference server: %w", err)
	}
	return loadtest.StartReference(ctx, dbURL, map[string]loadtest.ReferenceKey{
		key: {AccountID: k.AccountID, Mode: string(k.Mode)},
	})
}

// newOrders creates n orders (a cart each), conc at a time, untimed, and
// keeps them.
func (lt *loadRun) newOrders(ctx context.Context, n int) (loadtest.Sample, error) {
	var mu sync.Mutex
	s := loadtest.Count(ctx, lt.o.conns, n, func(ctx context.Context, _ int) error {
		cart, err := lt.api.CreateCart(ctx)
		if err != nil {
			return err
		}
		o, err := lt.api.CreateOrder(ctx, cart)
		if err != nil {
			return err
		}
		mu.Lock()
		lt.orders = append(lt.orders, o)
		mu.Unlock()
		return nil
	})
	return s, s.Err()
}

// settle waits after orders were created, so the work they leave behind
// (the worker's first workflow tasks, the Temporal server's visibility and
// timer queues) does not spill into the next run: at least -settle, then,
// for a stack whose processes this command knows (started, or -cluster),
// until they use less than a tenth of a core over a second more than at
// rest (at most three minutes).
func (lt *loadRun) settle(ctx context.Context) {
	if lt.o.settle <= 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(lt.o.settle):
	}
	deadline := time.Now().Add(3 * time.Minute)
	for len(lt.st.parts()) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		var u cpuUse
		stop := lt.startCPU()
		time.Sleep(time.Second)
		stop(&u)
		if u.serviceTotal() < lt.idle+quietCPU {
			return
		}
	}
}

func (lt *loadRun) creation(ctx context.Context) error {
	w := lt.e.Stdout
	fmt.Fprintf(w, "\nOrder creation: %d per run, %d at a time\n", lt.o.create, lt.o.conns)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "pair\tbare StartWorkflow/s\tstart + first task/s\tPOST /v1/orders/s\tratio\tratio to start + first task\tPOST p50\tPOST p99\t\n")
	var refs, tasks, svcs, ratios, taskRatios []float64
	var refPer, taskPer, svcPer []cpuUse
	for pair := range lt.o.pairs {
		carts := make([]string, lt.o.create)
		cs := loadtest.Count(ctx, lt.o.conns, lt.o.create, func(ctx context.Context, i int) error {
			var err error
			carts[i], err = lt.api.CreateCart(ctx)
			return err
		})
		if err := cs.Err(); err != nil {
			return fmt.Errorf("creating carts: %w", err)
		}
		lt.settle(ctx)
		var ref, task, svc loadtest.Sample
		var refIDs, taskIDs []string
		var refCPU, taskCPU, svcCPU cpuUse
		// The bare starts go to a queue no worker polls; the second
		// reference's to the service's own queue, where its workers run
		// each workflow's first task as they do an order's.
		// Each run's processor time is counted until the stack is quiet
		// again (drained): the work an operation causes after its call
		// returns (the first workflow task, visibility) is its own.
		runRef := func() {
			refCPU = lt.drained(ctx, func() {
				ref, refIDs = loadtest.BareStarts(ctx, lt.tc, fmt.Sprintf("%s%02d", lt.stamp, pair), loadtest.ReferenceTaskQueue, lt.o.conns, lt.o.create)
			})
		}
		runTask := func() {
			taskCPU = lt.drained(ctx, func() {
				task, taskIDs = loadtest.BareStarts(ctx, lt.tc, fmt.Sprintf("%s%02dt", lt.stamp, pair), lt.e.Cfg.TemporalTaskQueue, lt.o.conns, lt.o.create)
			})
		}
		var mu sync.Mutex
		runSvc := func() {
			stopProfile := lt.profile(ctx, pair == 0, "create")
			svcCPU = lt.drained(ctx, func() {
				defer stopProfile()
				svc = loadtest.Count(ctx, lt.o.conns, lt.o.create, func(ctx context.Context, i int) error {
					o, err := lt.api.CreateOrder(ctx, carts[i])
					if err == nil {
						mu.Lock()
						lt.orders = append(lt.orders, o)
						mu.Unlock()
					}
					return err
				})
			})
		}
		// Each pair runs the three in another order, so none always runs
		// first (or last) in a window.
		runs := []func(){runRef, runSvc, runTask}
		for k := range runs {
			runs[(k+pair)%len(runs)]()
		}
		if err := errors.Join(ref.Err(), task.Err(), svc.Err()); err != nil {
			return err
		}
		if err := loadtest.Terminate(ctx, lt.tc, lt.o.conns, append(refIDs, taskIDs...)); err != nil {
			return fmt.Errorf("terminating reference workflows: %w", err)
		}
		lt.settle(ctx)
		refs, tasks, svcs = append(refs, ref.Rate()), append(tasks, task.Rate()), append(svcs, svc.Rate())
		ratios = append(ratios, svc.Rate()/ref.Rate())
		taskRatios = append(taskRatios, svc.Rate()/task.Rate())
		refPer = append(refPer, refCPU.per(len(ref.Latencies)))
		taskPer = append(taskPer, taskCPU.per(len(task.Latencies)))
		svcPer = append(svcPer, svcCPU.per(len(svc.Latencies)))
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%s\t%s\t\n", pair+1, ref.Rate(), task.Rate(), svc.Rate(),
			svc.Rate()/ref.Rate(), svc.Rate()/task.Rate(), ms(svc.Quantile(0.5)), ms(svc.Quantile(0.99)))
	}
	fmt.Fprintf(tw, "median\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t\t\t\n", loadtest.Median(refs), loadtest.Median(tasks), loadtest.Median(svcs),
		loadtest.Median(ratios), loadtest.Median(taskRatios))
	if err := tw.Flush(); err != nil {
		return err
	}
	lt.printCPU("bare start", refPer, "POST", svcPer)
	fmt.Fprintf(w, "start + first task: %s\n", lt.split(taskPer))
	return nil
}

func (lt *loadRun) reads(ctx context.Context, n int) error {
	w := lt.e.Stdout
	if missing := n - len(lt.orders); missing > 0 {
		fmt.Fprintf(w, "\n(creating %d more orders for %d in the account ...", missing, n)
		s, err := lt.newOrders(ctx, missing)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, " %.0f orders/s with their carts)\n", s.Rate())
		lt.settle(ctx)
	}
	orders := lt.orders
	fmt.Fprintf(w, "\nGET /v1/orders/{id}: %d orders in the account, %d connections, %s runs\n", len(orders), lt.o.conns, lt.o.duration)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "pair\treference req/s\tGET req/s\tGET ÷ reference\tpgbench -S TPS\tGET ÷ pgbench\tGET p50\tGET p99\treference p50\treference p99\t\n")
	get := func(ctx context.Context, _, _ int) error {
		return lt.api.GetOrder(ctx, orders[mrand.IntN(len(orders))].ID)
	}
	refGet := func(ctx context.Context, _, _ int) error {
		return lt.refAPI.GetOrder(ctx, orders[mrand.IntN(len(orders))].ID)
	}
	var refs, pgs, svcs, ratios, pgRatios []float64
	var refPer, pgPer, svcPer []cpuUse
	for pair := range lt.o.pairs {
		var tps float64
		var ref, svc loadtest.Sample
		var pgErr error
		var refCPU, pgCPU, svcCPU cpuUse
		runRef := func() {
			refCPU = lt.cpuOf(func() { ref = loadtest.Closed(ctx, lt.o.conns, lt.o.duration, refGet) })
		}
		runPg := func() {
			pgCPU = lt.cpuOf(func() {
				tps, pgErr = lt.pg.SelectOnly(ctx, lt.pgURL, lt.o.conns, min(lt.o.conns, runtime.NumCPU()), lt.o.duration)
			})
		}
		runSvc := func() {
			stopProfile := lt.profile(ctx, pair == 0, fmt.Sprintf("get-%d", n))
			defer stopProfile()
			defer lt.startCPU()(&svcCPU)
			svc = loadtest.Closed(ctx, lt.o.conns, lt.o.duration, get)
		}
		// Each pair runs the three in another order, so none always runs
		// first (or last) in a window; the service and the reference
		// server, the headline pair, run back to back in two of three.
		runs := []func(){runSvc, runRef, runPg}
		for k := range runs {
			runs[(k+pair)%len(runs)]()
		}
		if err := errors.Join(pgErr, ref.Err(), svc.Err()); err != nil {
			return err
		}
		refs, pgs, svcs = append(refs, ref.Rate()), append(pgs, tps), append(svcs, svc.Rate())
		ratios, pgRatios = append(ratios, svc.Rate()/ref.Rate()), append(pgRatios, svc.Rate()/tps)
		refPer = append(refPer, refCPU.per(len(ref.Latencies)))
		pgPer = append(pgPer, pgCPU.per(int(tps*lt.o.duration.Seconds())))
		svcPer = append(svcPer, svcCPU.per(len(svc.Latencies)))
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.3f\t%.0f\t%.3f\t%s\t%s\t%s\t%s\t\n", pair+1, ref.Rate(), svc.Rate(), svc.Rate()/ref.Rate(),
			tps, svc.Rate()/tps, ms(svc.Quantile(0.5)), ms(svc.Quantile(0.99)), ms(ref.Quantile(0.5)), ms(ref.Quantile(0.99)))
	}
	maxRate := loadtest.Median(svcs)
	fmt.Fprintf(tw, "median\t%.0f\t%.0f\t%.3f\t%.0f\t%.3f\t\t\t\t\t\n", loadtest.Median(refs), maxRate, loadtest.Median(ratios),
		loadtest.Median(pgs), loadtest.Median(pgRatios))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "GET ÷ reference server (median of %d pairs): %.3f\n", lt.o.pairs, loadtest.Median(ratios))
	fmt.Fprintf(w, "CPU per request of the reference server (machine-wide, median; the server runs in the load generator): %s\n", lt.split(refPer))
	lt.printCPU("pgbench transaction", pgPer, "GET", svcPer)
	// The ceiling: the same HTTP stack answering without authentication or
	// the database. No endpoint of the service can be faster than this.
	var hs loadtest.Sample
	ceilCPU := lt.cpuOf(func() {
		hs = loadtest.Closed(ctx, lt.o.conns, lt.o.duration, func(ctx context.Context, _, _ int) error { return lt.api.Health(ctx) })
	})
	if err := hs.Err(); err != nil {
		return err
	}
	hper := ceilCPU.per(len(hs.Latencies))
	fmt.Fprintf(w, "Ceiling: GET /healthz (same HTTP stack, no key, no database) %.0f req/s = %.3f of the reference server, %.3f of pgbench -S; GET /v1/orders/{id} is %.2f of it. CPU per request: machine %s\n",
		hs.Rate(), hs.Rate()/loadtest.Median(refs), hs.Rate()/loadtest.Median(pgs), maxRate/hs.Rate(), lt.split([]cpuUse{hper}))

	half := maxRate / 2
	open := loadtest.NewClient(lt.st.apis, lt.key, 4*lt.o.conns)
	defer open.Close()
	stopTrace := lt.trace(ctx, fmt.Sprintf("latency-%d", n))
	s, err := loadtest.Open(ctx, half, lt.o.duration, 4*lt.o.conns, func(ctx context.Context, _ int) error {
		return open.GetOrder(ctx, orders[mrand.IntN(len(orders))].ID)
	})
	stopTrace()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "GET at half the maximum rate, %.0f req/s offered for %s (open loop, latency from when each request was due):\n", half, lt.o.duration)
	fmt.Fprintf(w, "  served %.0f req/s; p50 %s  p90 %s  p99 %s  max %s; %d errors, %d late starts\n",
		s.Rate(), ms(s.Quantile(0.5)), ms(s.Quantile(0.9)), ms(s.Quantile(0.99)), ms(s.Quantile(1)), s.Errors, s.Late)
	if s.Errors > 0 {
		fmt.Fprintf(w, "  first error: %v\n", s.FirstErr)
	}
	// The reference: pgbench at half its own maximum, so that both load the
	// machine about as much, with latency counted the same way.
	refHalf := loadtest.Median(pgs) / 2
	ref, err := lt.pg.SelectOnlyAt(ctx, lt.pgURL, lt.o.conns, min(lt.o.conns, runtime.NumCPU()), refHalf, lt.o.duration)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pgbench -S at half its maximum rate, %.0f TPS offered for %s (open loop, latency from when each transaction was due):\n", refHalf, lt.o.duration)
	fmt.Fprintf(w, "  served %.0f TPS; p50 %s  p90 %s  p99 %s  max %s\n",
		ref.Rate(), ms(ref.Quantile(0.5)), ms(ref.Quantile(0.9)), ms(ref.Quantile(0.99)), ms(ref.Quantile(1)))
	return nil
}

// delivery takes -deliver orders from creation to delivered: each is
// created (a cart, then the order) and paid with the sandbox test helper
// by one of -connections goroutines, which then goes on to the next order,
// while a tracker follows them all in the app database until delivered.
// So up to every order is in flight at once. Each waits for the sandbox
// fulfiller's three steps (MEMOCART_SANDBOX_STEP_DELAY each, checked no
// more than once a second): below the stack's capacity that wait makes
// most of an order's time and the number in flight sets the rate; above
// it, the orders queue for the worker before they are paid, which the
// split at the paid step shows.
func (lt *loadRun) delivery(ctx context.Context) error {
	w := lt.e.Stdout
	n := lt.o.deliver
	fmt.Fprintf(w, "\nCreation to delivered: %d orders, each created (cart, order) and paid (sandbox test helper) by one of %d connections, then followed in the app database until delivered\n", n, lt.o.conns)
	tr, err := loadtest.OpenTracker(ctx, lt.st.dbURL)
	if err != nil {
		return err
	}
	defer func() { _ = tr.Close(context.WithoutCancel(ctx)) }()
	lt.settle(ctx)

	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	created := make(chan struct{})
	followed := make(chan error, 1)
	var cpu cpuUse
	var retried atomic.Int64
	// A client does what a 503 asks: the same request again, under the same
	// Idempotency-Key (an overloaded stack answers it when an order's
	// workflow could not be started within the request's time).
	again := func(ctx context.Context, call func() error) error {
		for attempt := 1; ; attempt++ {
			err := call()
			if err == nil || attempt == 5 || !loadtest.Unavailable(err) {
				return err
			}
			retried.Add(1)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
	}
	stopCPU := lt.startCPU()
	go func() { followed <- tr.Follow(followCtx, 250*time.Millisecond, time.Minute, created) }()
	s := loadtest.Count(ctx, lt.o.conns, n, func(ctx context.Context, _ int) error {
		cart, err := lt.api.CreateCart(ctx)
		if err != nil {
			return err
		}
		sent := time.Now()
		var o loadtest.Order
		orderKey := loadtest.NewIdempotencyKey()
		if err := again(ctx, func() (err error) { o, err = lt.api.CreateOrderWithKey(ctx, cart, orderKey); return err }); err != nil {
			return err
		}
		tr.Add(o.ID, sent)
		var outcome string
		payKey := loadtest.NewIdempotencyKey()
		if err := again(ctx, func() (err error) { outcome, err = lt.api.Pay(ctx, o.ID, payKey); return err }); err != nil {
			return err
		}
		if outcome != "matched" {
			return fmt.Errorf("order %s: the test payment's outcome is %q, not matched", o.ID, outcome)
		}
		return nil
	})
	close(created)
	if err := s.Err(); err != nil {
		cancel()
		<-followed
		return fmt.Errorf("creating and paying orders: %w", err)
	}
	if err := <-followed; err != nil {
		return fmt.Errorf("following the orders to delivered: %w", err)
	}
	stopCPU(&cpu)
	d, err := loadtest.SummariseDelivery(tr.Journeys())
	if err != nil {
		return err
	}
	// What a client reads agrees with the database (untimed).
	js := tr.Journeys()
	check := loadtest.Count(ctx, lt.o.conns, len(js), func(ctx context.Context, i int) error {
		id := js[i].ID
		status, err := lt.api.OrderStatus(ctx, id)
		if err == nil && status != string(models.OrderDelivered) {
			err = fmt.Errorf("order %s reads %s through the API", id, status)
		}
		return err
	})
	if err := check.Err(); err != nil {
		return err
	}

	secs := func(x time.Duration) string { return fmt.Sprintf("%.2f s", x.Seconds()) }
	q := loadtest.Quantile
	fmt.Fprintf(w, "  created and paid: %d in %s, %.1f orders/s (cart + order + payment per order: p50 %s, p99 %s); %d requests answered 503 and were sent again\n",
		n, secs(s.Elapsed), s.Rate(), ms(s.Quantile(0.5)), ms(s.Quantile(0.99)), retried.Load())
	fmt.Fprintf(w, "  delivered: %d in %s from the first POST /v1/orders to the last delivery: %.1f delivered orders/s, %.0f in flight on average\n",
		d.Orders, secs(d.Span), d.Rate(), d.MeanInFlight())
	fmt.Fprintf(w, "  each order, POST to delivered: p50 %s, p99 %s, max %s\n", secs(q(d.ToDelivered, 0.5)), secs(q(d.ToDelivered, 0.99)), secs(q(d.ToDelivered, 1)))
	fmt.Fprintf(w, "    POST to paid (the service: order, payment, workflow): p50 %s, p99 %s\n", secs(q(d.ToPaid, 0.5)), secs(q(d.ToPaid, 0.99)))
	fmt.Fprintf(w, "    paid to delivered (the sandbox's three steps and the workflow's checks): p50 %s, p99 %s\n", secs(q(d.PaidToDelivered, 0.5)), secs(q(d.PaidToDelivered, 0.99)))
	fmt.Fprintf(w, "  all %d read delivered through the API afterwards\n", d.Orders)
	// Where the Temporal server's work goes: the orders' histories, read
	// (untimed) from up to 200 of them spread over the run.
	var ids []string
	for i := 0; i < len(js); i += (len(js) + 199) / 200 {
		ids = append(ids, models.WorkflowID(js[i].ID))
	}
	h, err := loadtest.ReadHistories(ctx, lt.tc, ids, lt.o.conns)
	if err != nil {
		return fmt.Errorf("reading the orders' workflow histories: %w", err)
	}
	fmt.Fprintf(w, "  workflow history per order (mean of %d): %.1f events: %.1f workflow tasks, %.1f activities, %.1f timers, %.1f signals (one payment; more when an api replica's reconciler sent it again before the workflow had recorded it)\n",
		h.Workflows, h.Events, h.WorkflowTasks, h.Activities, h.Timers, h.Signals)
	fmt.Fprintf(w, "CPU per delivered order (machine-wide, whole phase): %s\n", lt.split([]cpuUse{cpu.per(d.Orders)}))
	return nil
}

// cpuUse is processor time spent during a run (or per operation of it),
// in seconds: the whole machine's, this process's (the load generator),
// Postgres's (every process named postgres on the machine, or with
// -cluster the cluster's server alone) and, by role, the service's
// processes the tool knows (the children it started, or the cluster's
// components; none for another external stack).
type cpuUse struct {
	machine, self, postgres float64
	service                 map[string]float64
	// postgresDB splits postgres by database, with -cluster (see
	// loadtest.PostgresByDatabase).
	postgresDB map[string]float64
}

// quietCPU is the processor time per second above their rest under
// which settle takes the stack's processes for quiet.
const quietCPU = 0.1

func (u cpuUse) serviceTotal() float64 {
	var t float64
	for _, v := range u.service {
		t += v
	}
	return t
}

// rest is the machine's time outside the parts named.
func (u cpuUse) rest() float64 { return u.machine - u.serviceTotal() - u.self - u.postgres }

func (u cpuUse) per(n int) cpuUse {
	if n <= 0 {
		return cpuUse{}
	}
	f := float64(n)
	out := cpuUse{machine: u.machine / f, self: u.self / f, postgres: u.postgres / f, service: map[string]float64{}}
	for k, v := range u.service {
		out.service[k] = v / f
	}
	if u.postgresDB != nil {
		out.postgresDB = map[string]float64{}
		for k, v := range u.postgresDB {
			out.postgresDB[k] = v / f
		}
	}
	return out
}

// cpuOf measures the processor time run takes.
func (lt *loadRun) cpuOf(run func()) cpuUse {
	var u cpuUse
	stop := lt.startCPU()
	run()
	stop(&u)
	return u
}

// drained measures the processor time run takes and what the stack then
// spends until it is quiet again (settle). What the processes use at rest
// over the wait is in it (a few hundredths of a core on a quiet stack):
// subtracting a rest read at one moment gave nonsense when that moment
// was not quiet.
func (lt *loadRun) drained(ctx context.Context, run func()) cpuUse {
	return lt.cpuOf(func() {
		run()
		lt.settle(ctx)
	})
}

// startCPU starts measuring processor time; the function it returns
// stores what was spent since into its argument.
func (lt *loadRun) startCPU() func(*cpuUse) {
	parts := lt.st.parts()
	roots := make([]int, len(parts))
	for i, p := range parts {
		roots[i] = p.pid
	}
	before, err := loadtest.ReadCPU(os.Getpid())
	if err != nil {
		return func(*cpuUse) {}
	}
	beforeTrees := loadtest.ReadTrees(roots...)
	return func(u *cpuUse) {
		after, err := loadtest.ReadCPU(os.Getpid())
		if err != nil {
			*u = cpuUse{}
			return
		}
		afterTrees := loadtest.ReadTrees(roots...)
		d := after.Since(before)
		*u = cpuUse{machine: d.Busy, self: d.Procs[os.Getpid()], postgres: d.Postgres, service: map[string]float64{}}
		for _, p := range parts {
			t := afterTrees[p.pid].Total - beforeTrees[p.pid].Total
			if p.role == "postgres" {
				u.postgres = t
				u.postgresDB = loadtest.PostgresByDatabase(beforeTrees[p.pid], afterTrees[p.pid])
				continue
			}
			u.service[p.role] += t
		}
	}
}

// roles lists the service's roles in the order the CPU split prints them.
func (lt *loadRun) roles() []string {
	order := map[string]int{"dev": 0, "api": 1, "worker": 2, "temporal": 3, "redis": 4}
	var out []string
	for _, p := range lt.st.parts() {
		if p.role != "postgres" && !slices.Contains(out, p.role) {
			out = append(out, p.role)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return order[a] - order[b] })
	return out
}

// describeParts says which processes the CPU split reads, e.g.
// "api 2 processes, worker 2, temporal 1, postgres 1 (with its backends)".
func describeParts(parts []stackPart) string {
	count := map[string]int{}
	var roles []string
	for _, p := range parts {
		if count[p.role] == 0 {
			roles = append(roles, p.role)
		}
		count[p.role]++
	}
	var b strings.Builder
	for i, r := range roles {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%d", r, count[r])
	}
	b.WriteString(" (each with its children: Postgres's backends)")
	return b.String()
}

// split formats a per-operation cpuUse (median of us for each part) as
// "machine M µs = api A + ... + load generator L + Postgres P + the rest R".
func (lt *loadRun) split(us []cpuUse) string {
	med := func(f func(cpuUse) float64) float64 {
		xs := make([]float64, len(us))
		for i, u := range us {
			xs[i] = f(u)
		}
		return loadtest.Median(xs) * 1e6
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f µs =", med(func(u cpuUse) float64 { return u.machine }))
	roles := lt.roles()
	if len(lt.st.cluster) == 0 && len(roles) > 0 {
		fmt.Fprintf(&b, " service %.0f", med(cpuUse.serviceTotal))
		if len(roles) > 1 {
			b.WriteString(" (")
			for i, r := range roles {
				if i > 0 {
					b.WriteString(" + ")
				}
				fmt.Fprintf(&b, "%s %.0f", r, med(func(u cpuUse) float64 { return u.service[r] }))
			}
			b.WriteString(")")
		}
		b.WriteString(" +")
	} else {
		for _, r := range roles {
			fmt.Fprintf(&b, " %s %.0f +", r, med(func(u cpuUse) float64 { return u.service[r] }))
		}
	}
	rest := "the rest (kernel, other processes)"
	if len(roles) == 0 {
		rest = "the rest (the service, kernel, other processes)"
	}
	fmt.Fprintf(&b, " load generator %.0f + Postgres %.0f", med(func(u cpuUse) float64 { return u.self }), med(func(u cpuUse) float64 { return u.postgres }))
	if len(us) > 0 && len(us[0].postgresDB) > 0 {
		dbs := slices.Sorted(maps.Keys(us[0].postgresDB))
		vals := map[string]float64{}
		for _, db := range dbs {
			vals[db] = med(func(u cpuUse) float64 { return u.postgresDB[db] })
		}
		slices.SortStableFunc(dbs, func(a, b string) int { return cmp.Compare(vals[b], vals[a]) })
		b.WriteString(" (")
		for i, db := range dbs {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %.0f", db, vals[db])
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " + %s %.0f", rest, med(cpuUse.rest))
	return b.String()
}

// printCPU prints the median processor time per operation of the
// reference and the service runs.
func (lt *loadRun) printCPU(refName string, ref []cpuUse, svcName string, svc []cpuUse) {
	med := func(us []cpuUse, f func(cpuUse) float64) float64 {
		xs := make([]float64, len(us))
		for i, u := range us {
			xs[i] = f(u)
		}
		return loadtest.Median(xs) * 1e6
	}
	machine := func(u cpuUse) float64 { return u.machine }
	postgres := func(u cpuUse) float64 { return u.postgres }
	var temporal string
	if slices.Contains(lt.roles(), "temporal") {
		temporal = fmt.Sprintf("Temporal %.0f, ", med(ref, func(u cpuUse) float64 { return u.service["temporal"] }))
	}
	fmt.Fprintf(lt.e.Stdout, "CPU per operation (machine-wide, median): %s %.0f µs (%sPostgres %.0f); %s %s\n",
		refName, med(ref, machine), temporal, med(ref, postgres), svcName, lt.split(svc))
}

// memory creates waiting orders up to each -waiting count and prints each
// process's resident memory.
func (lt *loadRun) memory(ctx context.Context) error {
	w := lt.e.Stdout
	if len(lt.st.procs) == 0 {
		return errors.New("-waiting needs -stack dev: it reads the memory of the processes it started")
	}
	fmt.Fprintf(w, "\nMemory with orders waiting for payment (resident set size, after %s of quiet)\n", 15*time.Second)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "waiting orders\torders/s while creating")
	for _, p := range lt.st.procs {
		fmt.Fprintf(tw, "\t%s RSS", p.name)
	}
	fmt.Fprintf(tw, "\t\n0\t")
	for _, p := range lt.st.procs {
		fmt.Fprintf(tw, "\t%s", mb(rss(p.cmd.Process.Pid)))
	}
	fmt.Fprintf(tw, "\t\n")
	_ = tw.Flush()
	for _, n := range lt.o.waiting {
		s, err := lt.newOrders(ctx, n-len(lt.orders))
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(15 * time.Second):
		}
		fmt.Fprintf(tw, "%d\t%.0f", len(lt.orders), s.Rate())
		for _, p := range lt.st.procs {
			fmt.Fprintf(tw, "\t%s", mb(rss(p.cmd.Process.Pid)))
		}
		fmt.Fprintf(tw, "\t\n")
		_ = tw.Flush()
		lt.saveHeaps(ctx, len(lt.orders))
	}
	return nil
}

// saveHeaps saves, with -profile, each child's heap profile (after a
// collection), so what holds the memory at a count can be read with
// `go tool pprof -sample_index=inuse_space`.
func (lt *loadRun) saveHeaps(ctx context.Context, count int) {
	if lt.o.profileDir == "" {
		return
	}
	for _, p := range lt.st.procs {
		if p.adminAddr == "" {
			continue
		}
		path := filepath.Join(lt.o.profileDir, fmt.Sprintf("%s-heap-%d.pprof", p.name, count))
		url := fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", p.adminAddr)
		if err := fetchTo(ctx, url, path); err != nil {
			lt.e.Log.Warn("heap profile not saved", slog.String("path", path), slog.Any("error", err))
			continue
		}
		lt.e.Log.Info("heap profile saved", slog.String("path", path))
	}
}

// profile starts a CPU profile of every child with an admin listener when
// first is true, and returns a function that waits for them to be saved.
func (lt *loadRun) profile(ctx context.Context, first bool, what string) func() {
	return lt.capture(ctx, first, "profile", what+".pprof")
}

// trace is profile for an execution trace (go tool trace), which shows
// what a slow request waited for: the scheduler, the collector, a lock.
func (lt *loadRun) trace(ctx context.Context, what string) func() {
	return lt.capture(ctx, true, "trace", what+".trace")
}

func (lt *loadRun) capture(ctx context.Context, first bool, kind, suffix string) func() {
	if !first || lt.o.profileDir == "" {
		return func() {}
	}
	secs := max(1, int(lt.o.duration/time.Second)-1)
	var wg sync.WaitGroup
	for _, p := range lt.st.procs {
		if p.adminAddr == "" {
			continue
		}
		wg.Go(func() {
			path := filepath.Join(lt.o.profileDir, fmt.Sprintf("%s-%s", p.name, suffix))
			url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", p.adminAddr, kind, secs)
			if err := fetchTo(ctx, url, path); err != nil {
				lt.e.Log.Warn(kind+" not saved", slog.String("path", path), slog.Any("error", err))
				return
			}
			lt.e.Log.Info(kind+" saved", slog.String("path", path))
		})
	}
	return wg.Wait
}

// fetchTo saves what a GET of url answers in the file at path.
func fetchTo(ctx context.Context, url, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", res.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rss is a process's resident set size in bytes, 0 if unknown.
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mb(b int64) string { return fmt.Sprintf("%d MB", b/1_000_000) }

// quietTemporalLogger drops the SDK client's logs: the load tool prints
// its own results.
type quietTemporalLogger struct{}

func (quietTemporalLogger) Debug(string, ...any) {}
func (quietTemporalLogger) Info(string, ...any)  {}
func (quietTemporalLogger) Warn(string, ...any)  {}
func (quietTemporalLogger) Error(string, ...any) {}
