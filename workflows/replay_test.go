package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/workflows"
)

// TestReplayHistories replays every committed history of the Order and
// WebhookEvent workflows (see testdata/README.md) against the current code. A failure
// means a change would break runs already in flight: guard it with
// workflow.GetVersion. No histories is a failure too, so the guard cannot
// silently go missing.
func TestReplayHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no workflow histories in testdata/: record them as testdata/README.md explains")

	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
	replayer.RegisterWorkflowWithOptions(workflows.WebhookEvent, workflow.RegisterOptions{Name: workflows.WebhookEventWorkflowName})
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
