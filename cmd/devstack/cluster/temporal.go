package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/memocart/memocart/workflows"
)

// Temporal runs as its own server binary with the configuration template
// embedded in it (the one the temporalio/server image renders), set through
// the same environment variables the image takes. TemporalSharedEnv is the
// part docker-compose.yml must set alike; TemporalServerEnv adds the
// cluster's addresses.

// TemporalSQLPlugin is the driver Temporal's server and SQL tool reach
// Postgres with. The pgx one caches each connection's prepared statements,
// where postgres12 (lib/pq) parses every query again in two round trips.
// With Temporal's search-attribute cache left on (DynamicConfig), it
// halved the CPU Temporal's Postgres spends per order (the history of
// docs/benchmarks.md).
const TemporalSQLPlugin = "postgres12_pgx"

// TemporalSharedEnv returns the Temporal server settings both topologies
// use: Postgres (TemporalSQLPlugin) for the default store and for SQL
// visibility, in the databases TemporalDB and VisibilityDB.
func TemporalSharedEnv() map[string]string {
	return map[string]string{
		"DB":                 TemporalSQLPlugin,
		"DBNAME":             TemporalDB,
		"VISIBILITY_DBNAME":  VisibilityDB,
		"NUM_HISTORY_SHARDS": strconv.Itoa(NumHistoryShards),
	}
}

// TemporalServerEnv returns the whole environment of the cluster's
// Temporal server: the shared settings, its Postgres, its ports and its
// dynamic config file.
func (c *Cluster) TemporalServerEnv() map[string]string {
	p := c.ports
	env := TemporalSharedEnv()
	for k, v := range map[string]string{
		"POSTGRES_SEEDS": host, "DB_PORT": strconv.Itoa(p.Postgres), "POSTGRES_USER": "postgres", "POSTGRES_PWD": "",
		"BIND_ON_IP": host, "TEMPORAL_BROADCAST_ADDRESS": host,
		"FRONTEND_GRPC_PORT": strconv.Itoa(p.Frontend), "FRONTEND_HTTP_PORT": strconv.Itoa(p.FrontendHTTP),
		"FRONTEND_MEMBERSHIP_PORT": strconv.Itoa(p.FrontendMember),
		"HISTORY_GRPC_PORT":        strconv.Itoa(p.History), "HISTORY_MEMBERSHIP_PORT": strconv.Itoa(p.HistoryMember),
		"MATCHING_GRPC_PORT": strconv.Itoa(p.Matching), "MATCHING_MEMBERSHIP_PORT": strconv.Itoa(p.MatchingMember),
		"WORKER_GRPC_PORT": strconv.Itoa(p.Worker), "WORKER_MEMBERSHIP_PORT": strconv.Itoa(p.WMem),
		"DYNAMIC_CONFIG_FILE_PATH": c.path("temporal", "dynamicconfig.yaml"),
		"LOG_LEVEL":                "info",
	} {
		env[k] = v
	}
	return env
}

// DynamicConfig is the Temporal server's dynamic config file, the same in
// both topologies (docker-compose.yml inlines it).
const DynamicConfig = `# memocart: the UI and operators' queries list and count workflows; the
# default of 10 per second answers resource-exhausted to a busy UI.
frontend.namespaceRPS.visibility:
  - value: 100
`

// The schemas embedded in temporal-sql-tool (the admin-tools image runs
// the same binary), so the schema always matches the tool's version.
const (
	TemporalSchema   = "postgresql/v12/temporal"
	VisibilitySchema = "postgresql/v12/visibility"
)

// TemporalSchemaSteps returns the temporal-sql-tool commands (after the
// connection flags) that create a database and bring it to the latest
// version of schema; all are idempotent. docker-compose.yml's
// temporal-schema job runs the same.
func TemporalSchemaSteps(schema string) [][]string {
	return [][]string{
		{"create-database"},
		{"setup-schema", "-v", "0.0"},
		{"update-schema", "--schema-name", schema},
	}
}

