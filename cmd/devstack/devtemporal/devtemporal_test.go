package devtemporal

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/log/tag"
)

func TestOptionsWithDefaults(t *testing.T) {
	tests := []struct {
		name    string
		in      Options
		want    func(t *testing.T, o Options)
		wantErr string
	}{
		{
			name: "zero value",
			want: func(t *testing.T, o Options) {
				assert.Equal(t, "127.0.0.1", o.Host)
				assert.Equal(t, "default", o.Namespace)
				assert.Zero(t, o.GRPCPort, "0 means a free port")
				assert.Zero(t, o.UIPort, "0 means a free port")
				assert.NotNil(t, o.Logger)
			},
		},
		{
			name: "localhost becomes an IP",
			in:   Options{Host: "localhost"},
			want: func(t *testing.T, o Options) { assert.Equal(t, "127.0.0.1", o.Host) },
		},
		{
			name: "explicit values kept",
			in:   Options{Host: "0.0.0.0", GRPCPort: DefaultGRPCPort, UIPort: -1, Namespace: "shop"},
			want: func(t *testing.T, o Options) {
				assert.Equal(t, "0.0.0.0", o.Host)
				assert.Equal(t, 7233, o.GRPCPort)
				assert.Equal(t, -1, o.UIPort)
				assert.Equal(t, "shop", o.Namespace)
			},
		},
		{name: "host name", in: Options{Host: "example.com"}, wantErr: "not an IP"},
		{name: "negative gRPC port", in: Options{GRPCPort: -1}, wantErr: "out of range"},
		{name: "UI port below -1", in: Options{UIPort: -2}, wantErr: "out of range"},
		{name: "same ports", in: Options{GRPCPort: 7000, UIPort: 7000}, wantErr: "both 7000"},
		{
			name:    "unspecified search attribute type",
			in:      Options{SearchAttributes: map[string]enumspb.IndexedValueType{"OrderNumber": enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED}},
			wantErr: "invalid type",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.want(t, got)
		})
	}
}

func TestServerLogger(t *testing.T) {
	tests := []struct {
		name  string
		floor slog.Level
		log   func(l serverLogger)
		want  []string // substrings of the output; nil means no output
	}{
		{
			name:  "info dropped at the default floor",
			floor: slog.LevelWarn,
			log:   func(l serverLogger) { l.Info("chatty", tag.NewStringTag("k", "v")) },
		},
		{
			name:  "warn kept with tags",
			floor: slog.LevelWarn,
			log:   func(l serverLogger) { l.Warn("careful", tag.NewStringTag("shard", "1")) },
			want:  []string{"level=WARN", "msg=careful", "shard=1"},
		},
		{
			name:  "errors render their message",
			floor: slog.LevelWarn,
			log:   func(l serverLogger) { l.Error("failed", tag.Error(errors.New("boom"))) },
			want:  []string{"level=ERROR", "error=boom"},
		},
		{
			name:  "With keeps tags for later records",
			floor: slog.LevelWarn,
			log: func(l serverLogger) {
				l.With(tag.NewStringTag("service", "history")).(serverLogger).Warn("slow")
			},
			want: []string{"service=history", "msg=slow"},
		},
		{
			name:  "silenced while stopping",
			floor: levelSilent,
			log:   func(l serverLogger) { l.Error("task queue closed") },
		},
		{
			name:  "DPanic logs without panicking",
			floor: slog.LevelWarn,
			log:   func(l serverLogger) { l.DPanic("odd") },
			want:  []string{"level=ERROR", "msg=odd"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			level := new(slog.LevelVar)
			level.Set(tt.floor)
			l := serverLogger{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), level: level}
			tt.log(l)
			if tt.want == nil {
				assert.Empty(t, buf.String())
			}
			for _, w := range tt.want {
				assert.Contains(t, buf.String(), w)
			}
		})
	}

	t.Run("Fatal panics instead of exiting", func(t *testing.T) {
		level := new(slog.LevelVar)
		l := serverLogger{log: slog.New(slog.DiscardHandler), level: level}
		assert.PanicsWithValue(t, "temporal server: Failed to start gRPC listener", func() {
			l.Fatal("Failed to start gRPC listener")
		})
	})
}

func TestStartFailsOnBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port

	for _, o := range []Options{{GRPCPort: busy, UIPort: -1}, {UIPort: busy}} {
		_, err = Start(context.Background(), o)
		require.ErrorContains(t, err, "port in use")
	}
}

