package cost_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/memocart/memocart/cmd/devstack/cost"
)

// testdata holds the histories the workflows package replays.
var testdata = filepath.Join("..", "..", "..", "workflows", "testdata")

// TestCountCommittedHistories counts three committed histories whose
// counts were checked by hand, event by event (python3 over the JSON,
// printing each event's type with its activity attempt, marker name and
// upserted attribute names).
func TestCountCommittedHistories(t *testing.T) {
	tests := []struct {
		file string
		want cost.Counts
	}{
		// webhook_event_retried.json, 17 events: started (1); workflow
		// tasks completed at 4, 10, 16 (3); activities scheduled at 5
		// (WebhookTargets, started at attempt 1) and 11 (DeliverWebhook,
		// started at attempt 3: 2 retries). 1 + 2 + 2 = 5 actions.
		{"webhook_event_retried.json", cost.Counts{
			Events: 17, WorkflowTasks: 3,
			Actions: cost.Actions{Starts: 1, Activities: 2, ActivityRetries: 2},
		}},
		// order_failed_refunded.json, 53 events: started (1); signal
		// payment-matched at 6 (1); timers at 5 and 40 (2); activities at
		// 10, 17, 25, 32, 45, each started at attempt 1 (5); upserts at 16,
		// 31 (OrderStatus, PaymentStatus) and 51 (PaymentStatus) (3), while
		// those at 24 and 39 set only TemporalChangeVersion (free); update
		// accepted at 44 (1); Version markers at 23 and 38 (not billed, 2
		// version markers); workflow tasks completed at 4, 9, 15, 22, 30,
		// 37, 43, 50 (8). 1+1+2+5+3+1 = 13 actions.
		{"order_failed_refunded.json", cost.Counts{
			Events: 53, WorkflowTasks: 8, VersionMarkers: 2,
			Actions: cost.Actions{Starts: 1, Signals: 1, Updates: 1, Activities: 5, Timers: 2, Upserts: 3},
		}},
		// order_delivered.json, 63 events: started (1); signal at 7 (1);
		// timer at 6 (1); activities at 11, 18, 24, 31, 37, 44, 50, 57,
		// each started at attempt 1 (8); upserts at 5, 17, 30, 43, 56 (5);
		// no marker; workflow tasks completed at 4, 10, 16, 23, 29, 36, 42,
		// 49, 55, 62 (10). 1+1+1+8+5 = 16 actions.
		{"order_delivered.json", cost.Counts{
			Events: 63, WorkflowTasks: 10,
			Actions: cost.Actions{Starts: 1, Signals: 1, Activities: 8, Timers: 1, Upserts: 5},
		}},
		// refund_sent_local_read.json, 34 events: started (1); the
		// Version marker at 5 (not billed) and its upsert at 6 (only
		// TemporalChangeVersion: free); the LocalActivity marker at 7 (the
		// refund's read), in the task completed at 4 (1 marker task);
		// update accepted at 11 (1); activities at 12, 20, 27, each
		// started at attempt 1 (3); upserts at 18, 26, 33 (RefundStatus)
		// (3); workflow tasks completed at 4, 10, 17, 25, 32 (5).
		// 1+1+1+3+3 = 9 actions.
		{"refund_sent_local_read.json", cost.Counts{
			Events: 34, WorkflowTasks: 5, VersionMarkers: 1,
			Actions: cost.Actions{Starts: 1, Updates: 1, Activities: 3, Upserts: 3, MarkerTasks: 1},
		}},
		// order_delivered_single_writer.json, 46 events: started (1);
		// signal at 8 (1); timer at 7 (1); activities at 16 (PlaceOrder),
		// 22, 30, 38 (WatchOrder), each started at attempt 1 (4); upserts
		// at 14, 29, 37, 45 (4), while the one at 6 sets only
		// TemporalChangeVersion (free); the baseline's Version marker at 5
		// (not billed); LocalActivity markers (the run's writes) at 13 and
		// 15 in the task completed at 11, and at 28, 36, 44 in those
		// completed at 27, 35, 43 (4 marker tasks); workflow tasks
		// completed at 4, 11, 21, 27, 35, 43 (6). 1+1+1+4+4+4 = 15.
		{"order_delivered_single_writer.json", cost.Counts{
			Events: 46, WorkflowTasks: 6, VersionMarkers: 1,
			Actions: cost.Actions{Starts: 1, Signals: 1, Activities: 4, Timers: 1, Upserts: 4, MarkerTasks: 4},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := cost.ReadFile(filepath.Join(testdata, tt.file))
			require.NoError(t, err)
			assert.Equal(t, tt.want, r.Counts)
		})
	}
	// The totals the comments add up.
	for file, total := range map[string]int{"webhook_event_retried.json": 5, "order_failed_refunded.json": 13, "order_delivered.json": 16} {
		r, err := cost.ReadFile(filepath.Join(testdata, file))
		require.NoError(t, err)
		assert.Equal(t, total, r.Counts.Actions.Total(), file)
	}
}

