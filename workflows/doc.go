// Package workflows holds the order workflow: one Temporal workflow per
// order that waits for the crypto payment (matched by memo, delivered as
// signals) or the payment deadline, then drives sourcing, shipping and
// delivery, recording each step through activities. It owns the waits,
// timers, signals, the status query and the search attributes; the rules
// themselves (statuses, allowed transitions, the payment tally) come from
// pure models functions.
//
// Everything here runs inside a Temporal workflow and must be
// deterministic: workflow.Now, timers, workflow.Go and selectors only —
// never time.Now, rand, go statements, I/O or maps iterated for order.
// workflowcheck guards this in `make lint`.
//
// It may import models, activities (method values only, never to call
// them directly) and the Temporal workflow API.
package workflows
