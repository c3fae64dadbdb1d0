package chaos

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// rulesAPI serves the repository's rules as Prometheus's /api/v1/rules
// does (each rule's name, query and type).
func rulesAPI(t *testing.T) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile("../../../../docs/monitoring/memocart.rules.yml")
	require.NoError(t, err)
	var file struct {
		Groups []struct {
			Name  string
			Rules []struct{ Record, Alert, Expr string }
		}
	}
	require.NoError(t, yaml.Unmarshal(b, &file))
	type rule struct {
		Name  string `json:"name"`
		Query string `json:"query"`
		Type  string `json:"type"`
	}
	type group struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	}
	var groups []group
	for _, g := range file.Groups {
		out := group{Name: g.Name}
		for _, r := range g.Rules {
			if r.Record != "" {
				out.Rules = append(out.Rules, rule{r.Record, r.Expr, "recording"})
			} else {
				out.Rules = append(out.Rules, rule{r.Alert, r.Expr, "alerting"})
			}
		}
		groups = append(groups, out)
	}
	body, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"groups": groups}})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/rules" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRuleWindows: an alert's window is the longest range its expression
// reads, itself or through the recording rules it names.
func TestRuleWindows(t *testing.T) {
	windows, err := ruleWindows(t.Context(), rulesAPI(t).URL)
	require.NoError(t, err)
	for alert, want := range map[string]time.Duration{
		"MemocartAPIErrorBudgetBurn":     6 * time.Hour,  // its ratio_rate5m…6h recordings
		"MemocartAPIErrorBudgetSlowBurn": 72 * time.Hour, // ratio_rate3d
		"MemocartWorkflowTaskFailures":   10 * time.Minute,
		"MemocartBooksDiscrepancy":       0, // a gauge's value
	} {
		assert.Equal(t, want, windows[alert], alert)
	}
}

// TestAlertsStillFiringFailOnlyWithinTheWait: an alert still firing at the
// end fails the run unless its window outlasts the wait, and the table
// says which is which.
func TestAlertsStillFiringFailOnlyWithinTheWait(t *testing.T) {
	began := time.Now()
	spans := []AlertSpan{
		{Name: "MemocartAPIErrorBudgetSlowBurn", Severity: "ticket", Fired: began.Add(20 * time.Second), Last: began.Add(time.Minute), Firing: true, Window: 72 * time.Hour},
		{Name: "MemocartWorkflowTaskFailures", Severity: "page", Labels: "task_queue=q", Fired: began.Add(30 * time.Second), Last: began.Add(time.Minute), Firing: true, Window: 10 * time.Minute},
		{Name: "MemocartAPILatencyBudgetBurn", Severity: "page", Fired: began.Add(25 * time.Second), Last: began.Add(65 * time.Second), Window: 6 * time.Hour},
		{Name: "MemocartStellarWatcherStuck", Severity: "page", Pending: began.Add(45 * time.Second), Last: began.Add(45 * time.Second), Window: 5 * time.Minute},
		{Name: "MemocartWorkflowTaskBacklog", Severity: "page", Pending: began.Add(59 * time.Second), Last: began.Add(149 * time.Second), PendingAtEnd: true, Window: 5 * time.Minute},
	}
	var rep Report
	rep.alerts(spans, began, 10*time.Minute)
	inv := rep.Invariants[len(rep.Invariants)-1]
	assert.Equal(t, 1, inv.Count)
	assert.Equal(t, []string{"MemocartWorkflowTaskFailures {task_queue=q}"}, inv.Examples)

	var out bytes.Buffer
	printAlerts(&out, rep.Alerts, began, rep.AlertWait)
	for _, row := range []string{
		"| MemocartAPIErrorBudgetSlowBurn | ticket | - | 20s | 60s | firing: reads a 3d window, which holds the whole run |",
		"| MemocartWorkflowTaskFailures {task_queue=q} | page | - | 30s | 60s | FIRING |",
		"| MemocartAPILatencyBudgetBurn | page | - | 25s | 65s | resolved |",
		"| MemocartStellarWatcherStuck | page | 45s | - | 45s | never fired (pending only) |",
		"| MemocartWorkflowTaskBacklog | page | 59s | - | 149s | pending (never fired) |",
	} {
		assert.Contains(t, out.String(), row)
	}
}

// TestPromQuery: a query's series are read from Prometheus's answer, and
// an error answer is an error naming the query.
func TestPromQuery(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" || r.URL.Query().Get("query") != "ALERTS" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"__name__":"ALERTS","alertname":"MemocartOrdersStuck","alertstate":"pending","severity":"ticket","status":"paid"},"value":[1795886400,"1"]}]}}`))
	}))
	t.Cleanup(srv.Close)
	res, err := promQuery(t.Context(), srv.URL, "query", url.Values{"query": {"ALERTS"}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	name, severity, rest := alertKey(res[0].Metric)
	assert.Equal(t, []string{"MemocartOrdersStuck", "ticket", "status=paid"}, []string{name, severity, rest})
	assert.Equal(t, "pending", res[0].Metric["alertstate"])

	_, err = promQuery(t.Context(), srv.URL, "query", url.Values{"query": {"up{"}})
	assert.ErrorContains(t, err, "up{")
}
