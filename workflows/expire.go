package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// ExpireRequest is UpdateExpirePayment's input: nothing but the ask.
type ExpireRequest struct{}

// ExpireResult is UpdateExpirePayment's answer: the order as recorded
// once the payment wait is over.
type ExpireResult struct {
	Status        models.OrderStatus
	PaymentStatus models.PaymentStatus
}

// validateExpire decides the test helper's expire on the workflow's own
// state, which knows of payments not recorded yet (models.DecideExpire).
// A refusal is returned before the update enters the history.
func (o *order) validateExpire(_ workflow.Context, _ ExpireRequest) error {
	return refusal(models.DecideExpire(o.status, o.pay.tally.Paid()))
}

// expireByTestHelper handles UpdateExpirePayment: the payment wait ends
// now as it would at the deadline (payments taken in before count), and
// it answers once the order's new state is written, so the API's read
// that follows shows it. It waits as cancelByCustomer does.
func (o *order) expireByTestHelper(ctx workflow.Context, _ ExpireRequest) (ExpireResult, error) {
	o.expireNow = true
	bg, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(bg, func() bool {
		return o.status != models.OrderCreated && o.persist.written.Status == o.status
	}); err != nil {
		return ExpireResult{}, err
	}
	return ExpireResult{Status: o.status, PaymentStatus: o.paymentStatus()}, nil
}
