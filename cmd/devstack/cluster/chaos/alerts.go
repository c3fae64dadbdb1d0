package chaos

// The cluster's Prometheus evaluates docs/monitoring's rules on every api
// and worker: after the checks the run waits, within Options.AlertWait,
// until no alert fires, and reports each alert that was pending or firing
// during the run, with when, so the table shows what an operator on call
// would have been shown by the kills and that it cleared.
//
// An alert whose rule reads a window longer than the wait (the API's SLO
// burn rates read 1h, 6h and 3d) cannot clear within a run: on a
// Prometheus minutes old, the window holds the whole run, kills included.
// It is not waited for and is reported with its window; an alert still
// firing that reads only windows within the wait fails the run.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/memocart/memocart/cmd/devstack/cluster"
)

// AlertSpan is one alert (a name and its labels) seen during the run.
type AlertSpan struct {
	Name, Severity string
	Labels         string // the rest of its labels, sorted
	// Fired is when it first fired (zero: it was only pending, its
	// condition not holding for its rule's `for`); Pending when its
	// condition first held; Last when it was last seen pending or firing.
	Pending, Fired, Last time.Time
	// Firing: it still fired when the run stopped waiting; PendingAtEnd:
	// its condition still held then, not yet for its `for`.
	Firing, PendingAtEnd bool
	// Window is the longest range its rule reads, through the recording
	// rules it names (0: none, a gauge's value).
	Window time.Duration
}

// Outlasts says whether the alert's window is longer than wait, so that
// it cannot resolve within the run.
func (s AlertSpan) Outlasts(wait time.Duration) bool { return s.Window > wait }

// rangeSelector matches a PromQL range, [5m], or a subquery's, [1h:1m].
var rangeSelector = regexp.MustCompile(`\[([0-9a-z]+)(?::[0-9a-z]*)?\]`)

// ruleWindows returns, per alert of the cluster's rules, the longest range
// its expression reads, itself or through a recording rule it names.
func ruleWindows(ctx context.Context, prometheus string) (map[string]time.Duration, error) {
	var data struct {
		Groups []struct {
			Rules []struct{ Name, Query, Type string } `json:"rules"`
		} `json:"groups"`
	}
	if err := promGet(ctx, prometheus, "rules", nil, &data); err != nil {
		return nil, err
	}
	longest := func(query string) time.Duration {
		var w time.Duration
		for _, m := range rangeSelector.FindAllStringSubmatch(query, -1) {
			if d, err := model.ParseDuration(m[1]); err == nil {
				w = max(w, time.Duration(d))
			}
		}
		return w
	}
	recorded := map[string]time.Duration{}
	alerts := map[string]string{}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			if r.Type == "recording" {
				recorded[r.Name] = longest(r.Query)
			} else {
				alerts[r.Name] = r.Query
			}
		}
	}
	out := map[string]time.Duration{}
	for name, q := range alerts {
		w := longest(q)
		for rec, rw := range recorded {
			if strings.Contains(q, rec) {
				w = max(w, rw)
			}
		}
		out[name] = w
	}
	return out, nil
}

// promSeries is a series of a Prometheus matrix or vector answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"` // matrix
	Value  [2]any            `json:"value"`  // vector
}

