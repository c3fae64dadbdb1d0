package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
)

// mayOweMoney reports whether the order may owe money back as it closes:
// what it credited (refund_due), an overpayment's excess, a payment in
// another asset or a late one. CreateRefunds decides what exactly.
func (o *order) mayOweMoney() bool {
	return o.paymentStatus().OwesMoneyBack() || o.pay.strays > 0 || len(o.pay.late) > 0
}

// handOverRefunds creates the refunds the order owes, each paid out by its
// own Refund workflow, so this run can close. From here on a payment is
// late: recorded as such, and refunded on its own (RecordLatePayment
// creates its refund), never credited to an order whose refunds are
// already counted.
func (o *order) handOverRefunds() error {
	o.refund.handedOver = true
	if err := o.settle(o.bg); err != nil {
		return err
	}
	var a *activities.Refunds
	in := activities.CreateRefundsInput{OrderID: o.in.OrderID, OrderNumber: o.in.OrderNumber}
	var n int
	if err := workflow.ExecuteActivity(withOptions(o.bg, storeOptions("Create the refunds the order owes")), a.CreateRefunds, in).Get(o.bg, &n); err != nil {
		return err
	}
	o.logger.Info("Refunds handed over to their workflows", "Refunds", n)
	return nil
}
