package cost

import (
	"cmp"
	"slices"
	"strconv"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// The paths of an Order workflow, by how it ended. Other workflow types
// are reported under their type's name.
const (
	PathSandboxDelivered = "sandbox delivered"
	PathLiveDelivered    = "live delivered"
	PathCancelled        = "cancelled"
	PathFailedRefund     = "failed with refund"
	// PathOpen is an order whose last run has not closed.
	PathOpen = "open"
	// PathOther is an order that ended any other way (terminated, timed
	// out, failed owing nothing, or with a status this tool does not know).
	PathOther = "other"
)

// orderPaths are the Order rows, in the report's order.
var orderPaths = []string{PathSandboxDelivered, PathLiveDelivered, PathCancelled, PathFailedRefund, PathOpen, PathOther}

// Run is one history read: a run of a workflow.
type Run struct {
	// Name says where it was read: the file, or the workflow id.
	Name       string
	WorkflowID string
	RunID      string
	// FirstRunID is the first run of its continue-as-new chain.
	FirstRunID string
	Type       string
	Counts     Counts
	// Closed is false while the run is open; Close is its last event then.
	Closed bool
	Close  enumspb.EventType
	// Attrs are its search attributes (Keyword ones, decoded) at its last
	// event: those of the start, then each upsert's.
	Attrs map[string]string
	// mode is the input's Mode (OrderInput.Mode, RefundInput's refund's),
	// the fallback for runs recorded before the OrderMode attribute.
	mode string
	// status and paymentStatus are the result's (OrderResult), or the
	// order_failed failure's details, the fallback for attributes.
	status, paymentStatus string
	start                 int64 // the first event's time, to order runs in a chain
}

// Analyze reads one run's history.
func Analyze(name string, events []*historypb.HistoryEvent) Run {
	r := Run{Name: name, Counts: Count(events), Attrs: map[string]string{}}
	for _, ev := range events {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			at := ev.GetWorkflowExecutionStartedEventAttributes()
			r.Type = at.GetWorkflowType().GetName()
			r.WorkflowID = at.GetWorkflowId()
			r.RunID = at.GetOriginalExecutionRunId()
			r.FirstRunID = at.GetFirstExecutionRunId()
			r.start = ev.GetEventTime().AsTime().UnixNano()
			mergeAttrs(r.Attrs, at.GetSearchAttributes())
			var in struct {
				Mode   string
				Refund struct{ Mode string }
			}
			if decode(at.GetInput(), &in) {
				r.mode = cmp.Or(in.Mode, in.Refund.Mode)
			}
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			mergeAttrs(r.Attrs, ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			r.result(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			r.result(ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().GetDetails())
		}
	}
	if n := len(events); n > 0 {
		r.Close = events[n-1].GetEventType()
		r.Closed = closeEvents[r.Close]
	}
	return r
}

// closeEvents end a run.
var closeEvents = map[enumspb.EventType]bool{
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:        true,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:           true,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:         true,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:       true,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:        true,
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: true,
}

// result reads an OrderResult (or anything with its field names).
func (r *Run) result(p *commonpb.Payloads) {
	var res struct{ Status, PaymentStatus string }
	if decode(p, &res) {
		r.status, r.paymentStatus = res.Status, res.PaymentStatus
	}
}

// decode decodes the first payload of p into v; a payload it cannot read
// (another encoding, an encrypted one) leaves v as it was.
func decode(p *commonpb.Payloads, v any) bool {
	if len(p.GetPayloads()) == 0 {
		return false
	}
	return converter.GetDefaultDataConverter().FromPayload(p.GetPayloads()[0], v) == nil
}

// mergeAttrs sets into m the Keyword (string) attributes of sa.
func mergeAttrs(m map[string]string, sa *commonpb.SearchAttributes) {
	for k, p := range sa.GetIndexedFields() {
		var s string
		if converter.GetDefaultDataConverter().FromPayload(p, &s) == nil {
			m[k] = s
		}
	}
}

// Workflow is one workflow execution: the runs of one continue-as-new
// chain, summed.
type Workflow struct {
	// Name is its last run's.
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
	Runs int    `json:"runs"`
	Counts
	// ActionsTotal is Counts.Actions.Total(), for scripts.
	ActionsTotal int `json:"actionsTotal"`
	// LongestRun is the most events of one of its runs: the history
	// length Temporal's limits apply to.
	LongestRun int `json:"longestRun"`
}

// Group sums runs into their workflows (runs of one chain share a
// workflow id and a first run id; a run without them stands alone) and
// classifies each by its last run. Workflows come out by name.
func Group(runs []Run) []Workflow {
	chains := map[string][]Run{}
	var keys []string
	for i, r := range runs {
		key := r.WorkflowID + "\x00" + r.FirstRunID
		if r.WorkflowID == "" || r.FirstRunID == "" {
			key = "\x01" + strconv.Itoa(i)
		}
		if _, ok := chains[key]; !ok {
			keys = append(keys, key)
		}
		chains[key] = append(chains[key], r)
	}
	out := make([]Workflow, 0, len(keys))
	for _, k := range keys {
		rs := chains[k]
		slices.SortStableFunc(rs, func(a, b Run) int { return cmp.Compare(a.start, b.start) })
		last := rs[len(rs)-1]
		w := Workflow{Name: last.Name, Type: last.Type, Path: Classify(last), Runs: len(rs)}
		for _, r := range rs {
			w.add(r.Counts)
			w.LongestRun = max(w.LongestRun, r.Counts.Events)
		}
		w.ActionsTotal = w.Actions.Total()
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b Workflow) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Classify names the path of a workflow whose last run is r: for an
// Order, how it ended, from its search attributes at close (OrderStatus,
// PaymentStatus, OrderMode) or, for runs recorded before an attribute
// existed, from its input's mode and its result or failure; for any other
// type, the type.
func Classify(r Run) string {
	if r.Type != workflows.OrderWorkflowName {
		if r.Type == "" {
			return PathOther
		}
		return r.Type
	}
	if !r.Closed {
		return PathOpen
	}
	if r.Close == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		// The chain's last run is not among those read.
		return PathOpen
	}
	status := cmp.Or(r.Attrs[workflows.SearchAttrOrderStatus.GetName()], r.status)
	payment := cmp.Or(r.Attrs[workflows.SearchAttrPaymentStatus.GetName()], r.paymentStatus)
	mode := cmp.Or(r.Attrs[workflows.SearchAttrOrderMode.GetName()], r.mode)
	switch models.OrderStatus(status) {
	case models.OrderDelivered:
		switch models.Mode(mode) {
		case models.ModeTest:
			return PathSandboxDelivered
		case models.ModeLive:
			return PathLiveDelivered
		}
	case models.OrderCancelled:
		return PathCancelled
	case models.OrderFailed:
		switch models.PaymentStatus(payment) {
		case models.PaymentRefundDue, models.PaymentRefunded:
			return PathFailedRefund
		}
	}
	return PathOther
}
