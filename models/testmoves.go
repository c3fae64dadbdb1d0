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
func TestFailureCodes() []string {
	codes := slices.Sorted(maps.Keys(fulfilmentFailureReasons))
	return slices.DeleteFunc(codes, func(c string) bool { return c == "undeliverable" })
}

// DecideTestMove is whether test mode's helper may make move m of an order
// at status: advance an order paid and on its way (paid, ordered or
// shipped); fail the sourcing of an order paid but not yet shipped. An
// unknown failure code is CodeInvalidRequest; any other refusal is
// CodeInvalidOrderState naming the status.
func DecideTestMove(status OrderStatus, m TestMove) error {
	switch {
	case m.Advance == (m.Fail != ""):
		return Errorf(CodeInvalidRequest, "a test move either advances the order or fails it")
	case m.Fail != "" && !slices.Contains(TestFailureCodes(), m.Fail):
		return FieldError(CodeInvalidRequest, "reason", "reason must be one of the documented failure codes: %s", strings.Join(TestFailureCodes(), ", "))
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
