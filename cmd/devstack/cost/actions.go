// Package cost reads workflow histories, from a Temporal namespace or from
// JSON files, and counts what each costs Temporal: history events (the
// server's work), workflow tasks (the worker's) and billable actions as
// Temporal Cloud counts them (the bill), per path an order takes and per
// other workflow type (issue 24, point 5). It imports the workflows and
// models packages for their names only, and the Temporal API and client.
package cost

import (
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// Where the action counts come from. Temporal Cloud bills by actions:
//
//   - "Temporal Cloud Actions", https://docs.temporal.io/cloud/actions
//     (docs/evaluate/cloud/actions.mdx in temporalio/documentation), maps
//     each action type to the history event that shows it;
//   - the Temporal UI's estimate of billable actions per event, shown on
//     Cloud's event history (temporalio/ui,
//     src/lib/models/event-history/get-event-billable-actions.ts), settles
//     what the page leaves open: version markers ("Version", and
//     "core_patch" of the other SDKs) are not billed, a signal that is event
//     2 came with a signal-with-start and is not billed apart from the
//     start, and a retried workflow's start (attempt > 1) is not billed.
//
// Not in any history, so never counted here: activity heartbeats that
// reach the server, queries (the UI's stack view included), rejected
// updates (the rejection is not written), workflow task heartbeats of long
// local activities, and the attempts of an activity still retrying when its
// workflow closed (their ACTIVITY_TASK_STARTED is never written).
const (
	// markerVersion is the marker of workflow.GetVersion (Go SDK).
	markerVersion = "Version"
	// markerCorePatch is the same marker from the core-based SDKs.
	markerCorePatch = "core_patch"
	// changeVersionAttr is the search attribute GetVersion may upsert;
	// "The TemporalChangeVersion Search Attribute ... is also exempt from
	// Action counting" (the actions page).
	changeVersionAttr = "TemporalChangeVersion"
	// scheduledByAttr marks a run a Schedule started: "Each execution of
	// a Schedule accrues three Actions" (the actions page).
	scheduledByAttr = "TemporalScheduledById"
	// localRetryCap: "Local Activities retried following a Workflow Task
	// Heartbeat count as one Action (capped at 100 Actions)"; the UI caps
	// each workflow task's count at 100.
	localRetryCap = 100
)

// Actions are a history's billable actions by kind. Every field adds to
// Total.
type Actions struct {
	// Starts: 1 per run started by a client, by continue-as-new (billed on
	// the new run's WORKFLOW_EXECUTION_STARTED, not on the old run's
	// CONTINUED_AS_NEW, as the actions page says the UI shows it) or by a
	// signal-with-start; 3 for a Schedule's first run; 0 for a child (billed
	// to its parent, see Children) and for a retry of the workflow.
	Starts int `json:"starts"`
	// Signals: 1 per WORKFLOW_EXECUTION_SIGNALED, except event 2 (the
	// signal of a signal-with-start, "one total action").
	Signals int `json:"signals"`
	// Updates: 1 per WORKFLOW_EXECUTION_UPDATE_ACCEPTED (and REJECTED,
	// which the server never writes).
	Updates int `json:"updates"`
	// Activities: 1 per ACTIVITY_TASK_SCHEDULED.
	Activities int `json:"activities"`
	// ActivityRetries: attempt - 1 of each ACTIVITY_TASK_STARTED, which the
	// server writes once, with the last attempt's number.
	ActivityRetries int `json:"activityRetries"`
	// Timers: 1 per TIMER_STARTED (AwaitWithTimeout's included).
	Timers int `json:"timers"`
	// Upserts: 1 per UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, however many
	// attributes it sets, except one that sets only TemporalChangeVersion.
	// Attributes set at start are free.
	Upserts int `json:"upserts"`
	// MarkerTasks: 1 per workflow task that recorded one or more markers
	// other than version markers: local activities ("All Local Activities
	// associated with one Workflow Task count as a single Action"), side
	// effects.
	MarkerTasks int `json:"markerTasks"`
	// LocalActivityRetries: the non-first local activity attempts each
	// WORKFLOW_TASK_COMPLETED reports in its metering metadata.
	LocalActivityRetries int `json:"localActivityRetries"`
	// Children: 2 per START_CHILD_WORKFLOW_EXECUTION_INITIATED ("one for
	// durably storing the intent ... and one for the attempt to start it").
	Children int `json:"children"`
	// Other: Nexus operations scheduled and cancels requested, workflow
	// execution options updated, resets (a WORKFLOW_TASK_FAILED with cause
	// RESET_WORKFLOW).
	Other int `json:"other"`
}

// Total is the history's billable actions.
func (a Actions) Total() int {
	return a.Starts + a.Signals + a.Updates + a.Activities + a.ActivityRetries + a.Timers +
		a.Upserts + a.MarkerTasks + a.LocalActivityRetries + a.Children + a.Other
}

func (a *Actions) add(b Actions) {
	a.Starts += b.Starts
	a.Signals += b.Signals
	a.Updates += b.Updates
	a.Activities += b.Activities
	a.ActivityRetries += b.ActivityRetries
	a.Timers += b.Timers
	a.Upserts += b.Upserts
	a.MarkerTasks += b.MarkerTasks
	a.LocalActivityRetries += b.LocalActivityRetries
	a.Children += b.Children
	a.Other += b.Other
}

// Counts are what one history (one run) costs.
type Counts struct {
	// Events is the history's length.
	Events int `json:"events"`
	// WorkflowTasks are the workflow tasks the worker completed
	// (WORKFLOW_TASK_COMPLETED).
	WorkflowTasks int `json:"workflowTasks"`
	// Actions are the billable actions by kind.
	Actions Actions `json:"actions"`
	// VersionMarkers are GetVersion's markers: counted apart, not billed
	// (see the sources above).
	VersionMarkers int `json:"versionMarkers"`
}

func (c *Counts) add(d Counts) {
	c.Events += d.Events
	c.WorkflowTasks += d.WorkflowTasks
	c.Actions.add(d.Actions)
	c.VersionMarkers += d.VersionMarkers
}

// Count counts one run's history.
func Count(events []*historypb.HistoryEvent) Counts {
	var c Counts
	markerTasks := map[int64]bool{}
	for _, ev := range events {
		c.Events++
		a := &c.Actions
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			at := ev.GetWorkflowExecutionStartedEventAttributes()
			switch {
			case at.GetAttempt() > 1, at.GetParentWorkflowExecution() != nil:
			case at.GetSearchAttributes().GetIndexedFields()[scheduledByAttr] != nil &&
				at.GetFirstExecutionRunId() == at.GetOriginalExecutionRunId():
				a.Starts += 3
			default:
				a.Starts++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if ev.GetEventId() != 2 {
				a.Signals++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_REJECTED:
			a.Updates++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a.Activities++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if n := ev.GetActivityTaskStartedEventAttributes().GetAttempt(); n > 1 {
				a.ActivityRetries += int(n) - 1
			}
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			a.Timers++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			f := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if len(f) != 1 || f[changeVersionAttr] == nil {
				a.Upserts++
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			at := ev.GetMarkerRecordedEventAttributes()
			switch at.GetMarkerName() {
			case markerVersion, markerCorePatch:
				c.VersionMarkers++
			default:
				task := at.GetWorkflowTaskCompletedEventId()
				if !markerTasks[task] {
					markerTasks[task] = true
					a.MarkerTasks++
				}
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			c.WorkflowTasks++
			n := int(ev.GetWorkflowTaskCompletedEventAttributes().GetMeteringMetadata().GetNonfirstLocalActivityExecutionAttempts())
			a.LocalActivityRetries += min(n, localRetryCap)
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			if ev.GetWorkflowTaskFailedEventAttributes().GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW {
				a.Other++
			}
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a.Children += 2
		case enumspb.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED,
			enumspb.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
			a.Other++
		}
	}
	return c
}