// TestClassifyCommittedHistories: each committed history lands on its
// path. Most were recorded before the OrderMode attribute existed, so
// their mode comes from the input; order_failed_refunded ended with a
// failure, the others with a result.
func TestClassifyCommittedHistories(t *testing.T) {
	want := map[string]string{
		"order_cancelled_unpaid.json":             cost.PathCancelled,
		"order_customer_cancel.json":              cost.PathCancelled,
		"order_expired_by_test_helper.json":       cost.PathCancelled,
		"order_operator_cancel.json":              cost.PathCancelled,
		"order_delivered.json":                    cost.PathSandboxDelivered,
		"order_delivered_attrs_at_start.json":     cost.PathSandboxDelivered,
		"order_delivered_deadline_cancelled.json": cost.PathSandboxDelivered,
		"order_delivered_polling.json":            cost.PathSandboxDelivered,
		"order_delivered_single_writer.json":      cost.PathSandboxDelivered,
		"order_manual_payment_twice.json":         cost.PathSandboxDelivered,
		"order_partial_then_topup.json":           cost.PathSandboxDelivered,
		"order_partial_then_topup_polling.json":   cost.PathSandboxDelivered,
		"order_live_delivered.json":               cost.PathLiveDelivered,
		"order_live_placed_again.json":            cost.PathLiveDelivered,
		"order_live_webhooks.json":                cost.PathLiveDelivered,
		"order_failed_refunded.json":              cost.PathFailedRefund,
		"order_failed_refunds_handed_over.json":   cost.PathFailedRefund,
		"order_live_undeliverable.json":           cost.PathFailedRefund,
		"order_sourcing_failed.json":              cost.PathFailedRefund,
		"order_sourcing_failed_polling.json":      cost.PathFailedRefund,
		"refund_sent_sandbox.json":                "Refund",
		"refund_sent_local_read.json":             "Refund",
		"webhook_event_retried.json":              "WebhookEvent",
	}
	for file, path := range want {
		t.Run(file, func(t *testing.T) {
			r, err := cost.ReadFile(filepath.Join(testdata, file))
			require.NoError(t, err)
			assert.Equal(t, path, cost.Classify(r))
		})
	}
	// Histories added since (not in want) still read.
	_, err := cost.ReadFiles(filepath.Join(testdata, "*.json"))
	require.NoError(t, err)
}

// TestReportCommittedHistories: the rows are medians and maxima over the
// workflows of a path. Sandbox delivered: events 63, 63, 64, 64, 68, 78,
// 80; workflow tasks 10 ×5, 12, 13; actions 15, 15, 16, 16, 17, 20, 20.
// reportedHistories are the committed histories the report's figures
// below were counted from: a fixed list, so that recording a new history
// does not change them.
var reportedHistories = []string{
	"order_cancelled_unpaid.json", "order_customer_cancel.json", "order_delivered.json",
	"order_delivered_attrs_at_start.json", "order_delivered_deadline_cancelled.json", "order_delivered_polling.json",
	"order_failed_refunded.json", "order_failed_refunds_handed_over.json", "order_live_delivered.json",
	"order_live_placed_again.json", "order_live_undeliverable.json", "order_live_webhooks.json",
	"order_manual_payment_twice.json", "order_operator_cancel.json", "order_partial_then_topup.json",
	"order_partial_then_topup_polling.json", "order_sourcing_failed.json", "order_sourcing_failed_polling.json",
	"refund_sent_sandbox.json", "webhook_event_retried.json",
}

