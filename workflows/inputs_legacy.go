package workflows

import "slices"

// The positional calls of runs older than baseline-2026-12. Their
// activity tasks may be run by a worker of the code before
// changeInputStructs (a deploy rolls out while they run), which decodes
// only the positional arguments, so they keep sending them; workers of
// this code take both (activities.RegisterBothShapes).
//
// Delete this file, call.old, call.args and call.both (a local call then
// takes fn with in), and activities' inputs_legacy.go once no such run is
// open:
//
//	WorkflowType = "Order" AND ExecutionStatus = "Running" AND
//	(TemporalChangeVersion IS NULL OR
//	 TemporalChangeVersion != "baseline-2026-12-1")
//
// finds none.

// shaped is c in the shape this run sends: the input struct from
// baseline-2026-12 on, the positional arguments before.
func (o *order) shaped(c call) shapedCall {
	if o.sendsInputStructs() {
		return shapedCall{fn: c.fn, args: []any{c.in}}
	}
	return shapedCall{fn: c.old, args: c.args}
}

// sendsInputStructs reports whether this run started from a baseline that
// sends the activities' input structs (baseline-2026-12 on).
func (o *order) sendsInputStructs() bool {
	for _, b := range baselines[:o.book.baseline] {
		if slices.Contains(b.changes, changeInputStructs) {
			return true
		}
	}
	return false
}
