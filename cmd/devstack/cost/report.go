package cost

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
)

// Footnotes say what the counts leave out and how the unclear cases are
// counted; the text and the JSON report both carry them.
var Footnotes = []string{
	"Actions are counted from history events as Temporal Cloud bills them (docs.temporal.io/cloud/actions; the Temporal UI's per-event estimate for the cases the page leaves open).",
	"Not in any history, so not counted: activity heartbeats that reach the server, queries (the UI's stack view included), rejected updates, workflow task heartbeats of long local activities, and attempts of an activity still retrying when its workflow closed.",
	"Local activities (and side effects) count once per workflow task that records their markers. GetVersion's markers are not billed (the Temporal UI's estimate excludes them; the actions page does not name them): they are counted apart, as version markers.",
	"A continue-as-new is billed on the new run's start; a workflow's row sums the runs of its chain. Workflow tasks are the completed ones.",
}

// Stat is the median and the maximum of a count over a row's workflows.
type Stat struct {
	Median float64 `json:"median"`
	Max    int     `json:"max"`
}

func stat(xs []int) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := float64(s[n/2])
	if n%2 == 0 {
		med = float64(s[n/2-1]+s[n/2]) / 2
	}
	return Stat{Median: med, Max: s[n-1]}
}

// Row is one path (or other workflow type) of the report.
type Row struct {
	Path          string `json:"path"`
	Workflows     int    `json:"workflows"`
	Events        Stat   `json:"events"`
	WorkflowTasks Stat   `json:"workflowTasks"`
	Actions       Stat   `json:"actions"`
	// LongestRun is the most events of one run on this path.
	LongestRun int `json:"longestRun"`
	// ActionsByKind and VersionMarkers are sums over the row's workflows:
	// divided by Workflows they are means that add up to the mean of
	// Actions.
	ActionsByKind  Actions `json:"actionsByKind"`
	VersionMarkers int     `json:"versionMarkers"`
}

// Report is the cost of a set of histories, per path.
type Report struct {
	Source    string     `json:"source"`
	Runs      int        `json:"runs"`
	Rows      []Row      `json:"rows"`
	Workflows []Workflow `json:"workflows"`
	Footnotes []string   `json:"footnotes"`
}

// NewReport groups runs into workflows and sums them per path: the Order
// paths first, in a fixed order, then the other types by name. Paths
// without a workflow are left out.
func NewReport(source string, runs []Run) Report {
	ws := Group(runs)
	byPath := map[string][]Workflow{}
	for _, w := range ws {
		byPath[w.Path] = append(byPath[w.Path], w)
	}
	var others []string
	for p := range byPath {
		if !slices.Contains(orderPaths, p) {
			others = append(others, p)
		}
	}
	slices.Sort(others)
	rep := Report{Source: source, Runs: len(runs), Workflows: ws, Footnotes: Footnotes}
	for _, p := range slices.Concat(orderPaths, others) {
		in := byPath[p]
		if len(in) == 0 {
			continue
		}
		row := Row{Path: p, Workflows: len(in)}
		var ev, wt, ac []int
		for _, w := range in {
			ev = append(ev, w.Events)
			wt = append(wt, w.WorkflowTasks)
			ac = append(ac, w.ActionsTotal)
			row.LongestRun = max(row.LongestRun, w.LongestRun)
			row.ActionsByKind.add(w.Actions)
			row.VersionMarkers += w.VersionMarkers
		}
		row.Events, row.WorkflowTasks, row.Actions = stat(ev), stat(wt), stat(ac)
		rep.Rows = append(rep.Rows, row)
	}
	return rep
}

// Row returns the report's row for path.
func (r Report) Row(path string) (Row, bool) {
	i := slices.IndexFunc(r.Rows, func(x Row) bool { return x.Path == path })
	if i < 0 {
		return Row{}, false
	}
	return r.Rows[i], true
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as tables: per path, then the actions by
// kind, then (each) every workflow, then the footnotes.
func (r Report) WriteText(w io.Writer, each bool) error {
	fmt.Fprintf(w, "%d workflows (%d runs) from %s\n\n", len(r.Workflows), r.Runs, r.Source)
	// Numbers align right, paths left: each path is padded to the longest.
	pad := len("path")
	for _, x := range r.Rows {
		pad = max(pad, len(x.Path))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tworkflows\tevents median\tmax\twf tasks median\tmax\tactions median\tmax\tlongest run\t\n", pad, "path")
	for _, x := range r.Rows {
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%d\t%s\t%d\t%s\t%d\t%d\t\n", pad, x.Path, x.Workflows,
			num(x.Events.Median), x.Events.Max, num(x.WorkflowTasks.Median), x.WorkflowTasks.Max,
			num(x.Actions.Median), x.Actions.Max, x.LongestRun)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nBillable actions by kind, mean per workflow (version markers: not billed)")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tstarts\tsignals\tupdates\tactivities\tretries\ttimers\tupserts\tlocal act. tasks\tlocal retries\tchildren\tother\tversion markers\t\n", pad, "path")
	for _, x := range r.Rows {
		n := float64(x.Workflows)
		a := x.ActionsByKind
		fmt.Fprintf(tw, "%-*s\t", pad, x.Path)
		for _, v := range []int{a.Starts, a.Signals, a.Updates, a.Activities, a.ActivityRetries, a.Timers, a.Upserts,
			a.MarkerTasks, a.LocalActivityRetries, a.Children, a.Other, x.VersionMarkers} {
			fmt.Fprintf(tw, "%s\t", mean(float64(v)/n))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if each {
		fmt.Fprintln(w, "\nEach workflow")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "name\ttype\tpath\truns\tevents\twf tasks\tactions\tversion markers")
		for _, x := range r.Workflows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", x.Name, x.Type, x.Path, x.Runs, x.Events, x.WorkflowTasks, x.ActionsTotal, x.VersionMarkers)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\nNotes")
	for _, f := range r.Footnotes {
		fmt.Fprintf(w, "- %s\n", f)
	}
	return nil
}

// num prints a median: whole, or with its half.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// mean prints a mean to one decimal.
func mean(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