func TestReportCommittedHistories(t *testing.T) {
	var runs []cost.Run
	for _, f := range reportedHistories {
		r, err := cost.ReadFile(filepath.Join(testdata, f))
		require.NoError(t, err)
		runs = append(runs, r)
	}
	rep := cost.NewReport("testdata", runs)
	row, ok := rep.Row(cost.PathSandboxDelivered)
	require.True(t, ok)
	assert.Equal(t, cost.Row{
		Path: cost.PathSandboxDelivered, Workflows: 7,
		Events:        cost.Stat{Median: 64, Max: 80},
		WorkflowTasks: cost.Stat{Median: 10, Max: 13},
		Actions:       cost.Stat{Median: 16, Max: 20},
		LongestRun:    80,
		// Sums over the seven (python3 over the JSON): 7 starts, 10
		// signals, 56 activities, 11 timers, 41 upserts of which 6 set
		// only TemporalChangeVersion, 6 Version markers, no retry.
		ActionsByKind:  cost.Actions{Starts: 7, Signals: 10, Activities: 56, Timers: 11, Upserts: 35},
		VersionMarkers: 6,
	}, row)
	assert.Equal(t, 119, row.ActionsByKind.Total())
	// The Order paths come first, in their order, then the other types.
	var paths []string
	for _, r := range rep.Rows {
		paths = append(paths, r.Path)
	}
	assert.Equal(t, []string{cost.PathSandboxDelivered, cost.PathLiveDelivered, cost.PathCancelled, cost.PathFailedRefund, "Refund", "WebhookEvent"}, paths[:6])

	// An even count's median is the mean of the middle two: 63 and 80.
	var two []cost.Run
	for _, f := range []string{"order_delivered.json", "order_partial_then_topup.json"} {
		r, err := cost.ReadFile(filepath.Join(testdata, f))
		require.NoError(t, err)
		two = append(two, r)
	}
	row, _ = cost.NewReport("two", two).Row(cost.PathSandboxDelivered)
	assert.Equal(t, cost.Stat{Median: 71.5, Max: 80}, row.Events)

	// The text says what the counts leave out; the JSON carries the rows.
	var text, js bytes.Buffer
	require.NoError(t, rep.WriteText(&text, true))
	assert.Contains(t, text.String(), "heartbeats that reach the server")
	assert.Contains(t, text.String(), "order_live_undeliverable.json")
	require.NoError(t, rep.WriteJSON(&js))
	var back cost.Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, rep.Rows, back.Rows)
}

