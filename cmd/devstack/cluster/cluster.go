// Package cluster runs Memocart's production topology on one machine,
// without Docker: its own PostgreSQL and Redis (installed binaries, own
// data directories and ports), Temporal's own server binary with its
// schema created by Temporal's SQL tool, default store and SQL visibility
// on that Postgres, the Temporal UI server, then two `memocart api` and two
// `memocart worker` processes of the service binary. `devstack cluster`
// drives it; docker-compose.yml describes the same topology, and a test in
// cmd/devstack keeps the two in lockstep through the definitions exported
// here.
//
// Every process is started detached, in its own session, with its pid
// recorded in the state directory; Down stops exactly those processes and
// waits until none of them is left. Nothing else on the machine is touched.
//
// It may import the standard library, the Temporal SDK client and API
// modules, pgx, go-redis and memocart's workflows package (for the search
// attributes); never the Temporal server, which it runs as a binary.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Versions the topology runs. go.mod pins the same modules (the cluster
// builds their binaries from it) and docker-compose.yml the same images;
// tests check both.
const (
	TemporalServerVersion = "1.32.0"
	TemporalUIVersion     = "2.54.1"
)

// Names shared by the cluster and docker-compose.yml.
const (
	Namespace          = "default"
	TaskQueue          = "memocart-orders"
	NamespaceRetention = 72 * time.Hour
	NumHistoryShards   = 4
	TemporalDB         = "temporal"
	VisibilityDB       = "temporal_visibility"
	AppDB              = "memocart"
)

// PostgresSettings are the server settings (postgres -c) both topologies
// give their Postgres: Temporal's four services in one process keep up to
// about 120 connections (20 per service to the default store, 10 to
// visibility) and each memocart process up to 20, past the default 100.
var PostgresSettings = []string{"max_connections=300"}

// DefaultPortBase is where the cluster's ports start (see Ports).
const DefaultPortBase = 17000

// MaxMembershipPort is the highest port Temporal's membership can use: its
// SQL schema keeps cluster_membership.rpc_port as a smallint, and the
// server exits at start ("value out of range for type smallint") when a
// membership port is above it. It bounds the port base.
const MaxMembershipPort = 32767

// Ports are every port the cluster listens on, all on 127.0.0.1, derived
// from one base so a second cluster (the test's) moves as a whole.
type Ports struct {
	Base                                                int
	Postgres, Redis                                     int
	Frontend, FrontendHTTP, History, Matching, Worker   int
	FrontendMember, HistoryMember, MatchingMember, WMem int
	UI, Prometheus                                      int
	API, APIAdmin, WorkerAdmin                          [2]int
}

// PortsAt returns the ports of a cluster at base.
func PortsAt(base int) Ports {
	return Ports{
		Base: base, Postgres: base + 432, Redis: base + 379,
		Frontend: base + 233, FrontendHTTP: base + 243, History: base + 234, Matching: base + 235, Worker: base + 239,
		FrontendMember: base + 933, HistoryMember: base + 934, MatchingMember: base + 935, WMem: base + 939,
		UI: base + 880, Prometheus: base + 90,
		API:         [2]int{base + 81, base + 82},
		APIAdmin:    [2]int{base + 71, base + 72},
		WorkerAdmin: [2]int{base + 61, base + 62},
	}
}

// All lists every port, for the free-port check before a first start.
func (p Ports) All() []int {
	return []int{p.Postgres, p.Redis, p.Frontend, p.FrontendHTTP, p.History, p.Matching, p.Worker,
		p.FrontendMember, p.HistoryMember, p.MatchingMember, p.WMem, p.UI, p.Prometheus,
		p.API[0], p.API[1], p.APIAdmin[0], p.APIAdmin[1], p.WorkerAdmin[0], p.WorkerAdmin[1]}
}

const host = "127.0.0.1"

