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
	assert.True(t, start.AmountDue.Equal(due))
	assert.True(t, start.AmountReceived.IsZero())
	assert.True(t, start.AmountRemaining.Equal(due))
	assert.Equal(t, t0.Add(deadline), start.PaymentDeadline.UTC())
	assert.Zero(t, start.PaymentsCounted)

	assert.Equal(t, models.OrderCreated, partial.Status)
	assert.Equal(t, models.PaymentPartial, partial.PaymentStatus)
	assert.True(t, partial.AmountReceived.Equal(decimal.RequireFromString("500")))
	assert.True(t, partial.AmountRemaining.Equal(decimal.RequireFromString("495.98")), "remaining %s", partial.AmountRemaining)
	assert.Equal(t, 1, partial.PaymentsCounted)

	final := h.query()
	assert.Equal(t, models.OrderDelivered, final.Status)
	assert.Equal(t, models.PaymentConfirmed, final.PaymentStatus)
	assert.True(t, final.AmountRemaining.IsZero())
	assert.Equal(t, 2, final.PaymentsCounted)
	assert.Equal(t, shipment, final.Shipment)
}

func TestOrderSearchAttributes(t *testing.T) {
	h := newHarness(t)
	h.payAt(5*time.Minute, pay("p1", "995.98"))
	h.run()

	type sa struct{ number, status, payment string }
	var got []sa
	for _, a := range h.attrs {
		var s sa
		s.number, _ = a.GetKeyword(workflows.SearchAttrOrderNumber)
		s.status, _ = a.GetKeyword(workflows.SearchAttrOrderStatus)
		s.payment, _ = a.GetKeyword(workflows.SearchAttrPaymentStatus)
		got = append(got, s)
	}
	assert.Equal(t, []sa{
		{orderNumber, "created", "pending"},
		{"", "paid", "confirmed"},
		{"", "ordered", "confirmed"},
		{"", "shipped", "confirmed"},
		{"", "delivered", "confirmed"},
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