// TestCountKinds covers what no committed history holds: local
// activities in one workflow task count once, their retries from the
// task's metering, a signal-with-start's signal with the start, an upsert
// of TemporalChangeVersion alone is free, a child costs two, and a child's
// or a retried workflow's own start nothing.
func TestCountKinds(t *testing.T) {
	events := []*historypb.HistoryEvent{
		started(1, "Order", nil, 1, false),
		{EventId: 2, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED},
		{EventId: 3, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED},
		{EventId: 4, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED},
		taskCompleted(5, 2),
		marker(6, "LocalActivity", 5),
		marker(7, "LocalActivity", 5),
		marker(8, "Version", 5),
		upsert(9, map[string]string{"TemporalChangeVersion": "x"}),
		upsert(10, map[string]string{"TemporalChangeVersion": "x", "OrderStatus": "paid"}),
		{EventId: 11, EventType: enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED},
		{EventId: 12, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED},
		{EventId: 13, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED},
		taskCompleted(14, 0),
		marker(15, "LocalActivity", 14),
		{EventId: 16, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED},
		{EventId: 17, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
	}
	assert.Equal(t, cost.Counts{
		Events: 17, WorkflowTasks: 2, VersionMarkers: 1,
		Actions: cost.Actions{Starts: 1, Signals: 1, MarkerTasks: 2, LocalActivityRetries: 2, Upserts: 1, Children: 2},
	}, cost.Count(events))

	assert.Zero(t, cost.Count([]*historypb.HistoryEvent{started(1, "Order", nil, 1, true)}).Actions.Starts, "a child's start is its parent's")
	assert.Zero(t, cost.Count([]*historypb.HistoryEvent{started(1, "Order", nil, 2, false)}).Actions.Starts, "a retried workflow's start")
}

// TestGroupContinueAsNew: the runs of a chain add up to one workflow,
// classified by its last run; a chain whose last run was not read is open.
func TestGroupContinueAsNew(t *testing.T) {
	first := []*historypb.HistoryEvent{
		startedIn(1, "wf-1", "run-1", "run-1", 0, map[string]string{"OrderStatus": "ordered", "OrderMode": "test"}),
		{EventId: 2, EventType: enumspb.EVENT_TYPE_TIMER_STARTED},
		{EventId: 3, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW},
	}
	second := []*historypb.HistoryEvent{
		startedIn(1, "wf-1", "run-2", "run-1", time.Hour, map[string]string{"OrderStatus": "ordered", "OrderMode": "test"}),
		upsert(2, map[string]string{"OrderStatus": "delivered"}),
		{EventId: 3, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED},
	}
	// The later run first: the chain is ordered by start time.
	ws := cost.Group([]cost.Run{cost.Analyze("b", second), cost.Analyze("a", first)})
	require.Len(t, ws, 1)
	w := ws[0]
	assert.Equal(t, cost.PathSandboxDelivered, w.Path)
	assert.Equal(t, "b", w.Name)
	assert.Equal(t, 2, w.Runs)
	assert.Equal(t, 6, w.Events)
	assert.Equal(t, 3, w.LongestRun)
	// Two starts (the continue-as-new is billed on the second), a timer,
	// an upsert.
	assert.Equal(t, 4, w.ActionsTotal)

	alone := cost.Group([]cost.Run{cost.Analyze("a", first)})
	require.Len(t, alone, 1)
	assert.Equal(t, cost.PathOpen, alone[0].Path)
}

func started(id int64, typ string, attrs map[string]string, attempt int32, child bool) *historypb.HistoryEvent {
	at := &historypb.WorkflowExecutionStartedEventAttributes{
		WorkflowType:     &commonpb.WorkflowType{Name: typ},
		Attempt:          attempt,
		SearchAttributes: searchAttrs(attrs),
	}
	if child {
		at.ParentWorkflowExecution = &commonpb.WorkflowExecution{WorkflowId: "parent"}
	}
	return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: at}}
}

func startedIn(id int64, wid, run, firstRun string, after time.Duration, attrs map[string]string) *historypb.HistoryEvent {
	ev := started(id, "Order", attrs, 1, false)
	at := ev.GetWorkflowExecutionStartedEventAttributes()
	at.WorkflowId, at.OriginalExecutionRunId, at.FirstExecutionRunId = wid, run, firstRun
	ev.EventTime = timestamppb.New(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(after))
	return ev
}

func taskCompleted(id int64, localRetries uint32) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
		Attributes: &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{
			MeteringMetadata: &commonpb.MeteringMetadata{NonfirstLocalActivityExecutionAttempts: localRetries},
		}}}
}

func marker(id int64, name string, task int64) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_MARKER_RECORDED,
		Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: name, WorkflowTaskCompletedEventId: task,
		}}}
}

func upsert(id int64, attrs map[string]string) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
		Attributes: &historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes{UpsertWorkflowSearchAttributesEventAttributes: &historypb.UpsertWorkflowSearchAttributesEventAttributes{
			SearchAttributes: searchAttrs(attrs),
		}}}
}

func searchAttrs(attrs map[string]string) *commonpb.SearchAttributes {
	if attrs == nil {
		return nil
	}
	f := map[string]*commonpb.Payload{}
	for k, v := range attrs {
		p, err := converter.GetDefaultDataConverter().ToPayload(v)
		if err != nil {
			panic(err)
		}
		f[k] = p
	}
	return &commonpb.SearchAttributes{IndexedFields: f}
}