func addr(port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// Options configures a Cluster.
type Options struct {
	// StateDir holds everything: data, logs, pid files, cluster.env.
	StateDir string
	// BinDir receives the Temporal binaries the cluster builds; default
	// StateDir/bin. Sharing one across clusters saves their link time.
	BinDir string
	// ModuleDir is the tools module (cmd/devstack), where `go build` runs (its
	// go.mod pins the Temporal modules as tools).
	ModuleDir string
	// Memocart is the service binary run as api and worker (make build).
	Memocart string
	// RulesFile is the Prometheus rules file the cluster's Prometheus
	// evaluates; default docs/monitoring/memocart.rules.yml of the
	// repository ModuleDir is in.
	RulesFile string
	// PortBase places the ports (PortsAt); 0 = the running cluster's, or
	// DefaultPortBase.
	PortBase int
	// Env is the environment api and worker inherit (a MEMOCART_* variable
	// there tunes them, e.g. MEMOCART_SANDBOX_STEP_DELAY); the variables
	// the cluster sets win.
	Env []string
	// Go is the go command; default "go".
	Go string
	// Out receives progress and the summary.
	Out io.Writer
}

// Cluster is one topology under one state directory.
type Cluster struct {
	opts  Options
	ports Ports
	state state
	// reaped holds, per component started by this process, a channel
	// closed once it has exited (see spawn).
	reaped map[string]<-chan struct{}
}

// state is what survives between invocations (cluster.json).
type state struct {
	PortBase int `json:"port_base"`
	// WebhookSecretsKey is generated once: endpoint secrets sealed with it
	// stay readable across restarts.
	WebhookSecretsKey string `json:"webhook_secrets_key"`
	// APIKey is the test key created at the first up.
	APIKey string `json:"api_key,omitempty"`
}

// New prepares a Cluster; it starts nothing.
func New(opts Options) (*Cluster, error) {
	if opts.StateDir == "" {
		return nil, errors.New("cluster: no state directory")
	}
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, err
	}
	opts.StateDir = abs
	if opts.BinDir == "" {
		opts.BinDir = filepath.Join(abs, "bin")
	}
	if opts.BinDir, err = filepath.Abs(opts.BinDir); err != nil {
		return nil, err
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	if opts.RulesFile == "" {
		opts.RulesFile = rulesFileBeside(opts.ModuleDir)
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	c := &Cluster{opts: opts, reaped: map[string]<-chan struct{}{}}
	for _, d := range []string{abs, c.path("logs"), c.path("run"), opts.BinDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := c.loadState(); err != nil {
		return nil, err
	}
	switch {
	case opts.PortBase == 0 && c.state.PortBase == 0:
		c.state.PortBase = DefaultPortBase
	case opts.PortBase != 0 && c.state.PortBase != 0 && opts.PortBase != c.state.PortBase && c.anyRunning():
		return nil, fmt.Errorf("cluster: running on port base %d; stop it (devstack cluster down) before moving it to %d", c.state.PortBase, opts.PortBase)
	case opts.PortBase != 0:
		c.state.PortBase = opts.PortBase
	}
	if b := c.state.PortBase; b < 1024 || b+939 > MaxMembershipPort {
		return nil, fmt.Errorf("cluster: port base %d out of range (1024..%d: Temporal stores its membership ports as smallint)", b, MaxMembershipPort-939)
	}
	c.ports = PortsAt(c.state.PortBase)
	return c, nil
}

// Ports returns the cluster's ports.
func (c *Cluster) Ports() Ports { return c.ports }

// EnvFile returns the path of cluster.env.
func (c *Cluster) EnvFile() string { return c.path("cluster.env") }

// APIKey returns the test API key created at the first up ("" before).
func (c *Cluster) APIKey() string { return c.state.APIKey }

// LogPath returns the log file of a component.
func (c *Cluster) LogPath(name string) string { return c.path("logs", name+".log") }

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.opts.StateDir}, elem...)...)
}

func (c *Cluster) pidPath(name string) string { return c.path("run", name+".pid") }

