package cost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// ReadFiles reads the JSON histories matching pattern (the format of
// `temporal workflow show --output json` and of workflows/testdata), one
// run each, named by their file's base name.
func ReadFiles(pattern string) ([]Run, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no history files match %q", pattern)
	}
	runs := make([]Run, 0, len(files))
	for _, f := range files {
		r, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// ReadFile reads one JSON history file.
func ReadFile(path string) (Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return Run{}, err
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(h.GetEvents()) == 0 {
		return Run{}, fmt.Errorf("%s: no events", path)
	}
	return Analyze(filepath.Base(path), h.GetEvents()), nil
}

// ReadNamespace reads the history of every run the visibility query
// selects in c's namespace (every run in retention when query is empty),
// conc at a time, named by workflow id.
func ReadNamespace(ctx context.Context, c client.Client, namespace, query string, conc int) ([]Run, error) {
	var execs []*historyRef
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: query, NextPageToken: token, PageSize: 1000,
		})
		if err != nil {
			return nil, fmt.Errorf("listing workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			execs = append(execs, &historyRef{id: e.GetExecution().GetWorkflowId(), run: e.GetExecution().GetRunId()})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if len(execs) == 0 {
		return nil, errors.New("no workflows in the namespace match the query")
	}

	runs := make([]Run, len(execs))
	errs := make([]error, len(execs))
	sem := make(chan struct{}, max(conc, 1))
	var wg sync.WaitGroup
	for i, e := range execs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var events []*historypb.HistoryEvent
			it := c.GetWorkflowHistory(ctx, e.id, e.run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					errs[i] = fmt.Errorf("history of %s (run %s): %w", e.id, e.run, err)
					return
				}
				events = append(events, ev)
			}
			runs[i] = Analyze(e.id, events)
			// Histories from older servers do not name their workflow in
			// the start event.
			runs[i].WorkflowID = e.id
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return runs, nil
}

type historyRef struct{ id, run string }
