package worker

import (
	"context"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/workflows"
)

// LogFields is the worker interceptor that puts workflows.LogFields into
// every workflow and activity logger: the API request id (as request_id,
// the name the API's own log lines use, so one query finds the request and
// the work it caused) and, in activities, the order (OrderID, OrderNumber,
// the names the Order workflow's lines use). The fields arrive in Temporal
// headers through workflows.LogPropagator, which the client must carry.
//
// A signal handled by a workflow is logged with the request id of the
// request that sent it, so a payment or cancel request can be followed into
// the order's workflow.
func LogFields() interceptor.WorkerInterceptor { return &logFields{} }

type logFields struct {
	interceptor.WorkerInterceptorBase
}

func (*logFields) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityLogFields{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

func (*logFields) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowLogFields{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type activityLogFields struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *activityLogFields) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&activityLogger{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}})
}

type activityLogger struct {
	interceptor.ActivityOutboundInterceptorBase
}

func (a *activityLogger) GetLogger(ctx context.Context) log.Logger {
	l := a.Next.GetLogger(ctx)
	f := workflows.LogFieldsFrom(ctx)
	if kv := fieldsOf(f, true); len(kv) > 0 {
		l = log.With(l, kv...)
	}
	return l
}

type workflowLogFields struct {
	interceptor.WorkflowInboundInterceptorBase
	outbound interceptor.WorkflowOutboundInterceptor
}

func (w *workflowLogFields) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	w.outbound = &workflowLogger{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}}
	return w.Next.Init(w.outbound)
}

// HandleSignal logs the signal with its sender's request id before the
// workflow takes it in: the one line that ties, say, a test payment's
// request to the order it paid. Only signals that came with a request id
// are logged; the rest have nothing to tie. The workflow logger does not
// log during replay, so each signal is logged once.
func (w *workflowLogFields) HandleSignal(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	if workflows.WorkflowLogFields(ctx).RequestID != "" {
		w.outbound.GetLogger(ctx).Info("Signal received", "Signal", in.SignalName)
	}
	return w.Next.HandleSignal(ctx, in)
}

type workflowLogger struct {
	interceptor.WorkflowOutboundInterceptorBase
}

// GetLogger adds the request id only: the Order workflow already names its
// order in its own logger, and other workflows work for no single order.
func (w *workflowLogger) GetLogger(ctx workflow.Context) log.Logger {
	l := w.Next.GetLogger(ctx)
	if kv := fieldsOf(workflows.WorkflowLogFields(ctx), false); len(kv) > 0 {
		l = log.With(l, kv...)
	}
	return l
}

func fieldsOf(f workflows.LogFields, order bool) []any {
	var kv []any
	if f.RequestID != "" {
		kv = append(kv, "request_id", f.RequestID)
	}
	if order && f.OrderID != "" {
		kv = append(kv, "OrderID", f.OrderID, "OrderNumber", f.OrderNumber)
	}
	return kv
}
