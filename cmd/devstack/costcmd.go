package main

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/memocart/memocart/cmd/devstack/cost"
	"github.com/memocart/memocart/cmd/internal/app"
)

const costUsage = `Usage: devstack cost [flags]

Reads workflow histories and prints what they cost Temporal, per path: how
many workflows took it, and the median and maximum of their history events,
workflow tasks and billable actions as Temporal Cloud counts them (starts,
signals, updates, activities and their retries, timers, search-attribute
upserts, local activities once per workflow task, children), then the
actions by kind. An Order's path is how it ended: sandbox delivered, live
delivered, cancelled, failed with refund (open, other); every other
workflow type is a row of its own. The runs of a continue-as-new chain add
up to one workflow.

The histories come from a Temporal namespace (-address, -namespace; every
run in retention, or those -query selects), or from JSON history files
(-files, the format of ` + "`temporal workflow show --output json`" + ` and of
workflows/testdata). Activity heartbeats, queries and the other actions no
history shows are not counted (the notes under the tables say which).

  devstack cost                                   the dev stack's histories
  devstack cost -files 'workflows/testdata/*.json' -each
  devstack cost -query "WorkflowType = 'Order' AND ExecutionStatus != 'Running'" -json

Flags:`

// runCost is `devstack cost`.
func runCost(ctx context.Context, e app.Env, args []string) error {
	fs := newFlagSet("cost", costUsage, e.Stderr)
	addr := fs.String("address", e.Cfg.TemporalAddress, "Temporal frontend host:port (MEMOCART_TEMPORAL_ADDRESS; the dev stack's by default)")
	namespace := fs.String("namespace", e.Cfg.TemporalNamespace, "Temporal namespace (MEMOCART_TEMPORAL_NAMESPACE)")
	query := fs.String("query", "", "a visibility query choosing the runs to read (default: every run in retention)")
	files := fs.String("files", "", "read the JSON history files matching this glob instead of a namespace")
	asJSON := fs.Bool("json", false, "print the report as JSON (rows, every workflow, notes) for scripts")
	each := fs.Bool("each", false, "also list every workflow with its path and counts")
	conc := fs.Int("concurrency", 4, "histories read at once from the namespace")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *conc < 1 {
		return errors.New("cost: -concurrency must be positive")
	}

	var runs []cost.Run
	var source string
	if *files != "" {
		var err error
		if runs, err = cost.ReadFiles(*files); err != nil {
			return err
		}
		source = *files
	} else {
		opts, err := app.TemporalOptions(e, *addr)
		if err != nil {
			return err
		}
		opts.Namespace = *namespace
		c, err := client.DialContext(ctx, opts)
		if err != nil {
			return fmt.Errorf("connecting to Temporal at %s: %w", *addr, err)
		}
		defer c.Close()
		if runs, err = cost.ReadNamespace(ctx, c, *namespace, *query, *conc); err != nil {
			return err
		}
		source = fmt.Sprintf("namespace %s at %s", *namespace, *addr)
		if *query != "" {
			source += fmt.Sprintf(" (%s)", *query)
		}
	}
	rep := cost.NewReport(source, runs)
	if *asJSON {
		return rep.WriteJSON(e.Stdout)
	}
	return rep.WriteText(e.Stdout, *each)
}
