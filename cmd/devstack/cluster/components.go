package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// component is one process of the topology.
type component struct {
	name string
	addr string // what status shows
	// prepare runs before each start (idempotent: initdb, schema...).
	prepare func(ctx context.Context) error
	// command is the process to start, and the user to run it as (nil:
	// ourselves).
	command func() (*exec.Cmd, *syscall.Credential, error)
	healthy func(ctx context.Context) error
	// after runs once the process is healthy (Temporal's namespace).
	after       func(ctx context.Context) error
	stopSignal  syscall.Signal
	startBudget time.Duration
	stopBudget  time.Duration
}

// components lists the topology in start order; Down goes in reverse.
func (c *Cluster) components() []component {
	p := c.ports
	comps := []component{
		{
			name: "postgres", addr: addr(p.Postgres),
			prepare: c.preparePostgres, command: c.postgresCommand, healthy: c.postgresHealthy,
			// SIGINT is Postgres's fast shutdown: it ends open sessions
			// instead of waiting for clients to leave (SIGTERM).
			stopSignal: syscall.SIGINT, startBudget: 60 * time.Second, stopBudget: 60 * time.Second,
		},
		{
			name: "redis", addr: addr(p.Redis),
			command: c.redisCommand, healthy: c.redisHealthy,
			stopSignal: syscall.SIGTERM, startBudget: 30 * time.Second, stopBudget: 30 * time.Second,
		},
		{
			name: "temporal", addr: addr(p.Frontend),
			prepare: c.temporalSchema, command: c.temporalCommand, healthy: c.temporalHealthy, after: c.temporalNamespace,
			// Four services in one process on a busy machine.
			stopSignal: syscall.SIGTERM, startBudget: 3 * time.Minute, stopBudget: 60 * time.Second,
		},
		{
			name: "temporal-ui", addr: "http://" + addr(p.UI),
			prepare: c.uiConfig, command: c.uiCommand, healthy: httpHealthy("http://" + addr(p.UI) + "/healthz"),
			stopSignal: syscall.SIGTERM, startBudget: 60 * time.Second, stopBudget: 30 * time.Second,
		},
	}
	for i := range 2 {
		comps = append(comps, component{
			name: fmt.Sprintf("api-%d", i+1), addr: "http://" + addr(p.API[i]),
			command: c.appCommand("api", i),
			// readyz: the API answers and its dependencies do.
			healthy:    httpHealthy("http://" + addr(p.API[i]) + "/readyz"),
			stopSignal: syscall.SIGTERM, startBudget: 90 * time.Second, stopBudget: 40 * time.Second,
		})
	}
	for i := range 2 {
		comps = append(comps, component{
			name: fmt.Sprintf("worker-%d", i+1), addr: "http://" + addr(p.WorkerAdmin[i]) + " (admin)",
			command:    c.appCommand("worker", i),
			healthy:    httpHealthy("http://" + addr(p.WorkerAdmin[i]) + "/healthz"),
			stopSignal: syscall.SIGTERM, startBudget: 90 * time.Second, stopBudget: 40 * time.Second,
		})
	}
	return append(comps, c.prometheusComponent())
}

// --- Postgres ---

// The cluster's Postgres is the installed server binaries on a data
// directory of its own. Postgres refuses to run as root, so under root it
// runs as the postgres system user (or nobody), started directly with that
// credential so the recorded pid is the postmaster itself.

func (c *Cluster) pgData() string { return c.path("postgres", "data") }

// preparePostgres initialises the data directory the first time, and
// before every start waits until a killed server's processes have left
// its shared memory (see shmReleased).
func (c *Cluster) preparePostgres(ctx context.Context) error {
	if err := c.initPostgres(ctx); err != nil {
		return err
	}
	killed, err := shmReleased(c.pgData(), 15*time.Second)
	if len(killed) > 0 {
		fmt.Fprintf(c.opts.Out, "  postgres     killed %v, still attached to the killed server's shared memory\n", killed)
	}
	return err
}

func (c *Cluster) initPostgres(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.pgData(), "PG_VERSION")); err == nil {
		return nil
	}
	bin, err := postgresBin()
	if err != nil {
		return err
	}
	cred, err := serverCredential()
	if err != nil {
		return err
	}
	if err := os.RemoveAll(c.pgData()); err != nil { // a half-done initdb
		return err
	}
	if err := os.MkdirAll(c.pgData(), 0o700); err != nil {
		return err
	}
	if cred != nil {
		for _, d := range []string{c.path("postgres"), c.pgData()} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", c.pgData(), "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions")
	cmd.Dir = c.path("postgres")
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	fmt.Fprintf(c.opts.Out, "  postgres     initialised %s (%s)\n", c.pgData(), bin)
	return nil
}

func (c *Cluster) postgresCommand() (*exec.Cmd, *syscall.Credential, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, nil, err
	}
	args := []string{"-D", c.pgData(), "-p", strconv.Itoa(c.ports.Postgres),
		"-c", "listen_addresses=" + host,
		// TCP only: no socket file in /var/run/postgresql to collide with
		// the machine's own server.
		"-c", "unix_socket_directories=",
	}
	for _, s := range PostgresSettings {
		args = append(args, "-c", s)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Env = serverEnv()
	return cmd, cred, nil
}

// PostgresURL returns the URL of a database on the cluster's Postgres.
func (c *Cluster) PostgresURL(db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr(c.ports.Postgres), db)
}

func (c *Cluster) postgresHealthy(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.PostgresURL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// createDatabase creates db on the cluster's Postgres unless it exists.
func (c *Cluster) createDatabase(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, c.PostgresURL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	return err
}

// postgresBin returns the highest installed /usr/lib/postgresql/*/bin.
func postgresBin() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	sort.Slice(matches, func(i, j int) bool { return majorOf(matches[i]) > majorOf(matches[j]) })
	for _, m := range matches {
		if _, err := os.Stat(filepath.Join(filepath.Dir(m), "initdb")); err == nil {
			return filepath.Dir(m), nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin or PATH (install the postgresql package)")
}

func majorOf(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// serverCredential is the user Postgres runs as: ourselves, unless we
// are root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil && uid != 0 {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
		}
	}
	return nil, errors.New("postgres refuses to run as root and there is no postgres or nobody user to run it as")
}

// serverEnv is the environment of initdb and postgres: ours without the
// libpq variables (PGPORT...) that would redirect them, in the C locale.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LANG=C", "LC_ALL=C")
}

// --- Redis ---

func (c *Cluster) redisCommand() (*exec.Cmd, *syscall.Credential, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil, errors.New("redis-server not found in PATH (install the redis-server package)")
	}
	dir := c.path("redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	// Rate-limit state only: nothing is worth persisting.
	return exec.Command(bin, "--port", strconv.Itoa(c.ports.Redis), "--bind", host,
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no"), nil, nil
}

// RedisURL returns the URL the app processes use.
func (c *Cluster) RedisURL() string { return "redis://" + addr(c.ports.Redis) + "/0" }

func (c *Cluster) redisHealthy(ctx context.Context) error {
	opts, err := redis.ParseURL(c.RedisURL())
	if err != nil {
		return err
	}
	rc := redis.NewClient(opts)
	defer rc.Close()
	return rc.Ping(ctx).Err()
}

// --- HTTP health ---

func httpHealthy(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}
