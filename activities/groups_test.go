package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// allActs holds every group; its promoted methods are the activities, so
// allActs{} gives method values of nil groups, as the workflows use them.
type allActs struct {
	*Orders
	*Payments
	*Refunds
	*Webhooks
	*Watches
}

// parts are the parts a test gives the groups it runs; the groups are
// built without their constructors, so a test gives only what it uses.
type parts struct {
	Store      Store
	Refunds    OrderRefunds
	Payouts    *RefundPayouts
	Fulfillers map[models.Mode]Fulfiller
	Watchers   map[string]PaymentWatcher
	Webhooks   WebhookStore
	Sender     WebhookSender
	Events     EventDispatcher
	Now        func() time.Time

	heartbeatEvery  time.Duration
	recordHeartbeat func(ctx context.Context, details ...any)
}

func (p parts) build() allActs {
	rt := runtime{now: p.Now, heartbeatEvery: p.heartbeatEvery, recordHeartbeat: p.recordHeartbeat}
	events := p.Events
	if events == nil {
		events = NoDispatch
	}
	refunds := &Refunds{runtime: rt, events: events}
	if p.Payouts != nil {
		refunds.payouts = *p.Payouts
	}
	return allActs{
		Orders:   &Orders{runtime: rt, store: p.Store, fulfillers: p.Fulfillers, events: events},
		Payments: &Payments{runtime: rt, store: p.Store, ledger: p.Refunds, refunds: refunds, events: events},
		Refunds:  refunds,
		Webhooks: &Webhooks{runtime: rt, store: p.Webhooks, sender: p.Sender},
		Watches:  &Watches{watchers: p.Watchers},
	}
}

// TestConstructorsRefuseMissingParts: each group is built with every part
// it needs, or not at all, so a worker never finds a part missing while it
// runs an activity.
func TestConstructorsRefuseMissingParts(t *testing.T) {
	store := &fakeStore{}
	ff := map[models.Mode]Fulfiller{models.ModeTest: &fakeFulfiller{}}
	payouts := RefundPayouts{
		Store: &refundsStore{}, Payers: map[models.Mode]Payer{models.ModeTest: scriptedPayer{}},
		Start: func(context.Context, models.Refund, string) error { return nil }, Alerts: &alertLog{},
	}
	refunds, err := NewRefunds(payouts, NoDispatch, nil)
	require.NoError(t, err)
	ok := func(_ any, err error) { t.Helper(); assert.NoError(t, err) }
	refused := func(_ any, err error) { t.Helper(); assert.Error(t, err) }

	ok(NewOrders(store, ff, NoDispatch, nil))
	refused(NewOrders(nil, ff, NoDispatch, nil))
	refused(NewOrders(store, nil, NoDispatch, nil))
	refused(NewOrders(store, map[models.Mode]Fulfiller{models.ModeTest: nil}, NoDispatch, nil))
	refused(NewOrders(store, ff, nil, nil))

	ok(NewPayments(store, store, refunds, NoDispatch, nil))
	refused(NewPayments(nil, store, refunds, NoDispatch, nil))
	refused(NewPayments(store, nil, refunds, NoDispatch, nil))
	refused(NewPayments(store, store, nil, NoDispatch, nil))
	refused(NewPayments(store, store, refunds, nil, nil))

	without := func(f func(p *RefundPayouts)) RefundPayouts { p := payouts; f(&p); return p }
	refused(NewRefunds(without(func(p *RefundPayouts) { p.Store = nil }), NoDispatch, nil))
	refused(NewRefunds(without(func(p *RefundPayouts) { p.Payers = nil }), NoDispatch, nil))
	refused(NewRefunds(without(func(p *RefundPayouts) { p.Payers = map[models.Mode]Payer{models.ModeLive: nil} }), NoDispatch, nil))
	refused(NewRefunds(without(func(p *RefundPayouts) { p.Start = nil }), NoDispatch, nil))
	refused(NewRefunds(without(func(p *RefundPayouts) { p.Alerts = nil }), NoDispatch, nil))
	refused(NewRefunds(payouts, nil, nil))

	ok(NewWebhooks(holdingWebhookStore{}, holdingSender{}, nil))
	refused(NewWebhooks(nil, holdingSender{}, nil))
	refused(NewWebhooks(holdingWebhookStore{}, nil, nil))
}
