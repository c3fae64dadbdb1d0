package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"maps"
)

// SharedAppEnv returns the MEMOCART_* settings both topologies give every
// api and worker with the same value; AppEnv adds the addresses.
func SharedAppEnv() map[string]string {
	return map[string]string{
		"MEMOCART_TEMPORAL_NAMESPACE":  Namespace,
		"MEMOCART_TEMPORAL_TASK_QUEUE": TaskQueue,
		"MEMOCART_LOG_FORMAT":          "json",
		// Temporal is on the same network: gzip would cost the CPU of both
		// ends and save nothing worth it (the history of docs/benchmarks.md).
		"MEMOCART_TEMPORAL_COMPRESSION": "none",
		// Production shape: test keys may not reach the deployment's own
		// loopback services through webhooks.
		"MEMOCART_WEBHOOK_TEST_LOOPBACK": "false",
	}
}

// AppEnv returns the MEMOCART_* variables the cluster sets for replica i
// (0 or 1) of role "api" or "worker".
func (c *Cluster) AppEnv(role string, i int) map[string]string {
	env := SharedAppEnv()
	maps.Copy(env, map[string]string{
		"MEMOCART_DATABASE_URL":        c.PostgresURL(AppDB),
		"MEMOCART_REDIS_URL":           c.RedisURL(),
		"MEMOCART_TEMPORAL_ADDRESS":    addr(c.ports.Frontend),
		"MEMOCART_PUBLIC_URL":          "http://" + addr(c.ports.API[0]),
		"MEMOCART_WEBHOOK_SECRETS_KEY": c.state.WebhookSecretsKey,
	})
	switch role {
	case "api":
		env["MEMOCART_HTTP_ADDR"] = addr(c.ports.API[i])
		env["MEMOCART_ADMIN_ADDR"] = addr(c.ports.APIAdmin[i])
	case "worker":
		env["MEMOCART_ADMIN_ADDR"] = addr(c.ports.WorkerAdmin[i])
	}
	return env
}

// CommandEnv is the environment of a memocart command run against the
// cluster (keys, refunds, reconcile): what api and worker inherit, with the
// cluster's own variables.
func (c *Cluster) CommandEnv() []string { return withEnv(c.opts.Env, c.AppEnv("cli", 0)) }

func (c *Cluster) appCommand(role string, i int) func() (*exec.Cmd, *syscall.Credential, error) {
	return func() (*exec.Cmd, *syscall.Credential, error) {
		if c.opts.Memocart == "" {
			return nil, nil, errors.New("no memocart binary given")
		}
		cmd := exec.Command(c.opts.Memocart, role)
		cmd.Env = withEnv(c.opts.Env, c.AppEnv(role, i))
		return cmd, nil, nil
	}
}

// prepareApp is the release step: the app database, its migrations, and
// on the first up a test API key, then cluster.env.
func (c *Cluster) prepareApp(ctx context.Context) error {
	if c.opts.Memocart == "" {
		return errors.New("cluster: no memocart binary to run as api and worker")
	}
	if err := c.createDatabase(ctx, AppDB); err != nil {
		return fmt.Errorf("creating database %s: %w", AppDB, err)
	}
	env := withEnv(c.opts.Env, c.AppEnv("migrate", 0))
	if err := c.runTool(ctx, "migrate", c.opts.Memocart, []string{"migrate"}, env); err != nil {
		return err
	}
	if c.state.APIKey == "" {
		kctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(kctx, c.opts.Memocart, "keys", "create", "--account", "cluster", "--mode", "test", "--tier", "pro")
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("memocart keys create: %w\n%s", err, stderr.String())
		}
		c.state.APIKey = strings.TrimSpace(stdout.String())
		if err := c.saveState(); err != nil {
			return err
		}
	}
	return c.writeEnvFile()
}

// writeEnvFile writes cluster.env, for `source`: the variables a memocart
// command needs to reach the cluster (keys, webhooks, payments), and the
// API addresses and test key for curl. Readable by its owner only.
func (c *Cluster) writeEnvFile() error {
	var b strings.Builder
	b.WriteString("# devstack cluster: `. " + c.EnvFile() + "` then e.g. curl -s $API/v1/orders -H \"Authorization: Bearer $KEY\"\n")
	env := c.AppEnv("cli", 0)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(env[k]))
	}
	fmt.Fprintf(&b, "export API=%s\nexport API_2=%s\nexport KEY=%s\nexport TEMPORAL_UI=%s\n",
		shellQuote("http://"+addr(c.ports.API[0])), shellQuote("http://"+addr(c.ports.API[1])),
		shellQuote(c.state.APIKey), shellQuote("http://"+addr(c.ports.UI)))
	return os.WriteFile(c.EnvFile(), []byte(b.String()), 0o600)
}

func (c *Cluster) summary() error {
	p := c.ports
	fmt.Fprintf(c.opts.Out, `
API:          http://%s  http://%s   (admin: http://%s, http://%s)
Temporal:     %s   namespace %s, task queue %s
Temporal UI:  http://%s/namespaces/%s/workflows
Postgres:     %s   Redis: %s
Prometheus:   %s/alerts   (scrapes api and worker every %s; rules %s)
Test API key: %s
Environment:  . %s
Logs:         %s/<component>.log
Stop:         devstack cluster down   (make cluster-stop)
`, addr(p.API[0]), addr(p.API[1]), addr(p.APIAdmin[0]), addr(p.APIAdmin[1]),
		addr(p.Frontend), Namespace, TaskQueue, addr(p.UI), Namespace,
		c.PostgresURL(AppDB), c.RedisURL(), c.PrometheusURL(), ScrapeInterval, c.opts.RulesFile, c.state.APIKey, c.EnvFile(), c.path("logs"))
	return nil
}

// withEnv returns base with vars set, replacing earlier values.
func withEnv(base []string, vars map[string]string) []string {
	out := make([]string, 0, len(base)+len(vars))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := vars[k]; !set {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// cleanEnv keeps only what any program needs from env: the Temporal
// binaries read their settings from variables (DB, SQL_*, TEMPORAL_*), so
// nothing of the caller's shell may leak into them.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "TZ", "USER":
			out = append(out, kv)
		}
	}
	return out
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