// temporalSchema creates Temporal's two databases and brings their
// schemas to the version of the server binary, with Temporal's own SQL
// tool and the schema files embedded in it. Each step is idempotent, so
// every start runs them: an upgraded server finds its schema updated.
func (c *Cluster) temporalSchema(ctx context.Context) error {
	if err := os.MkdirAll(c.path("temporal"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("temporal", "dynamicconfig.yaml"), []byte(DynamicConfig), 0o644); err != nil {
		return err
	}
	for _, s := range []struct{ db, schema string }{
		{TemporalDB, TemporalSchema},
		{VisibilityDB, VisibilitySchema},
	} {
		base := []string{"--plugin", TemporalSQLPlugin, "--ep", host, "-p", strconv.Itoa(c.ports.Postgres), "-u", "postgres", "--db", s.db}
		for _, step := range TemporalSchemaSteps(s.schema) {
			if err := c.runTool(ctx, "temporal-schema", c.tool("temporal-sql-tool"), append(slices.Clone(base), step...), nil); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(c.opts.Out, "  temporal     schema of %s and %s up to date (temporal-sql-tool)\n", TemporalDB, VisibilityDB)
	return nil
}

func (c *Cluster) temporalCommand() (*exec.Cmd, *syscall.Credential, error) {
	cmd := exec.Command(c.tool("temporal-server"), "--allow-no-auth", "start")
	cmd.Env = withEnv(cleanEnv(os.Environ()), c.TemporalServerEnv())
	return cmd, nil, nil
}

// dialTemporal connects a client whose own logging is discarded: the
// health checks retry and expect failures.
func (c *Cluster) dialTemporal(ctx context.Context) (client.Client, error) {
	return client.DialContext(ctx, client.Options{
		HostPort:  addr(c.ports.Frontend),
		Namespace: Namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
}

func (c *Cluster) temporalHealthy(ctx context.Context) error {
	tc, err := c.dialTemporal(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	if _, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	// The frontend answers before history owns its shards; a namespace
	// listing goes through persistence, so it passes once the server can
	// actually serve.
	_, err = tc.WorkflowService().ListNamespaces(ctx, &workflowservice.ListNamespacesRequest{PageSize: 1})
	return err
}

// temporalNamespace registers the namespace and the search attributes
// of workflows.SearchAttributes through Temporal's own API (the
// WorkflowService and OperatorService the `temporal operator` CLI calls),
// and waits until the frontend reports both.
func (c *Cluster) temporalNamespace(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tc, err := c.dialTemporal(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	ws, op := tc.WorkflowService(), tc.OperatorService()
	_, err = ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        Namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(NamespaceRetention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("registering namespace %s: %w", Namespace, err)
	}
	// The frontend's namespace registry picks a new namespace up on its
	// next refresh (up to ten seconds).
	err = retry(ctx, func() error {
		_, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: Namespace})
		return err
	})
	if err != nil {
		return fmt.Errorf("waiting for namespace %s: %w", Namespace, err)
	}
	want := workflows.SearchAttributes()
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: Namespace})
	if err != nil {
		return fmt.Errorf("listing search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range want {
		if _, ok := resp.GetCustomAttributes()[name]; !ok {
			missing[name] = typ
		}
	}
	if len(missing) > 0 {
		_, err := op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: Namespace, SearchAttributes: missing})
		var exists *serviceerror.AlreadyExists
		if err != nil && !errors.As(err, &exists) {
			return fmt.Errorf("adding search attributes %v: %w", slices.Sorted(maps.Keys(missing)), err)
		}
	}
	// The same check api and worker make at start.
	if err := retry(ctx, func() error { return workflows.CheckNamespace(ctx, op, Namespace) }); err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(workflows.SearchAttributesSettle):
	}
	fmt.Fprintf(c.opts.Out, "  temporal     namespace %s ready, search attributes %s registered (Keyword)\n",
		Namespace, strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	return nil
}

// retry calls f every half second until it succeeds or ctx ends.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// --- Temporal UI ---

// uiConfig writes the UI server's configuration (its config directory
// holds one file per environment; the cluster's is "cluster").
func (c *Cluster) uiConfig(context.Context) error {
	dir := c.path("temporal-ui", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf(`host: %s
port: %d
temporalGrpcAddress: %s
defaultNamespace: %s
enableUi: true
publicPath: ""
cors:
  allowOrigins:
    - http://%s
`, host, c.ports.UI, addr(c.ports.Frontend), Namespace, addr(c.ports.UI))
	return os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(conf), 0o644)
}

func (c *Cluster) uiCommand() (*exec.Cmd, *syscall.Credential, error) {
	cmd := exec.Command(c.tool("temporal-ui-server"), "--root", c.path("temporal-ui"), "--config", "config", "--env", "cluster", "start")
	cmd.Env = cleanEnv(os.Environ())
	return cmd, nil, nil
}

// runTool runs a setup command to completion with its output appended to
// logs/<log>.log; on failure the error carries the output's tail.
func (c *Cluster) runTool(ctx context.Context, log, bin string, args []string, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	logPath := c.LogPath(log)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s %s %s\n", time.Now().Format(time.RFC3339), filepath.Base(bin), strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.opts.StateDir
	cmd.Env = env
	if env == nil {
		cmd.Env = cleanEnv(os.Environ())
	}
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	err = cmd.Run()
	logf.WriteString(out.String())
	if err != nil {
		return fmt.Errorf("%s %s: %w (log: %s)\n%s", filepath.Base(bin), strings.Join(args, " "), err, logPath, lastLines(out.String(), 15))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
