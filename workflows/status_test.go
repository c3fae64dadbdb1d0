package workflows_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

func TestOrderStatusQuery(t *testing.T) {
	h := newHarness(t)
	var start, partial workflows.StatusView
	h.queryAt(time.Minute, &start)
	h.payAt(5*time.Minute, pay("p1", "500"))
	h.queryAt(6*time.Minute, &partial)
	h.payAt(10*time.Minute, pay("p2", "495.98"))

	h.run()

	due := decimal.RequireFromString("995.98")
	assert.Equal(t, models.OrderCreated, start.Status)
	assert.Equal(t, models.PaymentPending, start.PaymentStatus)
	assert.True(t, start.Total.Equal(due))
	assert.True(t, start.AmountReceived.IsZero())
	assert.True(t, start.AmountDue.Equal(due), "amount due at start: the whole total")
	assert.Equal(t, t0.Add(deadline), start.PaymentDeadline.UTC())
	assert.Zero(t, start.PaymentsCounted)

	assert.Equal(t, models.OrderCreated, partial.Status)
	assert.Equal(t, models.PaymentPartial, partial.PaymentStatus)
	assert.True(t, partial.AmountReceived.Equal(decimal.RequireFromString("500")))
	assert.True(t, partial.Total.Equal(due))
	assert.True(t, partial.AmountDue.Equal(decimal.RequireFromString("495.98")), "amount due is the remainder, as the API's amount_due: %s", partial.AmountDue)
	assert.Equal(t, 1, partial.PaymentsCounted)

	final := h.query()
	assert.Equal(t, models.OrderDelivered, final.Status)
	assert.Equal(t, models.PaymentConfirmed, final.PaymentStatus)
	assert.True(t, final.Total.Equal(due))
	assert.True(t, final.AmountDue.IsZero(), "nothing due once paid")
	assert.Equal(t, 2, final.PaymentsCounted)
	assert.Equal(t, shipment, final.Shipment)
}

func TestOrderSearchAttributes(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.run()

	type sa struct{ number, status, payment, mode string }
	var got []sa
	for _, a := range h.attrs {
		var s sa
		s.number, _ = a.GetKeyword(workflows.SearchAttrOrderNumber)
		s.status, _ = a.GetKeyword(workflows.SearchAttrOrderStatus)
		s.payment, _ = a.GetKeyword(workflows.SearchAttrPaymentStatus)
		s.mode, _ = a.GetKeyword(workflows.SearchAttrOrderMode)
		got = append(got, s)
	}
	// A run started without them (typed in the UI) sets the number and
	// mode in its first task, as StartOptions does for the API's starts.
	assert.Equal(t, []sa{
		{orderNumber, "created", "pending", "test"},
		{"", "paid", "confirmed", ""},
		{"", "ordered", "confirmed", ""},
		{"", "shipped", "confirmed", ""},
		{"", "delivered", "confirmed", ""},
	}, got)
}

// A run whose start set the search attributes (what the API's start does,
// InputFor) does not upsert the same values again: the first change it
// upserts is the first real one. The attributes still end up the same.
func TestOrderSearchAttributesSetAtStart(t *testing.T) {
	h := newHarness(t)
	h.in.SearchAttributesSet = true
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.run()

	var statuses []string
	for _, a := range h.attrs {
		status, _ := a.GetKeyword(workflows.SearchAttrOrderStatus)
		statuses = append(statuses, status)
	}
	assert.Equal(t, []string{"paid", "ordered", "shipped", "delivered"}, statuses)
	assert.True(t, workflows.InputFor(models.Order{ID: orderID, Number: orderNumber}).SearchAttributesSet,
		"InputFor goes with StartOptions, which sets the attributes")
}

// The workflow's current details (the UI's User Metadata tab) say what
// changes: awaiting payment, with what is left to pay and until when,
// while the order waits; then its state, never the wait.
func TestOrderCurrentDetails(t *testing.T) {
	h := newHarness(t)
	var start, partial, paid string
	h.env.RegisterDelayedCallback(func() { start = h.currentDetails() }, time.Minute)
	h.payAt(5*time.Minute, pay("p1", "500"))
	h.env.RegisterDelayedCallback(func() { partial = h.currentDetails() }, 6*time.Minute)
	h.payAt(10*time.Minute, pay("p2", "495.98"))
	h.env.RegisterDelayedCallback(func() { paid = h.currentDetails() }, 11*time.Minute)
	h.run()

	deadlineAt := t0.Add(deadline).Format(time.RFC3339)
	assert.Contains(t, start, "**created**")
	assert.Contains(t, start, "Awaiting payment of **995.98 USDC**")
	assert.Contains(t, start, deadlineAt)
	assert.Contains(t, partial, "Awaiting payment of **495.98 USDC**")
	for name, d := range map[string]string{"paid": paid, "final": h.currentDetails()} {
		assert.NotContains(t, d, "Awaiting", name)
		assert.NotContains(t, d, deadlineAt, name)
	}
	assert.Contains(t, paid, "payment **confirmed**")
	assert.Contains(t, h.currentDetails(), "**delivered**")
}
