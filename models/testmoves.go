package models

import (
	"maps"
	"slices"
	"strings"
)

// TestMove is a test helper's move of a test-mode order at the sandbox
// buying provider: what a retailer would do to it, done now. Exactly one
// of its fields is set. The order's workflow carries it to the provider
// in a check (it never writes the order itself), so the order moves as it
// would on the provider's news.
type TestMove struct {
	// Advance: the order's next fulfilment step (ordered, shipped,
	// delivered) happens now.
	Advance bool `json:",omitempty"`
	// Fail: sourcing fails now, for this failure code (TestFailureCodes).
	Fail string `json:",omitempty"`
}

// DefaultTestFailure is the failure code a fail test helper uses when the
// client names none.
const DefaultTestFailure = "product_unavailable"

// TestFailureCodes are the failure codes a client may pick for the fail
// test helper, sorted: every buying-provider failure of sourcing (the
// order's failure_reason is the code's sentence). A carrier's failure to
// deliver (undeliverable) is not sourcing, so it is not one.
func TestFailureCodes() []string { return slices.Clone(testFailureCodes) }

// testFailureCodes is TestFailureCodes' list, made once (workflows check
// codes against it, and may not iterate a map).
var testFailureCodes = slices.DeleteFunc(slices.Sorted(maps.Keys(fulfilmentFailureReasons)),
	func(c string) bool { return c == "undeliverable" })

// DecideTestMove is whether test mode's helper may make move m of an order
// at status: advance an order paid and on its way (paid, ordered or
// shipped); fail the sourcing of an order paid but not yet shipped. An
// unknown failure code is CodeInvalidRequest; any other refusal is
// CodeInvalidOrderState naming the status.
func DecideTestMove(status OrderStatus, m TestMove) error {
	switch {
	case m.Advance == (m.Fail != ""):
		return Errorf(CodeInvalidRequest, "a test move either advances the order or fails it")
	case m.Fail != "" && !slices.Contains(testFailureCodes, m.Fail):
		return FieldError(CodeInvalidRequest, "reason", "reason must be one of the documented failure codes: %s", strings.Join(testFailureCodes, ", "))
	case status == OrderCreated:
		return Errorf(CodeInvalidOrderState, "The order is awaiting payment: pay it first (a test payment), or expire it")
	case m.Advance && (status == OrderPaid || status == OrderOrdered || status == OrderShipped):
		return nil
	case m.Advance:
		return Errorf(CodeInvalidOrderState, "The order is %s: only a paid order not yet delivered can advance", status)
	case status == OrderPaid || status == OrderOrdered:
		return nil
	}
	return Errorf(CodeInvalidOrderState, "The order is %s: only a paid order not yet shipped can fail sourcing", status)
}

// TestPayoutRefusals are the refusals a client may pick for the refund
// fail test helper, sorted: the network's answers that fail a refund and
// wait for a new destination (no such account; no trustline for the
// asset), as the sandbox payer gives them.
func TestPayoutRefusals() []string { return []string{"no_account", "no_trust"} }

// DefaultTestPayoutRefusal is the refusal the refund fail test helper
// uses when the client names none.
const DefaultTestPayoutRefusal = "no_account"

// DecideTestPayoutRefusal is whether test mode's helper may have refund
// r's next payout refused with reason: a test refund with no payout on
// its way and not settled (awaiting its destination or approval, or
// failed and waiting for a new destination). Test payouts are made the
// moment a refund may be paid, so the refusal is set on the next one. An
// unknown reason is CodeInvalidRequest; any other refusal is
// CodeInvalidRefundState naming the status.
func DecideTestPayoutRefusal(r Refund, reason string) error {
	switch {
	case r.Mode != ModeTest:
		return NewError(CodeTestModeOnly)
	case !slices.Contains(TestPayoutRefusals(), reason):
		return FieldError(CodeInvalidRequest, "reason", "reason must be one of: %s", strings.Join(TestPayoutRefusals(), ", "))
	case r.Status == RefundAwaitingDestination || r.Status == RefundAwaitingApproval || r.Status == RefundFailed:
		return nil
	}
	return Errorf(CodeInvalidRefundState, "The refund is %s: only a refund not sent, sending or cancelled can have its payout refused", r.Status)
}
