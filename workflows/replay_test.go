package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	memoworker "github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

// TestReplayHistories replays every committed history of the Order,
// WebhookEvent and Refund workflows (see testdata/README.md) against the
// current code. A failure means a change would break runs already in flight: guard it with
// workflow.GetVersion. No histories is a failure too, so the guard cannot
// silently go missing.
func TestReplayHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no workflow histories in testdata/: record them as testdata/README.md explains")

	// The worker runs with its interceptors (log fields) and, when traces
	// are on, Temporal's OpenTelemetry interceptor in front: neither may
	// change what the workflow decides, so every history replays under
	// both setups as well as bare.
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter())).Tracer("replay"),
	})
	require.NoError(t, err)
	setups := map[string]worker.WorkflowReplayerOptions{
		"bare":   {},
		"worker": {Interceptors: memoworker.Options().Interceptors, ContextPropagators: []workflow.ContextPropagator{workflows.LogPropagator()}},
		"traced": {
			Interceptors:       append([]interceptor.WorkerInterceptor{tracing}, memoworker.Options().Interceptors...),
			ContextPropagators: []workflow.ContextPropagator{workflows.LogPropagator()},
		},
	}
	for name, opts := range setups {
		replayer, err := worker.NewWorkflowReplayerWithOptions(opts)
		require.NoError(t, err)
		replayer.RegisterWorkflowWithOptions(workflows.Order, workflow.RegisterOptions{Name: workflows.OrderWorkflowName})
		replayer.RegisterWorkflowWithOptions(workflows.WebhookEvent, workflow.RegisterOptions{Name: workflows.WebhookEventWorkflowName})
		replayer.RegisterWorkflowWithOptions(workflows.Refund, workflow.RegisterOptions{Name: workflows.RefundWorkflowName})
		for _, f := range files {
			t.Run(name+"/"+filepath.Base(f), func(t *testing.T) {
				require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, f))
			})
		}
	}
}
