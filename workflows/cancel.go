package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/models"
)

// CancelSignal asks to cancel an order that is still waiting for payment.
// Once the order is paid it is ignored (and logged).
type CancelSignal struct {
	Reason      string
	RequestedBy string
	// Cancellation is the reason clients read; an operator may say
	// requested_by_customer (the customer asked by mail). Anything else,
	// or nothing, is cancelled_by_operator.
	Cancellation models.CancellationReason `json:",omitempty"`
}

// CancelRequest is UpdateCancel's input.
type CancelRequest struct {
	// Note is the customer's reason in its own words, kept for operators
	// (the order's status reason); may be empty.
	Note string `json:",omitempty"`
}

// CancelResult is UpdateCancel's answer: the order as recorded once the
// cancellation is written. Cancellation says whose cancellation it was: an
// order the deadline or an operator cancelled first keeps that reason.
type CancelResult struct {
	Status        models.OrderStatus
	PaymentStatus models.PaymentStatus
	Cancellation  models.CancellationReason
}

// acceptCancel takes in an operator's (or the customer's) cancel. An
// order moves to cancelled only from awaiting payment
// (models.CanTransition); later requests are logged and dropped. The
// amount due being in does not stop it here: a cancel taken in before the
// payment wait ends wins over the payment, and the money goes back.
func (o *order) acceptCancel(c CancelSignal) {
	if o.cancelReq != nil || !models.CanTransition(o.status, models.OrderCancelled) {
		o.logger.Info("Cancel request ignored", "Status", o.status, "RequestedBy", c.RequestedBy, "Reason", c.Reason)
		return
	}
	o.logger.Info("Cancel requested", "RequestedBy", c.RequestedBy, "Reason", c.Reason)
	o.cancelReq = &c
}

// validateCancel decides a customer's cancel on the workflow's own state,
// which knows of payments the database has not recorded yet, by the same
// rule as the API (models.DecideCancel): accepted for an order awaiting
// payment whose amount due is not in, and for one already cancelled
// (answered as it is). A refusal is returned before the update enters the
// history. It only reads state.
func (o *order) validateCancel(_ workflow.Context, _ CancelRequest) error {
	if _, err := models.DecideCancel(o.status, o.pay.tally.Paid()); err != nil {
		return refusal(err)
	}
	return nil
}

// cancelByCustomer handles UpdateCancel: it takes in the cancel as an
// operator's would be (a cancel wins over a payment completing in the same
// instant), then answers once the order's new state is written, so the
// API's read that follows shows it. It waits on the never-cancelled
// context: if the workflow itself is cancelled meanwhile, the order is
// still closed and written (run), and that is the answer.
func (o *order) cancelByCustomer(ctx workflow.Context, r CancelRequest) (CancelResult, error) {
	if o.status == models.OrderCreated {
		o.acceptCancel(CancelSignal{Reason: r.Note, RequestedBy: "the customer (API)", Cancellation: models.CancellationRequestedByCustomer})
	}
	// Disconnected from the handler's own context: blocking calls take the
	// context of the coroutine that makes them.
	bg, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.Await(bg, func() bool {
		return o.status != models.OrderCreated && o.persist.written.Status == o.status
	}); err != nil {
		return CancelResult{}, err
	}
	if o.status != models.OrderCancelled {
		return CancelResult{}, refusal(models.NotCancellable(o.status))
	}
	return CancelResult{Status: o.status, PaymentStatus: o.paymentStatus(), Cancellation: o.cancellation}, nil
}
