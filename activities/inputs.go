package activities

import (
	"time"

	"github.com/memocart/memocart/models"
)

// The inputs of the order's activities, one struct each, so a field can be
// added without changing the activity's shape. Runs from baseline-2026-12
// on send them; older runs send the positional arguments these replaced,
// which the worker still takes (inputs_legacy.go).

// PlaceOrderInput asks PlaceOrder to place attempt Attempt (from 1) of
// the order.
type PlaceOrderInput struct {
	OrderID string
	Attempt int

	positional bool // decoded from the shape before baseline-2026-12
}

// CheckOrderInput asks CheckOrder where the order placed as Ref is.
type CheckOrderInput struct {
	OrderID string
	Ref     string
	// Move, when set, is a test helper's move the provider makes before
	// it answers (TestMover).
	Move *models.TestMove `json:",omitempty"`

	positional bool
}

// RecordPaymentInput is a payment the workflow took in for the order.
type RecordPaymentInput struct {
	OrderID string
	Payment models.Payment

	positional bool
}

// RecordLatePaymentInput is a payment the workflow took in after the
// order's refunds, found late at At (workflow time).
type RecordLatePaymentInput struct {
	OrderID string
	Payment models.Payment
	At      time.Time

	positional bool
}

// RecordTransitionInput is one step of the workflow's progress.
type RecordTransitionInput struct {
	OrderID    string
	Transition models.Transition

	positional bool
}

// RecordRefundInput is an operator's refund of the order's money, sent in
// TxHash, recorded at At (workflow time).
type RecordRefundInput struct {
	OrderNumber string
	TxHash      string
	At          time.Time

	positional bool
}
