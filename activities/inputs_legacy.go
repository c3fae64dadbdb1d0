package activities

import (
	"context"
	"encoding/json"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/memocart/memocart/models"
)

// The positional shapes of PlaceOrder, CheckOrder, RecordPayment,
// RecordLatePayment, RecordTransition and RecordRefund, before their one
// input struct (baseline-2026-12). Order runs started before that baseline
// still send them, and activity tasks scheduled by older workers carry
// them, under the same activity names. The worker registers, under each
// name, a function that takes both shapes (RegisterBothShapes): an input
// struct decodes from its JSON object, or from the old first positional
// argument (a JSON string), the rest of which the function's later
// parameters take.
//
// Delete this file, the positional fields of the inputs, the Positional
// shapes and the workflows' positional calls (workflows/inputs_legacy.go)
// once no Order run older than baseline-2026-12 is open:
//
//	WorkflowType = "Order" AND ExecutionStatus = "Running" AND
//	(TemporalChangeVersion IS NULL OR
//	 TemporalChangeVersion != "baseline-2026-12-1")
//
// finds none (an open run's pending activity tasks go with it).

// Positional names the activities' shapes before baseline-2026-12 for the
// workflow calls that still send them: method values of a nil
// *Positional give the activity names and check the arguments. It is
// never registered; its methods are shapes only.
type Positional struct{}

// PlaceOrder is PlaceOrder's shape before PlaceOrderInput.
func (*Positional) PlaceOrder(context.Context, string, int) (models.Placement, error) {
	return models.Placement{}, errShapeOnly
}

// CheckOrder is CheckOrder's shape before CheckOrderInput.
func (*Positional) CheckOrder(context.Context, string, string) (models.Progress, error) {
	return models.Progress{}, errShapeOnly
}

// RecordPayment is RecordPayment's shape before RecordPaymentInput.
func (*Positional) RecordPayment(context.Context, string, models.Payment) error {
	return errShapeOnly
}

// RecordLatePayment is RecordLatePayment's shape before
// RecordLatePaymentInput.
func (*Positional) RecordLatePayment(context.Context, string, models.Payment, time.Time) error {
	return errShapeOnly
}

// RecordTransition is RecordTransition's shape before
// RecordTransitionInput.
func (*Positional) RecordTransition(context.Context, string, models.Transition) error {
	return errShapeOnly
}

// RecordRefund is RecordRefund's shape before RecordRefundInput.
func (*Positional) RecordRefund(context.Context, string, string, time.Time) error {
	return errShapeOnly
}

var errShapeOnly = models.Errorf(models.CodeInternal, "a shape, never registered: the worker registers RegisterBothShapes")

// BothShapes names, for the workflows' local calls, the functions the
// worker registers under CheckOrder, RecordPayment and RecordTransition
// (RegisterBothShapes): a local activity runs the registered function
// with the call's arguments as they are (LocalArgs), and a replayer, which
// registers none, checks them against the method value's. It is never
// registered; its methods are shapes only.
type BothShapes struct{}

// CheckOrder is the shape of the function registered as CheckOrder.
func (*BothShapes) CheckOrder(context.Context, CheckOrderInput, string) (models.Progress, error) {
	return models.Progress{}, errShapeOnly
}

// RecordPayment is the shape of the function registered as RecordPayment.
func (*BothShapes) RecordPayment(context.Context, RecordPaymentInput, models.Payment) error {
	return errShapeOnly
}

// RecordTransition is the shape of the function registered as
// RecordTransition.
func (*BothShapes) RecordTransition(context.Context, RecordTransitionInput, models.Transition) error {
	return errShapeOnly
}

// LocalArgs are the arguments of a local activity call of one of the six
// activities above, input in: a local activity runs the function
// registered under the name (RegisterBothShapes) with the call's
// arguments as they are, so they are as many as its parameters, the
// positional rest zero (typed: the SDK cannot zero an untyped nil there).
func LocalArgs(in any) []any {
	switch in.(type) {
	case PlaceOrderInput:
		return []any{in, 0}
	case CheckOrderInput:
		return []any{in, ""}
	case RecordTransitionInput:
		return []any{in, models.Transition{}}
	case RecordPaymentInput:
		return []any{in, models.Payment{}}
	case RecordLatePaymentInput:
		return []any{in, models.Payment{}, time.Time{}}
	case RecordRefundInput:
		return []any{in, "", time.Time{}}
	}
	return []any{in}
}

