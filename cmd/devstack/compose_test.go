package main

import (
	"fmt"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.yaml.in/yaml/v3"

	"github.com/memocart/memocart/cmd/devstack/cluster"
	"github.com/memocart/memocart/cmd/internal/app"
	"github.com/memocart/memocart/workflows"
)

// docker-compose.yml cannot run where this repository is developed (no
// Docker), so these tests hold it to what `devstack cluster` runs and is
// tested with: versions, Temporal's settings and dynamic config, the
// schema steps, the namespace and search attributes, Postgres settings,
// and the MEMOCART_* variables of api and worker.

type composeFile struct {
	Configs  map[string]struct{ Content string } `yaml:"configs"`
	Services map[string]composeService           `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       string            `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Configs []struct{ Source, Target string } `yaml:"configs"`
	Volumes []string                          `yaml:"volumes"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("../../docker-compose.yml")
	require.NoError(t, err)
	var f composeFile
	require.NoError(t, yaml.Unmarshal(b, &f))
	require.NotEmpty(t, f.Services)
	return f
}

// The Temporal server and UI are pinned by this module's go.mod (the
// service module does not depend on them).
func TestComposeVersionsMatchGoMod(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	for mod, want := range map[string]string{
		"go.temporal.io/server":              cluster.TemporalServerVersion,
		"github.com/temporalio/ui-server/v2": cluster.TemporalUIVersion,
	} {
		m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(mod) + ` v(\S+)`).FindSubmatch(gomod)
		require.NotNil(t, m, "%s not required in go.mod", mod)
		assert.Equal(t, want, string(m[1]), "the cluster builds %s from go.mod", mod)
	}
	f := readCompose(t)
	assert.Equal(t, "temporalio/server:"+cluster.TemporalServerVersion, f.Services["temporal"].Image)
	assert.Equal(t, "temporalio/admin-tools:"+cluster.TemporalServerVersion, f.Services["temporal-schema"].Image)
	assert.Equal(t, "temporalio/admin-tools:"+cluster.TemporalServerVersion, f.Services["temporal-namespace"].Image)
	assert.Equal(t, "temporalio/ui:"+cluster.TemporalUIVersion, f.Services["temporal-ui"].Image)
}

func TestComposeMatchesCluster(t *testing.T) {
	f := readCompose(t)
	c, err := cluster.New(cluster.Options{StateDir: t.TempDir()})
	require.NoError(t, err)

	t.Run("same components", func(t *testing.T) {
		for _, name := range c.Names() {
			assert.Contains(t, f.Services, name)
		}
	})

	t.Run("Temporal server settings and dynamic config", func(t *testing.T) {
		temporal := f.Services["temporal"]
		for k, v := range cluster.TemporalSharedEnv() {
			assert.Equal(t, v, temporal.Environment[k], "temporal: %s", k)
		}
		require.Len(t, temporal.Configs, 1)
		assert.Equal(t, temporal.Environment["DYNAMIC_CONFIG_FILE_PATH"], temporal.Configs[0].Target)
		assert.Equal(t, cluster.DynamicConfig, f.Configs[temporal.Configs[0].Source].Content)
	})

	t.Run("Prometheus scrapes every app process with the rules", func(t *testing.T) {
		prom := f.Services["prometheus"]
		require.Len(t, prom.Configs, 1)
		assert.Contains(t, prom.Command, "--config.file="+prom.Configs[0].Target)
		assert.Contains(t, prom.Volumes, "./docs/monitoring/memocart.rules.yml:/etc/prometheus/memocart.rules.yml:ro")
		want := cluster.PrometheusConfig(15*time.Second, "/etc/prometheus/memocart.rules.yml", func(role string, i int) string {
			return fmt.Sprintf("%s-%d:6060", role, i+1)
		})
		assert.Equal(t, want, f.Configs[prom.Configs[0].Source].Content)
		_, port, _ := strings.Cut(f.Services["worker-1"].Environment["MEMOCART_ADMIN_ADDR"], ":")
		assert.Equal(t, "6060", port, "the admin listener Prometheus scrapes")
	})

	t.Run("schema steps", func(t *testing.T) {
		script := strings.Join(f.Services["temporal-schema"].Command, "\n")
		assert.Contains(t, script, cluster.TemporalDB+":"+cluster.TemporalSchema)
		assert.Contains(t, script, cluster.VisibilityDB+":"+cluster.VisibilitySchema)
		assert.Equal(t, cluster.TemporalSQLPlugin, f.Services["temporal-schema"].Environment["SQL_PLUGIN"])
		for _, step := range cluster.TemporalSchemaSteps(`"$$schema"`) {
			assert.Contains(t, script, `temporal-sql-tool --db "$$db" `+strings.Join(step, " "))
		}
	})

	t.Run("namespace and search attributes", func(t *testing.T) {
		script := strings.Join(f.Services["temporal-namespace"].Command, "\n")
		assert.Contains(t, script, "namespace create --namespace "+cluster.Namespace+" --retention "+strings.TrimSuffix(cluster.NamespaceRetention.String(), "0m0s"))
		names := regexp.MustCompile(`for name in ([A-Za-z ]+); do`).FindStringSubmatch(script)
		require.NotNil(t, names, "no search attribute loop in temporal-namespace")
		assert.ElementsMatch(t, slices.Collect(maps.Keys(workflows.SearchAttributes())), strings.Fields(names[1]))
		for name, typ := range workflows.SearchAttributes() {
			require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, typ, name)
		}
		assert.Contains(t, script, `--name "$$name" --type Keyword`)
	})

	t.Run("Postgres settings", func(t *testing.T) {
		cmd := f.Services["postgres"].Command
		for _, s := range cluster.PostgresSettings {
			assert.Contains(t, strings.Join(cmd, " "), "-c "+s)
		}
	})

	known := map[string]bool{}
	for _, name := range app.VariableNames() {
		known[name] = true
	}
	for _, svc := range []struct{ name, role string }{{"api-1", "api"}, {"api-2", "api"}, {"worker-1", "worker"}, {"worker-2", "worker"}, {"migrate", "migrate"}} {
		t.Run(svc.name+" environment", func(t *testing.T) {
			s := f.Services[svc.name]
			assert.Equal(t, ".", s.Build, "built from the Dockerfile (the service binary)")
			for name := range s.Environment {
				if strings.HasPrefix(name, "MEMOCART_") {
					assert.True(t, known[name], "%s is not a configuration variable", name)
				}
			}
			for name := range c.AppEnv(svc.role, 0) {
				assert.Contains(t, s.Environment, name, "the cluster sets %s for %s", name, svc.role)
			}
			for name, want := range cluster.SharedAppEnv() {
				assert.Equal(t, want, s.Environment[name], name)
			}
		})
	}

	for _, svc := range []string{"api-1", "api-2", "worker-1", "worker-2"} {
		t.Run(svc+" healthcheck and order", func(t *testing.T) {
			s := f.Services[svc]
			// The checked address is the one the process listens on.
			listen, path := s.Environment["MEMOCART_ADMIN_ADDR"], "/healthz"
			if strings.HasPrefix(svc, "api") {
				listen, path = s.Environment["MEMOCART_HTTP_ADDR"], "/readyz"
			}
			_, port, err := net.SplitHostPort(listen)
			require.NoError(t, err)
			assert.Equal(t, []string{"CMD", "/usr/local/bin/memocart", "healthcheck", "http://127.0.0.1:" + port + path}, s.Healthcheck.Test)
			assert.Equal(t, "service_completed_successfully", s.DependsOn["migrate"].Condition)
			assert.Equal(t, "service_completed_successfully", s.DependsOn["temporal-namespace"].Condition)
		})
	}
}
