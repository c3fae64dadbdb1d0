package workflows

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	"github.com/memocart/memocart/models"
)

func TestPaymentOutcome(t *testing.T) {
	tests := []struct {
		name             string
		cancel           *CancelSignal
		paid             bool
		wantStatus       models.OrderStatus
		wantUnpaidClose  models.PaymentStatus
		wantReason       string
		wantCancellation models.CancellationReason
	}{
		{"paid", nil, true, models.OrderPaid, "", "", ""},
		{"deadline", nil, false, models.OrderCancelled, models.PaymentExpired, "payment deadline passed", models.CancellationPaymentWindowExpired},
		{"operator", &CancelSignal{Reason: "fraud", RequestedBy: "ops"}, false, models.OrderCancelled, models.PaymentCancelled, "cancelled by ops: fraud", models.CancellationByOperator},
		{"operator wins over a payment in the same instant", &CancelSignal{RequestedBy: "ops"}, true, models.OrderCancelled, models.PaymentCancelled, "cancelled by ops", models.CancellationByOperator},
		{"anonymous operator", &CancelSignal{}, false, models.OrderCancelled, models.PaymentCancelled, "cancelled by an operator", models.CancellationByOperator},
		{"customer", &CancelSignal{Reason: "changed my mind", RequestedBy: "the customer (API)", Cancellation: models.CancellationRequestedByCustomer}, false,
			models.OrderCancelled, models.PaymentCancelled, "cancelled by the customer (API): changed my mind", models.CancellationRequestedByCustomer},
		{"an operator relaying the customer", &CancelSignal{RequestedBy: "ops", Cancellation: models.CancellationRequestedByCustomer}, false,
			models.OrderCancelled, models.PaymentCancelled, "cancelled by ops", models.CancellationRequestedByCustomer},
		{"a signal cannot claim the deadline", &CancelSignal{RequestedBy: "ops", Cancellation: models.CancellationPaymentWindowExpired}, false,
			models.OrderCancelled, models.PaymentCancelled, "cancelled by ops", models.CancellationByOperator},
		{"an unknown reason is an operator's", &CancelSignal{RequestedBy: "ops", Cancellation: "because"}, false,
			models.OrderCancelled, models.PaymentCancelled, "cancelled by ops", models.CancellationByOperator},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, unpaidClose, reason, cancellation := paymentOutcome(tt.cancel, tt.paid)
			assert.Equal(t, tt.wantStatus, status)
			assert.Equal(t, tt.wantUnpaidClose, unpaidClose)
			assert.Equal(t, tt.wantReason, reason)
			assert.Equal(t, tt.wantCancellation, cancellation)
		})
	}
}

func TestPaymentStatusOf(t *testing.T) {
	tally := func(received string) models.PaymentTally {
		tl := models.NewPaymentTally(decimal.RequireFromString("100"))
		if received != "0" {
			tl.Add("p", decimal.RequireFromString(received))
		}
		return tl
	}
	tests := []struct {
		status      models.OrderStatus
		unpaidClose models.PaymentStatus
		received    string
		strays      int
		want        models.PaymentStatus
	}{
		{models.OrderCreated, "", "0", 0, models.PaymentPending},
		{models.OrderCreated, "", "0", 1, models.PaymentPending},
		{models.OrderCreated, "", "40", 0, models.PaymentPartial},
		{models.OrderPaid, "", "100", 0, models.PaymentConfirmed},
		{models.OrderPaid, "", "100", 1, models.PaymentOverpaid},
		{models.OrderShipped, "", "120", 0, models.PaymentOverpaid},
		{models.OrderDelivered, "", "100", 0, models.PaymentConfirmed},
		{models.OrderCancelled, models.PaymentExpired, "0", 0, models.PaymentExpired},
		{models.OrderCancelled, models.PaymentCancelled, "0", 0, models.PaymentCancelled},
		{models.OrderCancelled, models.PaymentExpired, "40", 0, models.PaymentRefundDue},
		{models.OrderCancelled, models.PaymentExpired, "0", 1, models.PaymentRefundDue},
		{models.OrderCancelled, models.PaymentCancelled, "100", 0, models.PaymentRefundDue},
		{models.OrderFailed, "", "100", 0, models.PaymentRefundDue},
	}
	for _, tt := range tests {
		name := string(tt.status) + "/" + tt.received
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, paymentStatusOf(tt.status, tt.unpaidClose, tally(tt.received), tt.strays))
		})
	}
}

func TestSameTransition(t *testing.T) {
	base := models.Transition{Status: models.OrderShipped, PaymentStatus: models.PaymentConfirmed,
		AmountReceived: decimal.RequireFromString("10.0"), Shipment: &models.Shipment{Carrier: "A"}}
	same := base
	same.AmountReceived = decimal.RequireFromString("10") // equal value, other representation
	same.Shipment = &models.Shipment{Carrier: "A"}
	same.At = base.At.Add(1)
	assert.True(t, sameTransition(base, same))

	changes := map[string]func(*models.Transition){
		"status":   func(t *models.Transition) { t.Status = models.OrderDelivered },
		"payment":  func(t *models.Transition) { t.PaymentStatus = models.PaymentOverpaid },
		"amount":   func(t *models.Transition) { t.AmountReceived = decimal.RequireFromString("11") },
		"reason":   func(t *models.Transition) { t.Reason = "x" },
		"shipment": func(t *models.Transition) { t.Shipment = &models.Shipment{Carrier: "B"} },
		"no ship":  func(t *models.Transition) { t.Shipment = nil },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			other := base
			change(&other)
			assert.False(t, sameTransition(base, other))
		})
	}
}

func TestValidateInput(t *testing.T) {
	assert.ErrorContains(t, validateInput(OrderInput{}), "OrderID, OrderNumber, PaymentAsset, PaymentAmount, PaymentDeadline")
}
