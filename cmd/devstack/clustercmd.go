package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/internal/app"
)

const clusterUsage = `Usage: devstack cluster [flags] up|down|status|logs|start|stop|kill|restart [COMPONENT]

Runs the production topology on this machine without Docker: its own Postgres
and Redis, Temporal's server (schema by temporal-sql-tool, Postgres for the
default store and visibility), the Temporal UI, two memocart api and two
memocart worker processes of the service binary (-memocart, default bin/memocart).

  up                 start what is not running, wait until healthy, print addresses
  down               stop everything the state directory's pid files name
  status             health of every component (exit status 1 if one is down)
  logs [COMPONENT]   the log paths, or the last lines of one component's log
  start COMPONENT    start one component (after stop or kill)
  stop COMPONENT     stop one component gracefully
  kill COMPONENT     SIGKILL one component (and its children)
  restart COMPONENT  stop then start one component

Components: postgres, redis, temporal, temporal-ui, api-1, api-2, worker-1, worker-2, prometheus.
MEMOCART_* variables in the environment of up/start reach api and worker,
except those the cluster sets itself (see cluster.env).

Flags:`

// runCluster is `devstack cluster`.
func runCluster(ctx context.Context, e app.Env, args []string) error {
	fs := newFlagSet("cluster", clusterUsage, e.Stderr)
	stateDir := fs.String("state-dir", filepath.Join(".data", "cluster"), "where data, logs, pid files and cluster.env live")
	binDir := fs.String("bin-dir", "", "where the Temporal binaries are built (default STATE_DIR/bin)")
	ports := fs.Int("ports", 0, fmt.Sprintf("port base: Postgres BASE+432, Redis BASE+379, Temporal BASE+233, UI BASE+880, api BASE+81/82 (default %d, or the running cluster's)", cluster.DefaultPortBase))
	memocart := fs.String("memocart", filepath.Join("bin", "memocart"), "the service binary run as api and worker (make build)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("cluster: no action given")
	}
	action, rest := fs.Arg(0), fs.Args()[1:]

	// Absolute: the cluster starts it from its own directories.
	bin, err := filepath.Abs(*memocart)
	if err != nil {
		return err
	}
	c, err := cluster.New(cluster.Options{
		StateDir: *stateDir, BinDir: *binDir, ModuleDir: moduleDir(ctx), Memocart: bin, PortBase: *ports,
		Env: os.Environ(), Out: e.Stdout,
	})
	if err != nil {
		return err
	}
	one := func() (string, error) {
		if len(rest) != 1 {
			return "", fmt.Errorf("cluster %s takes one component: %s", action, strings.Join(c.Names(), ", "))
		}
		return rest[0], nil
	}
	switch action {
	case "up":
		return c.Up(ctx)
	case "down":
		return c.Down(ctx)
	case "status":
		return c.PrintStatus(ctx, e.Stdout)
	case "logs":
		if len(rest) == 0 {
			for _, n := range c.Names() {
				fmt.Fprintf(e.Stdout, "%-12s %s\n", n, c.LogPath(n))
			}
			return nil
		}
		b, err := os.ReadFile(c.LogPath(rest[0]))
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		fmt.Fprintln(e.Stdout, strings.Join(lines[max(0, len(lines)-50):], "\n"))
		return nil
	case "start", "stop", "kill", "restart":
		name, err := one()
		if err != nil {
			return err
		}
		if action != "start" {
			if err := c.Stop(name, action == "kill"); err != nil || action != "restart" {
				return err
			}
		}
		return c.Start(ctx, name)
	default:
		fs.Usage()
		return fmt.Errorf("cluster: unknown action %q", action)
	}
}

// moduleDir is this tools module's directory (cmd/devstack), whose go.mod
// pins the Temporal server and UI the cluster builds: the working
// directory's module when it is this one, else cmd/devstack under the
// repository root ("" outside the repository).
func moduleDir(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return ""
	}
	dir := filepath.Dir(gomod)
	if filepath.Base(dir) == "devstack" {
		return dir
	}
	dir = filepath.Join(dir, "cmd", "devstack")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return ""
	}
	return dir
}
