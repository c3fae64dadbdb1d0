package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/models"
)

// Fulfilment of the runs started before fulfil-by-polling (commit c07eb40,
// 2026-11-23): one blocking activity per step, SourceOrder, ShipOrder and
// DeliverOrder, each returning once the provider reports its step. New
// runs never come here. This file, and those three activities, go once the
// last such run has closed: fulfil says how to check.

// fulfilByBlocking sources, ships and delivers the order, one activity per
// step that returns once the provider has reached it. A marketplace
// refusal fails the order with the payment due back.
func (o *order) fulfilByBlocking(ctx workflow.Context) error {
	var a *activities.Orders
	var supplierRef string
	err := workflow.ExecuteActivity(withOptions(ctx, fulfilmentOptions("Buy the items on the marketplace")),
		a.SourceOrder, o.in.OrderID).Get(ctx, &supplierRef)
	if reason, detail, ok := sourcingFailure(err); ok {
		o.logger.Warn("Sourcing refused; order failed, payment due back", "Reason", reason, "Detail", detail)
		o.detail = detail
		return o.move(ctx, models.OrderFailed, reason)
	}
	if err != nil {
		return err
	}
	o.logger.Info("Order sourced", "SupplierRef", supplierRef)
	if err := o.move(ctx, models.OrderOrdered, ""); err != nil {
		return err
	}

	var shipment models.Shipment
	err = workflow.ExecuteActivity(withOptions(ctx, fulfilmentOptions("Wait for the parcel to ship")),
		a.ShipOrder, o.in.OrderID).Get(ctx, &shipment)
	if err != nil {
		return err
	}
	o.shipment = shipment
	if err := o.move(ctx, models.OrderShipped, ""); err != nil {
		return err
	}

	err = workflow.ExecuteActivity(withOptions(ctx, fulfilmentOptions("Wait for delivery")),
		a.DeliverOrder, o.in.OrderID).Get(ctx, nil)
	if err != nil {
		return err
	}
	return o.move(ctx, models.OrderDelivered, "")
}

// fulfilmentTimeout bounds one attempt of a blocking step: the step itself
// may take days, so an attempt ends here and its retry checks the provider
// again and goes on waiting.
const fulfilmentTimeout = 15 * time.Minute

// fulfilmentOptions: one blocking step. Its activity heartbeats through the
// waits between its checks of the provider too, so it takes the same
// heartbeat timeout as every other activity, however far off the
// provider's next check is.
func fulfilmentOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: fulfilmentTimeout,
		HeartbeatTimeout:    activityHeartbeat,
		RetryPolicy:         retryPolicy(),
		Summary:             summary,
	}
}
