package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/cmd/internal/app"
)

// The Grafana dashboard and the alert rules shipped for operators.
const (
	dashboardFile = "../../docs/monitoring/memocart.dashboard.json"
	rulesFile     = "../../docs/monitoring/memocart.rules.yml"
	operatorsFile = "../../docs/operators.md"
)

// dashboardQueries are the PromQL expressions of every panel's targets,
// with the dashboard's variables given a value ($mode: live).
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q has a target without a query", p.Title)
			out = append(out, strings.ReplaceAll(tg.Expr, "$mode", "live"))
		}
	}
	require.NotEmpty(t, out)
	return out
}

// runbookQueries are the PromQL queries of docs/operators.md's runbooks:
// the inline code of "Alerts and runbooks" that names a metric.
func runbookQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(operatorsFile)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Alerts and runbooks\n")
	require.True(t, ok, "docs/operators.md has no \"Alerts and runbooks\"")
	section, _, _ = strings.Cut(section, "\n## ")
	var out []string
	for _, m := range inlineCode.FindAllStringSubmatch(section, -1) {
		if q := m[1]; q == "up" || metricName.MatchString(q) {
			out = append(out, q)
		}
	}
	require.NotEmpty(t, out)
	return out
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

// metricName is a metric the service exports, as a query names it.
var metricName = regexp.MustCompile(`\b(?:memocart|temporal)_[a-z0-9_]+\b`)

// exportedOnFirstIncrement are the counters the Temporal SDK exports only
// once they have counted something: a healthy run never shows them. Each
// is named in Temporal's SDK metrics reference.
var exportedOnFirstIncrement = []string{"temporal_workflow_task_execution_failed_total"}

// TestE2EMonitoringNamesExportedMetrics: every query of the dashboard and
// of the runbooks parses as Prometheus does (promtool check rules, each
// query a recording rule; make rules checks the alert rules' own), and
// they and the alert rules name only metrics a live dev stack exports on
// its /metrics
// once a live order has
// been paid by the chain, a test order delivered, a live order failed
// with its refund owed and a payment sent naming no order: the service's,
// the watcher's and payout account's, and the Temporal SDK's.
func TestE2EMonitoringNamesExportedMetrics(t *testing.T) {
	queries := append(dashboardQueries(t), runbookQueries(t)...)
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for i, q := range queries {
		rules = append(rules, rule{Record: fmt.Sprintf("monitoring:query%d", i), Expr: q})
	}
	doc, err := json.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "dashboard.rules.json") // JSON is YAML
	require.NoError(t, os.WriteFile(file, doc, 0o644))
	out, err := exec.Command("promtool", "check", "rules", file).CombinedOutput()
	require.NoError(t, err, "promtool check rules (Debian's prometheus package; .ci/run installs it): %s", out)

	app.TestHooks.OpsEvery = 200 * time.Millisecond
	t.Cleanup(func() { app.TestHooks.OpsEvery = 0 })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	adminAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	s := startLive(t, "sqlite", map[string]string{"MEMOCART_ADMIN_ADDR": adminAddr})
	live := s.liveCartOrder("https://www.amazon.com/dp/B0LIVE0001")
	s.payInFull(live)
	s.paidOrder(s.key, "delivered")
	// Money owed back, and a payment that names no order: the per-asset
	// series exist while there is an amount to show.
	s.failedLiveOrder()
	s.pay(usdc("1.50", "00000000000"))

	var names []string
	for _, q := range queries {
		names = append(names, metricName.FindAllString(q, -1)...)
	}
	ruleText, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	names = append(names, metricName.FindAllString(string(ruleText), -1)...)
	slices.Sort(names)
	names = slices.Compact(names)
	var missing []string
	require.Eventually(t, func() bool {
		mf := scrape(t, "http://"+adminAddr+"/metrics")
		missing = missing[:0]
		for _, n := range names {
			if !exported(mf, n) && !slices.Contains(exportedOnFirstIncrement, n) {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0
	}, 90*time.Second, 500*time.Millisecond, "the dashboard or the rules name metrics the stack does not export: %v", &missing)
	t.Logf("the dashboard's and runbooks' %d queries and the rules name %d metrics, all exported", len(queries), len(names))
}

// exported reports whether the scrape mf has the series name: a family of
// that name, or a histogram whose _bucket, _sum or _count it is.
func exported(mf map[string]*dto.MetricFamily, name string) bool {
	if _, ok := mf[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := mf[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) && f.GetType() == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}
