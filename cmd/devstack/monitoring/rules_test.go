// Package monitoring holds docs/monitoring's rules to what promtool cannot
// check: every alert is labelled and annotated as the runbooks expect, links
// a runbook that docs/operators.md has, and is tested both ways. promtool
// checks and runs the rules themselves (make rules).
package monitoring

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	rulesFile     = "../../../docs/monitoring/memocart.rules.yml"
	rulesTestFile = "../../../docs/monitoring/memocart.rules.test.yml"
	operatorsFile = "../../../docs/operators.md"
	// runbookBase is where every runbook_url points: docs/operators.md on
	// the main branch, at the alert's section.
	runbookBase     = "https://github.com/memocart/memocart/blob/main/docs/operators.md#"
	runbooksSection = "Alerts and runbooks"
)

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readAlerts(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(b, &f))
	var alerts []rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	require.NotEmpty(t, alerts)
	return alerts
}

// heading is a Markdown heading of docs/operators.md with the anchor
// GitHub gives it.
type heading struct {
	level  int
	text   string
	anchor string
}

// headings lists a Markdown file's headings outside code fences, with
// GitHub's anchors: lower case, spaces to hyphens, every other character
// but letters, digits, '-' and '_' dropped; a repeated anchor gets -1, -2.
func headings(t *testing.T, path string) []heading {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var hs []heading
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if fenced || level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		text := strings.TrimSpace(line[level:])
		a := slug(text)
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		hs = append(hs, heading{level: level, text: text, anchor: a})
	}
	require.NoError(t, sc.Err())
	return hs
}

func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlugFollowsGitHub(t *testing.T) {
	for text, want := range map[string]string{
		"Live payments: the watcher, unmatched payments and refunds": "live-payments-the-watcher-unmatched-payments-and-refunds",
		"Operators: `memocart webhooks`":                             "operators-memocart-webhooks",
		"MemocartStellarWatcherStuck":                                "memocartstellarwatcherstuck",
		"Measuring it: `make loadtest`":                              "measuring-it-make-loadtest",
	} {
		assert.Equal(t, want, slug(text), text)
	}
}

var alertName = regexp.MustCompile(`^Memocart[A-Z][A-Za-z0-9]*$`)

// Every alert is named, labelled and annotated as the runbooks expect, and
// its runbook is the operators.md section of its name, under "Alerts and
// runbooks"; every section there is an alert's.
func TestAlertsHaveRunbooks(t *testing.T) {
	alerts := readAlerts(t)

	var inSection bool
	runbooks := map[string]bool{} // anchors of the section's subsections
	anchors := map[string]bool{}  // every anchor of the file
	for _, h := range headings(t, operatorsFile) {
		anchors[h.anchor] = true
		switch {
		case h.level <= 2:
			inSection = h.level == 2 && h.text == runbooksSection
		case h.level == 3 && inSection:
			runbooks[h.anchor] = true
		}
	}
	require.NotEmpty(t, runbooks, "docs/operators.md has no ## %s with ### subsections", runbooksSection)

	names := map[string]bool{}
	for _, a := range alerts {
		assert.Regexp(t, alertName, a.Alert)
		assert.False(t, names[a.Alert], "%s defined twice", a.Alert)
		names[a.Alert] = true
		assert.Contains(t, []string{"page", "ticket"}, a.Labels["severity"], "%s: severity", a.Alert)
		assert.Contains(t, a.Annotations["summary"], "{{", "%s: the summary gives the numbers", a.Alert)
		url := a.Annotations["runbook_url"]
		if !assert.True(t, strings.HasPrefix(url, runbookBase), "%s: runbook_url %q", a.Alert, url) {
			continue
		}
		anchor := strings.TrimPrefix(url, runbookBase)
		assert.Equal(t, slug(a.Alert), anchor, "%s: its runbook is the section named after it", a.Alert)
		assert.True(t, anchors[anchor], "%s: docs/operators.md has no #%s", a.Alert, anchor)
		assert.True(t, runbooks[anchor], "%s: #%s is not a ### under ## %s", a.Alert, anchor, runbooksSection)
		delete(runbooks, anchor)
	}
	assert.Empty(t, runbooks, "runbooks of no alert")
}

// promtool runs the tests; this holds them to at least one case where each
// alert fires and one where it must not.
func TestEveryAlertTestedBothWays(t *testing.T) {
	b, err := os.ReadFile(rulesTestFile)
	require.NoError(t, err)
	var f struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(b, &f))
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				silent[at.Alertname] = true
			}
		}
	}
	for _, a := range readAlerts(t) {
		assert.True(t, fires[a.Alert], "%s: no test where it fires", a.Alert)
		assert.True(t, silent[a.Alert], "%s: no test where it must not fire", a.Alert)
	}
}