// TestServer runs a workflow that upserts a custom search attribute, finds
// it with a visibility query, and loads the UI.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	srv := start(t, ctx, Options{SearchAttributes: orderSearchAttributes, Logger: testLogger(t)})
	t.Cleanup(func() { require.NoError(t, srv.Stop()) })
	assert.Equal(t, "default", srv.Namespace())
	assert.True(t, strings.HasPrefix(srv.FrontendHostPort(), "127.0.0.1:"), srv.FrontendHostPort())

	c := dial(t, srv)
	runWorker(t, c)

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-123", TaskQueue: taskQueue}, orderWorkflowName, orderInput{OrderNumber: "123"})
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, "charged 123", out)

	t.Run("visibility query on custom search attribute", func(t *testing.T) {
		// SQL visibility is written by a history task after the workflow
		// closes, so the closed record can trail run.Get.
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: srv.Namespace(),
				Query:     `OrderNumber = "123"`,
			})
			require.NoError(ct, err)
			require.Len(ct, resp.Executions, 1)
			e := resp.Executions[0]
			assert.Equal(ct, run.GetRunID(), e.Execution.RunId)
			assert.Equal(ct, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, e.Status)
		}, 30*time.Second, 100*time.Millisecond)

		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: srv.Namespace(),
			Query:     `OrderNumber = "999"`,
		})
		require.NoError(t, err)
		assert.Empty(t, resp.Executions)
	})

	t.Run("UI serves HTML", func(t *testing.T) {
		require.NotEmpty(t, srv.UIURL())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.UIURL()+"/", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")
		assert.Contains(t, strings.ToLower(string(body)), "<html")
	})
}

// TestRestartOnSameDataDir stops a server with a workflow in flight and
// starts a new one on the same directory and the same ports: the ports must
// have been released and the workflow must still be there and complete.
// The first server's namespace lacks OrderStatus, as a data directory of
// an older version would; the second registers it, and the workflow's
// first task upserts it without a failed task.
func TestRestartOnSameDataDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	older := maps.Clone(orderSearchAttributes)
	delete(older, "OrderStatus")
	opts := Options{DataDir: t.TempDir(), SearchAttributes: older, Logger: testLogger(t)}

	first := start(t, ctx, opts)
	t.Cleanup(func() { _ = first.Stop() }) // in case the test fails before its own Stop
	c := dial(t, first)
	// No worker yet: the workflow can only finish after the restart.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-456", TaskQueue: taskQueue}, orderWorkflowName, orderInput{OrderNumber: "456"})
	require.NoError(t, err)
	c.Close()
	require.NoError(t, first.Stop())
	require.NoError(t, first.Stop(), "second Stop is a no-op")
	assert.FileExists(t, filepath.Join(opts.DataDir, "temporal.db"))

	// Reusing the exact ports fails in Start's port check unless Stop
	// released them.
	opts.GRPCPort = portOf(t, first.FrontendHostPort())
	opts.UIPort = portOf(t, first.UIURL())
	opts.SearchAttributes = orderSearchAttributes
	second := start(t, ctx, opts)
	t.Cleanup(func() { require.NoError(t, second.Stop()) })
	assert.Equal(t, first.FrontendHostPort(), second.FrontendHostPort())

	c = dial(t, second)
	runWorker(t, c)
	var out string
	require.NoError(t, c.GetWorkflow(ctx, "order-456", run.GetRunID()).Get(ctx, &out))
	assert.Equal(t, "charged 456", out)
	it := c.GetWorkflowHistory(ctx, "order-456", run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		assert.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, e.GetEventType(), "event %d: %v", e.GetEventId(), e.GetWorkflowTaskFailedEventAttributes().GetFailure())
	}
}

// Test workflow: upserts the order number, then runs one activity.

const (
	taskQueue          = "devtemporal-test"
	orderWorkflowName  = "DevtemporalTestOrder"
	chargeActivityName = "DevtemporalTestCharge"
)

var (
	orderSearchAttributes = map[string]enumspb.IndexedValueType{
		"OrderNumber":   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"OrderStatus":   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		"PaymentStatus": enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
	orderNumberKey = temporal.NewSearchAttributeKeyKeyword("OrderNumber")
	orderStatusKey = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
)

type orderInput struct {
	OrderNumber string
}

func orderWorkflow(ctx workflow.Context, in orderInput) (string, error) {
	err := workflow.UpsertTypedSearchAttributes(ctx,
		orderNumberKey.ValueSet(in.OrderNumber),
		orderStatusKey.ValueSet("charging"))
	if err != nil {
		return "", err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err = workflow.ExecuteActivity(ctx, chargeActivityName, in.OrderNumber).Get(ctx, &out)
	return out, err
}

func charge(_ context.Context, orderNumber string) (string, error) {
	return "charged " + orderNumber, nil
}

// Helpers.

func start(t *testing.T, ctx context.Context, o Options) *Server {
	t.Helper()
	begin := time.Now()
	srv, err := Start(ctx, o)
	require.NoError(t, err)
	t.Logf("Start took %s (frontend %s, UI %q)", time.Since(begin).Round(time.Millisecond), srv.FrontendHostPort(), srv.UIURL())
	return srv
}

func dial(t *testing.T, srv *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  srv.FrontendHostPort(),
		Namespace: srv.Namespace(),
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func runWorker(t *testing.T, c client.Client) {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(orderWorkflow, workflow.RegisterOptions{Name: orderWorkflowName})
	w.RegisterActivityWithOptions(charge, activity.RegisterOptions{Name: chargeActivityName})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	addr = strings.TrimPrefix(addr, "http://")
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p, err := net.LookupPort("tcp", port)
	require.NoError(t, err)
	return p
}

// testLogger sends the server's warnings and errors to the test output,
// which is where a failing test needs them. Writes after the test has
// finished are dropped: the testing package panics on them, and server
// goroutines can outlive Stop by a moment.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{out: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct {
	mu     sync.Mutex
	out    io.Writer
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.out.Write(p)
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
