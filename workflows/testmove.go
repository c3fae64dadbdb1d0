package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// TestMoveResult is UpdateTestMove's answer: the order as recorded once
// the move's outcome is written.
type TestMoveResult struct {
	Status        models.OrderStatus
	PaymentStatus models.PaymentStatus
}

// testMoves are test helpers' moves (UpdateTestMove) on their way to the
// loop that follows the order at its provider (awaitNews), which makes
// each in a check at once, as it checks on a provider's hint.
type testMoves struct {
	ch workflow.Channel // buffered: a handler never blocks on it
	// sent counts the moves handed to the loop; taken those it checked;
	// done those whose outcome it has written (an update answers then).
	sent, taken, done int
	// legacy: the run follows the order on a path that takes no moves (a
	// run from before fulfil-by-polling or watch-by-retry).
	legacy bool
	// continuing: the run is continuing as new, which a move waiting for
	// its answer would block.
	continuing bool
}

// maxPendingMoves bounds the moves sent and not yet taken: more are
// refused rather than block their handlers.
const maxPendingMoves = 8

// validateTestMove decides a test helper's move on the workflow's own
// state (models.DecideTestMove); the order's mode and the run's path must
// take it. A refusal is returned before the update enters the history.
func (o *order) validateTestMove(_ workflow.Context, m models.TestMove) error {
	if o.in.Mode != models.ModeTest {
		return refusal(models.NewError(models.CodeTestModeOnly))
	}
	if err := models.DecideTestMove(o.status, m); err != nil {
		return refusal(err)
	}
	// A run from before baseline-2026-12 takes none either: its checks
	// send positional arguments, which carry no move.
	if o.tests.legacy || !o.sendsInputStructs() {
		return refusal(models.Errorf(models.CodeInvalidOrderState, "The order's workflow predates test moves: it moves at the sandbox's pace"))
	}
	if o.tests.continuing || o.tests.sent-o.tests.taken >= maxPendingMoves {
		return refusal(models.Errorf(models.CodeUnavailable, "The order's workflow cannot take a test move now; retry in a moment"))
	}
	return nil
}

// moveByTestHelper handles UpdateTestMove: it hands the move to the loop
// following the order and answers once the move's outcome is written, or
// the order has ended another way (a payment or provider failure first).
func (o *order) moveByTestHelper(ctx workflow.Context, m models.TestMove) (TestMoveResult, error) {
	if !o.tests.ch.SendAsync(m) { // the validator keeps it from filling
		return TestMoveResult{}, refusal(models.Errorf(models.CodeUnavailable, "The order's workflow cannot take a test move now; retry in a moment"))
	}
	o.tests.sent++
	n := o.tests.sent
	bg, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(bg, func() bool {
		return o.tests.done >= n || o.status.Final() && o.persist.written.Status == o.status
	}); err != nil {
		return TestMoveResult{}, err
	}
	return TestMoveResult{Status: o.status, PaymentStatus: o.paymentStatus()}, nil
}
