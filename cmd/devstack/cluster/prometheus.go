package cluster

// The cluster's Prometheus is the installed binary (Debian's prometheus
// package, which also gives promtool) scraping every api and worker
// process's admin listener and evaluating docs/monitoring's rules, so an
// operator sees the alerts on their own cluster and `make chaos` can tell
// which fired during the kills. Everything is on 127.0.0.1 and its data
// lives in the state directory.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ScrapeInterval is how often the cluster's Prometheus scrapes and
// evaluates the rules: short, so a kill of a few seconds shows.
const ScrapeInterval = 5 * time.Second

// PrometheusURL is the cluster's Prometheus (its UI and HTTP API).
func (c *Cluster) PrometheusURL() string { return "http://" + addr(c.ports.Prometheus) }

func (c *Cluster) prometheusComponent() component {
	return component{
		name: "prometheus", addr: c.PrometheusURL(),
		prepare: c.prometheusConfig, command: c.prometheusCommand,
		healthy:    httpHealthy(c.PrometheusURL() + "/-/ready"),
		stopSignal: syscall.SIGTERM, startBudget: 60 * time.Second, stopBudget: 30 * time.Second,
	}
}

func (c *Cluster) prometheusConfigPath() string { return c.path("prometheus", "prometheus.yml") }

// prometheusConfig writes the scrape configuration before each start.
func (c *Cluster) prometheusConfig(context.Context) error {
	if _, err := os.Stat(c.opts.RulesFile); err != nil {
		return fmt.Errorf("the alert rules: %w (Options.RulesFile; run from the memocart repository)", err)
	}
	if err := os.MkdirAll(c.path("prometheus", "data"), 0o755); err != nil {
		return err
	}
	p := c.ports
	conf := PrometheusConfig(ScrapeInterval, c.opts.RulesFile, func(role string, i int) string {
		if role == "api" {
			return addr(p.APIAdmin[i])
		}
		return addr(p.WorkerAdmin[i])
	})
	return os.WriteFile(c.prometheusConfigPath(), []byte(conf), 0o644)
}

// PrometheusConfig is the scrape configuration of the cluster and of
// docker-compose.yml (which holds it verbatim): a job per role
// (memocart-api, memocart-worker), each process a target labelled with
// its name (api-1...), scraped and evaluated every interval, and the
// rules file. target gives the admin listener of a role's i-th process.
func PrometheusConfig(interval time.Duration, rulesFile string, target func(role string, i int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", promDuration(interval), promDuration(interval))
	fmt.Fprintf(&b, "rule_files:\n  - %s\n", rulesFile)
	b.WriteString("scrape_configs:\n")
	for _, role := range []string{"api", "worker"} {
		fmt.Fprintf(&b, "  - job_name: memocart-%s\n    static_configs:\n", role)
		for i := range 2 {
			fmt.Fprintf(&b, "      - targets: ['%s']\n        labels: {instance: %s-%d}\n", target(role, i), role, i+1)
		}
	}
	return b.String()
}

// promDuration writes d as Prometheus reads it (15s, not Go's 15s0ms
// forms such as 1m0s).
func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

func (c *Cluster) prometheusCommand() (*exec.Cmd, *syscall.Credential, error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return nil, nil, errors.New("prometheus not found in PATH (install the prometheus package)")
	}
	return exec.Command(bin,
		"--config.file="+c.prometheusConfigPath(),
		"--storage.tsdb.path="+c.path("prometheus", "data"),
		"--web.listen-address="+addr(c.ports.Prometheus),
		"--web.console.templates=", "--web.console.libraries=",
	), nil, nil
}

// rulesFileBeside returns the rules file of the repository whose tools
// module is moduleDir (cmd/devstack), or "" without one.
func rulesFileBeside(moduleDir string) string {
	if moduleDir == "" {
		return ""
	}
	return filepath.Join(moduleDir, "..", "..", "docs", "monitoring", "memocart.rules.yml")
}