func (c *Cluster) loadState() error {
	b, err := os.ReadFile(c.path("cluster.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &c.state); err != nil {
		return fmt.Errorf("cluster: %s: %w", c.path("cluster.json"), err)
	}
	return nil
}

// saveState writes cluster.json, readable only by its owner: it holds the
// webhook secrets key and the test API key.
func (c *Cluster) saveState() error {
	b, err := json.MarshalIndent(c.state, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(c.path("cluster.json"), append(b, '\n'), 0o600)
}

// Up starts every component that is not running, in dependency order, and
// waits until each is healthy; running ones are left alone. It prints what
// it started, the addresses and where the logs are.
func (c *Cluster) Up(ctx context.Context) error {
	out := c.opts.Out
	fmt.Fprintf(out, "devstack cluster: state in %s, logs in %s\n", c.opts.StateDir, c.path("logs"))
	if !c.anyRunning() {
		if err := c.checkPortsFree(); err != nil {
			return err
		}
	}
	if c.state.WebhookSecretsKey == "" {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return err
		}
		c.state.WebhookSecretsKey = base64.StdEncoding.EncodeToString(k)
	}
	if err := c.saveState(); err != nil {
		return err
	}
	if err := c.buildTools(ctx); err != nil {
		return err
	}
	for _, comp := range c.components() {
		if comp.name == "api-1" {
			// The release step, before any app process: migrations, then
			// the test key the summary prints (once per state dir).
			if err := c.prepareApp(ctx); err != nil {
				return err
			}
		}
		if err := c.ensure(ctx, comp); err != nil {
			return err
		}
	}
	return c.summary()
}

// ensure starts comp unless it runs, and waits until it is healthy.
func (c *Cluster) ensure(ctx context.Context, comp component) error {
	if rec, ok := readPID(c.pidPath(comp.name)); ok {
		if err := c.waitHealthy(ctx, comp, nil); err != nil {
			return fmt.Errorf("%s (pid %d) runs but is not healthy: %w; see %s", comp.name, rec.pid, err, c.LogPath(comp.name))
		}
		fmt.Fprintf(c.opts.Out, "  %-12s running    pid %-7d %s\n", comp.name, rec.pid, comp.addr)
		return nil
	}
	began := time.Now()
	if comp.prepare != nil {
		if err := comp.prepare(ctx); err != nil {
			return fmt.Errorf("preparing %s: %w", comp.name, err)
		}
	}
	cmd, cred, err := comp.command()
	if err != nil {
		return fmt.Errorf("%s: %w", comp.name, err)
	}
	cmd.Dir = c.opts.StateDir
	reaped, err := spawn(cmd, c.LogPath(comp.name), c.pidPath(comp.name), cred)
	if err != nil {
		return fmt.Errorf("starting %s: %w", comp.name, err)
	}
	c.reaped[comp.name] = reaped
	if err := c.waitHealthy(ctx, comp, reaped); err != nil {
		return fmt.Errorf("%s did not become healthy: %w\n--- last lines of %s:\n%s", comp.name, err, c.LogPath(comp.name), tail(c.LogPath(comp.name), 20))
	}
	if comp.after != nil {
		if err := comp.after(ctx); err != nil {
			return fmt.Errorf("%s: %w", comp.name, err)
		}
	}
	fmt.Fprintf(c.opts.Out, "  %-12s started    pid %-7d %s  (%.1fs)\n", comp.name, cmd.Process.Pid, comp.addr, time.Since(began).Seconds())
	return nil
}

// waitHealthy polls comp's health check until it passes, the process
// exits (when this process started it), or comp's start budget runs out.
func (c *Cluster) waitHealthy(ctx context.Context, comp component, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, comp.startBudget)
	defer cancel()
	var last error
	for {
		hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
		last = comp.healthy(hctx)
		hcancel()
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited (last check: %w)", last)
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %w)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Down stops every component this state directory's pid files name, apps
// first and the databases last, each with its stop signal and SIGKILL after
// its timeout, and waits until none of its processes is left.
func (c *Cluster) Down(ctx context.Context) error {
	comps := c.components()
	var errs []error
	for i := len(comps) - 1; i >= 0; i-- {
		if err := c.stop(comps[i], false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stop stops one component gracefully (kill=false) or with SIGKILL.
func (c *Cluster) Stop(name string, kill bool) error {
	comp, err := c.component(name)
	if err != nil {
		return err
	}
	return c.stop(comp, kill)
}

// Start starts one component (after Stop or a crash) and waits until it is
// healthy. What it depends on must be running.
func (c *Cluster) Start(ctx context.Context, name string) error {
	comp, err := c.component(name)
	if err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(name, "temporal"):
		if err := c.buildTools(ctx); err != nil {
			return err
		}
	case strings.HasPrefix(name, "api-"), strings.HasPrefix(name, "worker-"):
		// A rebuilt binary may bring a migration; api and worker refuse
		// to start before it is applied.
		if err := c.prepareApp(ctx); err != nil {
			return err
		}
	}
	return c.ensure(ctx, comp)
}

func (c *Cluster) stop(comp component, kill bool) error {
	rec, ok := readPID(c.pidPath(comp.name))
	if !ok {
		_ = os.Remove(c.pidPath(comp.name))
		return nil
	}
	sig, how := comp.stopSignal, "stopped"
	if kill {
		sig, how = syscall.SIGKILL, "killed"
	}
	began := time.Now()
	forced, err := stopGroup(rec, sig, comp.stopBudget)
	if err != nil {
		return fmt.Errorf("stopping %s: %w", comp.name, err)
	}
	if forced && !kill {
		how = fmt.Sprintf("killed after %v without exiting", comp.stopBudget)
	}
	if ch, ok := c.reaped[comp.name]; ok {
		<-ch // started by this process: collect it, so no zombie is left
		delete(c.reaped, comp.name)
	}
	_ = os.Remove(c.pidPath(comp.name))
	fmt.Fprintf(c.opts.Out, "  %-12s %s (pid %d, %.1fs)\n", comp.name, how, rec.pid, time.Since(began).Seconds())
	return nil
}

// ComponentStatus is one line of Status.
type ComponentStatus struct {
	Name    string
	PID     int // 0 when not running
	Addr    string
	Health  error // nil when running and healthy
	LogPath string
}

// Status checks every component.
func (c *Cluster) Status(ctx context.Context) []ComponentStatus {
	var out []ComponentStatus
	for _, comp := range c.components() {
		s := ComponentStatus{Name: comp.name, Addr: comp.addr, LogPath: c.LogPath(comp.name)}
		if rec, ok := readPID(c.pidPath(comp.name)); ok {
			s.PID = rec.pid
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			s.Health = comp.healthy(hctx)
			cancel()
		} else {
			s.Health = errors.New("not running")
		}
		out = append(out, s)
	}
	return out
}

// PrintStatus writes Status as a table and returns an error naming the
// components that are down or unhealthy.
func (c *Cluster) PrintStatus(ctx context.Context, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tADDRESS\tHEALTH\tLOG")
	var bad []string
	for _, s := range c.Status(ctx) {
		pid, health := "-", "ok"
		if s.PID != 0 {
			pid = strconv.Itoa(s.PID)
		}
		if s.Health != nil {
			health = s.Health.Error()
			bad = append(bad, s.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, pid, s.Addr, health, s.LogPath)
	}
	tw.Flush()
	if len(bad) > 0 {
		return fmt.Errorf("not healthy: %s", strings.Join(bad, ", "))
	}
	return nil
}

// Names lists the components in start order.
func (c *Cluster) Names() []string {
	var names []string
	for _, comp := range c.components() {
		names = append(names, comp.name)
	}
	return names
}

// PIDs returns the pid of each component running now, by name
// (postgres, redis, temporal, api-1, worker-2, ...): the processes a
// measurement of the cluster reads the processor time of.
func (c *Cluster) PIDs() map[string]int {
	out := map[string]int{}
	for _, name := range c.Names() {
		if rec, ok := readPID(c.pidPath(name)); ok {
			out[name] = rec.pid
		}
	}
	return out
}

func (c *Cluster) component(name string) (component, error) {
	for _, comp := range c.components() {
		if comp.name == name {
			return comp, nil
		}
	}
	return component{}, fmt.Errorf("no component %q (one of %s)", name, strings.Join(c.Names(), ", "))
}

func (c *Cluster) anyRunning() bool {
	entries, _ := os.ReadDir(c.path("run"))
	for _, e := range entries {
		if _, ok := readPID(c.path("run", e.Name())); ok {
			return true
		}
	}
	return false
}

// checkPortsFree refuses to start on a port something else holds, before
// anything starts: a half-started cluster is harder to read than the
// port's name.
func (c *Cluster) checkPortsFree() error {
	var busy []string
	for _, p := range c.ports.All() {
		ln, err := net.Listen("tcp", addr(p))
		if err != nil {
			busy = append(busy, strconv.Itoa(p))
			continue
		}
		ln.Close()
	}
	if len(busy) > 0 {
		return fmt.Errorf("cluster: ports %s on %s are in use; pick another base with -ports", strings.Join(busy, ", "), host)
	}
	return nil
}

// buildTools builds the Temporal binaries into BinDir. go build relinks
// only what changed, so a warm build takes seconds; the first compiles the
// Temporal server (about ten minutes on two cores).
func (c *Cluster) buildTools(ctx context.Context) error {
	if c.opts.ModuleDir == "" {
		return errors.New("cluster: no module directory to build the Temporal binaries in (run from the memocart repository)")
	}
	fmt.Fprintf(c.opts.Out, "  building     temporal-server, temporal-sql-tool, temporal-ui-server into %s (go build; cached after the first)\n", c.opts.BinDir)
	began := time.Now()
	for _, t := range tools {
		cmd := exec.CommandContext(ctx, c.opts.Go, "build", "-o", filepath.Join(c.opts.BinDir, t.bin), t.pkg)
		cmd.Dir = c.opts.ModuleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %w\n%s", t.pkg, err, out)
		}
	}
	fmt.Fprintf(c.opts.Out, "  built        in %.1fs\n", time.Since(began).Seconds())
	return nil
}

// tools are the binaries built from go.mod's tool directives.
var tools = []struct{ bin, pkg string }{
	{"temporal-server", "go.temporal.io/server/cmd/server"},
	{"temporal-sql-tool", "go.temporal.io/server/cmd/tools/sql"},
	{"temporal-ui-server", "github.com/temporalio/ui-server/v2/cmd/server"},
}

func (c *Cluster) tool(bin string) string { return filepath.Join(c.opts.BinDir, bin) }

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
