package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/worker"
	"github.com/memocart/memocart/workflows"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the JSON log lines whose msg is msg.
func (l *lockedBuffer) lines(t *testing.T, msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// headerOf is what the client sends with a start made with ctx.
type headerOf struct{ h *commonpb.Header }

func (w headerOf) Set(k string, p *commonpb.Payload) { w.h.Fields[k] = p }

// TestLogFieldsReachWorkflowAndActivityLogs runs an order with the worker's
// options and the log propagator, started as the API starts it (with the
// request id in ctx), and finds the request id in the workflow's log lines
// and the request and order ids in an activity's.
func TestLogFieldsReachWorkflowAndActivityLogs(t *testing.T) {
	var logs lockedBuffer
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options())
	env.SetContextPropagators([]workflow.ContextPropagator{workflows.LogPropagator()})
	h := &commonpb.Header{Fields: map[string]*commonpb.Payload{}}
	ctx := workflows.WithRequestID(context.Background(), "req_start42")
	require.NoError(t, workflows.LogPropagator().Inject(ctx, headerOf{h}))
	require.NotEmpty(t, h.Fields, "the request id is sent")
	env.SetHeader(h)

	runPaidOrder(t, env, &memStore{order: models.Order{ID: "ord_1", Mode: models.ModeTest}})

	wf := logs.lines(t, "Payment wait over")
	require.Len(t, wf, 1, "the workflow's line")
	assert.Equal(t, "req_start42", wf[0]["request_id"])
	assert.Equal(t, "ord_1", wf[0]["OrderID"])

	act := logs.lines(t, "Placing the order with the buying provider")
	require.Len(t, act, 1, "the activity's line")
	assert.Equal(t, "req_start42", act[0]["request_id"])
	assert.Equal(t, "ord_1", act[0]["OrderID"])
	assert.Equal(t, "12345678903", act[0]["OrderNumber"])
	assert.Equal(t, "PlaceOrder", act[0]["ActivityType"], "an activity logger's line")

	// The payment signal came without a request id (the chain watcher,
	// the reconciler): no "Signal received" line claims one.
	assert.Empty(t, logs.lines(t, "Signal received"))
}
