package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"github.com/memocart/memocart/activities"
	"github.com/memocart/memocart/activities/sandbox"
	"github.com/memocart/memocart/models"
)

// actParts are the parts a test gives the activity groups it runs; each
// group whose parts are given is built by its constructor and registered.
// A refund part left out does nothing: no alerts, a start that starts
// nothing, the sandbox payer.
type actParts struct {
	Store      activities.Store
	Ledger     activities.OrderRefunds
	Payouts    activities.RefundPayouts
	Fulfillers map[models.Mode]activities.Fulfiller
	Webhooks   activities.WebhookStore
	Sender     activities.WebhookSender
	Now        func() time.Time
}

// registry is where tests register activities: a workflow test suite.
type registry interface {
	RegisterActivity(a any)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// noAlerts drops the alerts raised.
type noAlerts struct{}

func (noAlerts) Alert(context.Context, string, string) {}

func registerActivities(t testing.TB, env registry, p actParts) {
	t.Helper()
	var refunds *activities.Refunds
	if p.Payouts.Store != nil {
		if len(p.Payouts.Payers) == 0 {
			p.Payouts.Payers = map[models.Mode]activities.Payer{models.ModeTest: sandbox.NewPayer()}
		}
		if p.Payouts.Start == nil {
			p.Payouts.Start = func(context.Context, models.Refund, string) error { return nil }
		}
		if p.Payouts.Alerts == nil {
			p.Payouts.Alerts = noAlerts{}
		}
		var err error
		refunds, err = activities.NewRefunds(p.Payouts, activities.NoDispatch, p.Now)
		require.NoError(t, err)
		env.RegisterActivity(refunds)
	}
	var (
		orders   *activities.Orders
		payments *activities.Payments
		err      error
	)
	if p.Store != nil && p.Fulfillers != nil {
		orders, err = activities.NewOrders(p.Store, p.Fulfillers, activities.NoDispatch, p.Now)
		require.NoError(t, err)
		env.RegisterActivity(orders)
	}
	if p.Store != nil && p.Ledger != nil && refunds != nil {
		payments, err = activities.NewPayments(p.Store, p.Ledger, refunds, activities.NoDispatch, p.Now)
		require.NoError(t, err)
		env.RegisterActivity(payments)
	}
	activities.RegisterBothShapes(env, orders, payments)
	if p.Webhooks != nil {
		webhooks, err := activities.NewWebhooks(p.Webhooks, p.Sender, p.Now)
		require.NoError(t, err)
		env.RegisterActivity(webhooks)
	}
}
