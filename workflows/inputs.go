package workflows

import (
	"github.com/memocart/memocart/activities"
)

// changeInputStructs is the change that gives PlaceOrder, CheckOrder,
// RecordPayment, RecordLatePayment, RecordTransition and RecordRefund one
// input struct each. It is folded into baseline-2026-12 and asked of no
// run: a run from that baseline sends the structs, an older run the
// positional arguments (inputs_legacy.go), which a worker it shares the
// task queue with may still be running the old code for.
const changeInputStructs = "input-structs"

// call is one activity call of the order: fn with its input in, the same
// call in the shape before changeInputStructs (old with args), and for a
// call that may run as a local activity, the shape of the function the
// worker registers under fn's name (both: activities.BothShapes).
type call struct {
	fn   any
	in   any
	old  any
	args []any
	both any
}

// shapedCall is an activity function with the arguments to call it with.
type shapedCall struct {
	fn   any
	args []any
}

// local is c as a local activity: it runs in this worker, which takes the
// input struct whatever the run's baseline, and the worker runs the
// function registered under fn's name with the arguments as they are
// (activities.LocalArgs).
func (c call) local() shapedCall {
	return shapedCall{fn: c.both, args: activities.LocalArgs(c.in)}
}

// checkCall is the CheckOrder call of the order placed as ref.
func (o *order) checkCall(ref string) call {
	var (
		a    *activities.Orders
		old  *activities.Positional
		both *activities.BothShapes
	)
	return call{fn: a.CheckOrder, in: activities.CheckOrderInput{OrderID: o.in.OrderID, Ref: ref},
		old: old.CheckOrder, args: []any{o.in.OrderID, ref}, both: both.CheckOrder}
}
