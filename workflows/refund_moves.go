package workflows

import (
	"time"

	"github.com/memocart/memocart/models"
)

// A RefundMove is one move an API client, a payer, an operator or a test
// helper asks of a refund's workflow: SetRefundDestination, ApproveRefund,
// CancelRefund, MarkRefundSent or FailTestPayout. Each names the workflow
// update that carries it and the models rule that decides it, which the
// update's validator and handler, and a caller facing a refund whose
// workflow has ended, apply alike.
type RefundMove interface {
	// Rule is the move's models rule: the refund as the move leaves it,
	// or the refusal.
	Rule(r models.Refund, now time.Time) (models.Refund, error)
	// update is the workflow update carrying the move, and its argument.
	update() (name string, arg any)
}

// SetRefundDestination says where the money goes
// (UpdateSetRefundDestination).
type SetRefundDestination RefundDestinationRequest

// ApproveRefund is an operator's approval of the payout, or retry of a
// failed one (UpdateApproveRefund).
type ApproveRefund RefundOperatorRequest

// CancelRefund is an operator settling the refund another way
// (UpdateCancelRefund).
type CancelRefund RefundOperatorRequest

// FailTestPayout is test mode's helper asking that the refund's next
// payout be refused (UpdateTestFailPayout).
type FailTestPayout RefundTestFailRequest

// MarkRefundSent is an operator recording the refund paid from another
// wallet, in transaction TxHash (UpdateMarkRefundSent).
type MarkRefundSent RefundOperatorRequest

func (m SetRefundDestination) Rule(r models.Refund, _ time.Time) (models.Refund, error) {
	return models.SetRefundDestination(r, m.Destination)
}

func (m ApproveRefund) Rule(r models.Refund, now time.Time) (models.Refund, error) {
	return models.ApproveRefund(r, now)
}

func (m CancelRefund) Rule(r models.Refund, now time.Time) (models.Refund, error) {
	return models.CancelRefund(r, now)
}

func (m MarkRefundSent) Rule(r models.Refund, now time.Time) (models.Refund, error) {
	return models.MarkRefundSent(r, m.TxHash, now)
}

// Rule leaves the refund as it is: the refusal comes with its payout.
func (m FailTestPayout) Rule(r models.Refund, _ time.Time) (models.Refund, error) {
	return r, models.DecideTestPayoutRefusal(r, m.Reason)
}

func (m SetRefundDestination) update() (string, any) {
	return UpdateSetRefundDestination, RefundDestinationRequest(m)
}
func (m ApproveRefund) update() (string, any)  { return UpdateApproveRefund, RefundOperatorRequest(m) }
func (m CancelRefund) update() (string, any)   { return UpdateCancelRefund, RefundOperatorRequest(m) }
func (m MarkRefundSent) update() (string, any) { return UpdateMarkRefundSent, RefundOperatorRequest(m) }
func (m FailTestPayout) update() (string, any) { return UpdateTestFailPayout, RefundTestFailRequest(m) }