// promGet asks the Prometheus HTTP API at base (path query, query_range,
// rules) and decodes the answer's data into data.
func promGet(ctx context.Context, base, path string, params url.Values, data any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/"+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	ans := struct {
		Status string `json:"status"`
		Data   any    `json:"data"`
	}{Data: data}
	if err := json.Unmarshal(b, &ans); err != nil || ans.Status != "success" {
		return fmt.Errorf("prometheus %s %s: %s %s", path, params.Get("query"), resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// promQuery asks the Prometheus at base for the series of a query or
// query_range.
func promQuery(ctx context.Context, base, path string, params url.Values) ([]promSeries, error) {
	var data struct {
		Result []promSeries `json:"result"`
	}
	err := promGet(ctx, base, path, params, &data)
	return data.Result, err
}

// alertKey names an ALERTS series without its alertstate.
func alertKey(m map[string]string) (name, severity, rest string) {
	var others []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch k {
		case "__name__", "alertstate", "alertname", "severity":
		default:
			others = append(others, k+"="+m[k])
		}
	}
	return m["alertname"], m["severity"], strings.Join(others, ",")
}

// alertsNow returns the state (pending, firing) of each alert at the last
// evaluation, and the firing ones whose window is within wait.
func alertsNow(ctx context.Context, c *cluster.Cluster, windows map[string]time.Duration, wait time.Duration) (states map[string]string, within []string, err error) {
	res, err := promQuery(ctx, c.PrometheusURL(), "query", url.Values{"query": {"ALERTS"}})
	if err != nil {
		return nil, nil, err
	}
	states = map[string]string{}
	for _, s := range res {
		name, _, rest := alertKey(s.Metric)
		key := name + "{" + rest + "}"
		states[key] = s.Metric["alertstate"]
		if states[key] == "firing" && windows[name] <= wait {
			within = append(within, key)
		}
	}
	slices.Sort(within)
	return states, within, nil
}

// waitAlerts waits, after two evaluations past the run's end so that its
// last moments count, until no alert it can wait for fires (asking every
// 15 s, at most wait), and returns every alert seen since began.
func waitAlerts(ctx context.Context, c *cluster.Cluster, began time.Time, wait time.Duration, logf func(string, ...any)) ([]AlertSpan, error) {
	time.Sleep(2 * cluster.ScrapeInterval)
	windows, err := ruleWindows(ctx, c.PrometheusURL())
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	var states map[string]string
	for {
		var within []string
		if states, within, err = alertsNow(ctx, c, windows, wait); err != nil {
			return nil, err
		}
		if len(within) == 0 || time.Now().After(deadline) {
			break
		}
		logf("waiting for %d alerts to resolve: %s", len(within), strings.Join(within, "; "))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(15 * time.Second):
		}
	}
	res, err := promQuery(ctx, c.PrometheusURL(), "query_range", url.Values{
		"query": {"ALERTS"},
		"start": {strconv.FormatInt(began.Unix(), 10)},
		"end":   {strconv.FormatInt(time.Now().Unix()+1, 10)},
		"step":  {strconv.Itoa(int(cluster.ScrapeInterval / time.Second))},
	})
	if err != nil {
		return nil, err
	}
	spans := map[string]*AlertSpan{}
	for _, s := range res {
		name, severity, rest := alertKey(s.Metric)
		key := name + "{" + rest + "}"
		sp := spans[key]
		if sp == nil {
			sp = &AlertSpan{Name: name, Severity: severity, Labels: rest, Window: windows[name],
				Firing: states[key] == "firing", PendingAtEnd: states[key] == "pending"}
			spans[key] = sp
		}
		for _, v := range s.Values {
			sec, _ := v[0].(float64)
			at := time.Unix(int64(sec), 0)
			first := &sp.Pending
			if s.Metric["alertstate"] == "firing" {
				first = &sp.Fired
			}
			if first.IsZero() || at.Before(*first) {
				*first = at
			}
			if at.After(sp.Last) {
				sp.Last = at
			}
		}
	}
	out := make([]AlertSpan, 0, len(spans))
	for _, k := range slices.Sorted(maps.Keys(spans)) {
		out = append(out, *spans[k])
	}
	return out, nil
}

// printAlerts writes the alerts' table: times in seconds after the run
// began.
func printAlerts(w io.Writer, spans []AlertSpan, began time.Time, wait time.Duration) {
	fmt.Fprintln(w, "| Alert | Severity | Pending at | Fired at | Last seen | At the end |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|")
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.0fs", t.Sub(began).Seconds())
	}
	for _, s := range spans {
		name := s.Name
		if s.Labels != "" {
			name += " {" + s.Labels + "}"
		}
		end := "resolved"
		switch {
		case s.Firing && s.Outlasts(wait):
			end = fmt.Sprintf("firing: reads a %s window, which holds the whole run", model.Duration(s.Window))
		case s.Firing:
			end = "FIRING"
		case s.PendingAtEnd:
			end = "pending (never fired)"
		case s.Fired.IsZero():
			end = "never fired (pending only)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name, s.Severity, at(s.Pending), at(s.Fired), at(s.Last), end)
	}
}

// waitScraped waits until the cluster's Prometheus has scraped every api
// and worker process (up == 1): an alert table read from a Prometheus
// that reaches none of them would be empty and prove nothing.
func waitScraped(ctx context.Context, c *cluster.Cluster) error {
	want := 4 // two api and two worker processes
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := promQuery(ctx, c.PrometheusURL(), "query", url.Values{"query": {`up{job=~"memocart-.*"} == 1`}})
		if err == nil && len(res) == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus scrapes %d of %d app processes after a minute (%v); see %s", len(res), want, err, c.PrometheusURL()+"/targets")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