// Registry is where RegisterBothShapes registers: a worker, a test suite.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// RegisterBothShapes registers, over the group's own methods of the same
// names (registered first), the functions that take both shapes of the six
// activities. Any group may be nil: its activities are not registered.
func RegisterBothShapes(r Registry, o *Orders, p *Payments) {
	over := func(name string, fn any) {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name, DisableAlreadyRegisteredCheck: true})
	}
	if o != nil {
		over("PlaceOrder", o.placeOrderEitherShape)
		over("CheckOrder", o.checkOrderEitherShape)
		over("RecordTransition", o.recordTransitionEitherShape)
	}
	if p != nil {
		over("RecordPayment", p.recordPaymentEitherShape)
		over("RecordLatePayment", p.recordLatePaymentEitherShape)
		over("RecordRefund", p.recordRefundEitherShape)
	}
}

func (a *Orders) placeOrderEitherShape(ctx context.Context, in PlaceOrderInput, attempt int) (models.Placement, error) {
	if in.positional {
		in.Attempt = attempt
	}
	return a.PlaceOrder(ctx, in)
}

func (a *Orders) checkOrderEitherShape(ctx context.Context, in CheckOrderInput, ref string) (models.Progress, error) {
	if in.positional {
		in.Ref = ref
	}
	return a.CheckOrder(ctx, in)
}

func (a *Orders) recordTransitionEitherShape(ctx context.Context, in RecordTransitionInput, t models.Transition) error {
	if in.positional {
		in.Transition = t
	}
	return a.RecordTransition(ctx, in)
}

func (a *Payments) recordPaymentEitherShape(ctx context.Context, in RecordPaymentInput, p models.Payment) error {
	if in.positional {
		in.Payment = p
	}
	return a.RecordPayment(ctx, in)
}

func (a *Payments) recordLatePaymentEitherShape(ctx context.Context, in RecordLatePaymentInput, p models.Payment, at time.Time) error {
	if in.positional {
		in.Payment, in.At = p, at
	}
	return a.RecordLatePayment(ctx, in)
}

func (a *Payments) recordRefundEitherShape(ctx context.Context, in RecordRefundInput, txHash string, at time.Time) error {
	if in.positional {
		in.TxHash, in.At = txHash, at
	}
	return a.RecordRefund(ctx, in)
}

// unmarshalEitherShape decodes data as the old first positional argument
// (a JSON string) into first, marking the input positional, or else as
// the input struct into plain (the input's type without its
// UnmarshalJSON).
func unmarshalEitherShape[T any](data []byte, plain *T, first *string, positional *bool) error {
	if len(data) > 0 && data[0] == '"' {
		*positional = true
		return json.Unmarshal(data, first)
	}
	return json.Unmarshal(data, plain)
}

// UnmarshalJSON takes the input, or the old first argument (the order id).
func (in *PlaceOrderInput) UnmarshalJSON(data []byte) error {
	type plain PlaceOrderInput
	return unmarshalEitherShape(data, (*plain)(in), &in.OrderID, &in.positional)
}

// UnmarshalJSON takes the input, or the old first argument (the order id).
func (in *CheckOrderInput) UnmarshalJSON(data []byte) error {
	type plain CheckOrderInput
	return unmarshalEitherShape(data, (*plain)(in), &in.OrderID, &in.positional)
}

// UnmarshalJSON takes the input, or the old first argument (the order id).
func (in *RecordPaymentInput) UnmarshalJSON(data []byte) error {
	type plain RecordPaymentInput
	return unmarshalEitherShape(data, (*plain)(in), &in.OrderID, &in.positional)
}

// UnmarshalJSON takes the input, or the old first argument (the order id).
func (in *RecordLatePaymentInput) UnmarshalJSON(data []byte) error {
	type plain RecordLatePaymentInput
	return unmarshalEitherShape(data, (*plain)(in), &in.OrderID, &in.positional)
}

// UnmarshalJSON takes the input, or the old first argument (the order id).
func (in *RecordTransitionInput) UnmarshalJSON(data []byte) error {
	type plain RecordTransitionInput
	return unmarshalEitherShape(data, (*plain)(in), &in.OrderID, &in.positional)
}

// UnmarshalJSON takes the input, or the old first argument (the order
// number).
func (in *RecordRefundInput) UnmarshalJSON(data []byte) error {
	type plain RecordRefundInput
	return unmarshalEitherShape(data, (*plain)(in), &in.OrderNumber, &in.positional)
}
