package workflows

import (
	"context"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// LogFields are the ids that tie a workflow's and its activities' log lines
// to the API request that caused them and to the order they work on. They
// travel in Temporal headers (LogPropagator), not in workflow inputs: a
// signal or an update carries the id of its own request, and adding them
// changes no workflow's input or history commands.
type LogFields struct {
	// RequestID is the API's X-Request-Id of the request that started the
	// workflow, or sent the signal or update being handled; empty for work
	// no request caused (the reconciler, the chain watcher).
	RequestID string `json:",omitempty"`
	// OrderID and OrderNumber name the order an activity works for; the
	// Order workflow sets them for the activities it schedules.
	OrderID     string `json:",omitempty"`
	OrderNumber string `json:",omitempty"`
}

// logFieldsKey holds LogFields in a context.Context and a workflow.Context.
type logFieldsKey struct{}

// logFieldsHeader is the Temporal header LogFields travel in.
const logFieldsHeader = "memocart-log-fields"

// WithRequestID returns ctx carrying the API request id, which the
// Temporal client then sends with every start, signal and update made
// with ctx (LogPropagator).
func WithRequestID(ctx context.Context, id string) context.Context {
	f := LogFieldsFrom(ctx)
	f.RequestID = id
	return context.WithValue(ctx, logFieldsKey{}, f)
}

// LogFieldsFrom returns the fields ctx carries: in an activity, those of the
// workflow that scheduled it.
func LogFieldsFrom(ctx context.Context) LogFields {
	f, _ := ctx.Value(logFieldsKey{}).(LogFields)
	return f
}

// WorkflowLogFields returns the fields a workflow context carries: in a
// workflow's main coroutine those of the request that started it, in a
// signal or update handler those of the request that sent it.
func WorkflowLogFields(ctx workflow.Context) LogFields {
	f, _ := ctx.Value(logFieldsKey{}).(LogFields)
	return f
}

// withOrderLogFields adds the order to ctx's fields, so every activity the
// workflow schedules from it logs which order it works for. A context value
// records nothing in the history.
func withOrderLogFields(ctx workflow.Context, in OrderInput) workflow.Context {
	f := WorkflowLogFields(ctx)
	f.OrderID, f.OrderNumber = in.OrderID, in.OrderNumber
	return workflow.WithValue(ctx, logFieldsKey{}, f)
}

// LogPropagator returns the Temporal context propagator of LogFields. Set
// it on the client (client.Options.ContextPropagators), which the worker
// shares, and on replayers.
func LogPropagator() workflow.ContextPropagator { return logPropagator{} }

type logPropagator struct{}

var logFieldsConverter = converter.GetDefaultDataConverter()

func (logPropagator) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	return writeLogFields(LogFieldsFrom(ctx), w)
}

func (logPropagator) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	return writeLogFields(WorkflowLogFields(ctx), w)
}

func (logPropagator) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	return context.WithValue(ctx, logFieldsKey{}, readLogFields(r)), nil
}

// ExtractToWorkflow always replaces the fields, also with none: a signal
// without a request id must not be logged under the id of the request
// that started the workflow.
func (logPropagator) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	return workflow.WithValue(ctx, logFieldsKey{}, readLogFields(r)), nil
}

func writeLogFields(f LogFields, w workflow.HeaderWriter) error {
	if f == (LogFields{}) {
		return nil
	}
	p, err := logFieldsConverter.ToPayload(f)
	if err != nil {
		return err
	}
	w.Set(logFieldsHeader, p)
	return nil
}

// readLogFields never fails the call it rides on: log fields that cannot be
// read (a newer sender's format) are dropped, not worth failing a start,
// a signal or an activity over.
func readLogFields(r workflow.HeaderReader) LogFields {
	var f LogFields
	if p, ok := r.Get(logFieldsHeader); ok {
		if err := logFieldsConverter.FromPayload(p, &f); err != nil {
			return LogFields{}
		}
	}
	return f
}
