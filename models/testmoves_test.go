package models_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/memocart/memocart/models"
)

func TestDecideTestMove(t *testing.T) {
	advance, fail := models.TestMove{Advance: true}, models.TestMove{Fail: models.DefaultTestFailure}
	for _, tc := range []struct {
		status models.OrderStatus
		move   models.TestMove
		want   models.Code // "" accepted
	}{
		{models.OrderCreated, advance, models.CodeInvalidOrderState},
		{models.OrderPaid, advance, ""},
		{models.OrderOrdered, advance, ""},
		{models.OrderShipped, advance, ""},
		{models.OrderDelivered, advance, models.CodeInvalidOrderState},
		{models.OrderCancelled, advance, models.CodeInvalidOrderState},
		{models.OrderFailed, advance, models.CodeInvalidOrderState},
		{models.OrderCreated, fail, models.CodeInvalidOrderState},
		{models.OrderPaid, fail, ""},
		{models.OrderOrdered, fail, ""},
		{models.OrderShipped, fail, models.CodeInvalidOrderState},
		{models.OrderDelivered, fail, models.CodeInvalidOrderState},
		{models.OrderFailed, fail, models.CodeInvalidOrderState},
		{models.OrderPaid, models.TestMove{Fail: "undeliverable"}, models.CodeInvalidRequest},
		{models.OrderPaid, models.TestMove{Fail: "no_such_code"}, models.CodeInvalidRequest},
		{models.OrderPaid, models.TestMove{}, models.CodeInvalidRequest},
		{models.OrderPaid, models.TestMove{Advance: true, Fail: models.DefaultTestFailure}, models.CodeInvalidRequest},
	} {
		err := models.DecideTestMove(tc.status, tc.move)
		if tc.want == "" {
			assert.NoError(t, err, "%+v at %s", tc.move, tc.status)
			continue
		}
		assert.Equal(t, tc.want, models.CodeOf(err), "%+v at %s: %v", tc.move, tc.status, err)
		if tc.want == models.CodeInvalidOrderState && tc.status != models.OrderCreated {
			assert.ErrorContains(t, err, "The order is "+string(tc.status), "names the status")
		}
	}
}

func TestTestFailureCodes(t *testing.T) {
	codes := models.TestFailureCodes()
	assert.IsNonDecreasing(t, codes)
	assert.Contains(t, codes, models.DefaultTestFailure)
	assert.Contains(t, codes, "product_out_of_stock")
	assert.NotContains(t, codes, "undeliverable", "a carrier's failure, not sourcing")
	for _, c := range codes {
		assert.NotEqual(t, "The retailer could not complete the purchase.", models.FulfilmentFailureReason(c), "%s has its own sentence", c)
	}
}

func TestDecideTestPayoutRefusal(t *testing.T) {
	for _, tc := range []struct {
		status models.RefundStatus
		mode   models.Mode
		reason string
		want   models.Code // "" accepted
	}{
		{models.RefundAwaitingDestination, models.ModeTest, "no_trust", ""},
		{models.RefundAwaitingApproval, models.ModeTest, "no_account", ""},
		{models.RefundFailed, models.ModeTest, "no_account", ""},
		{models.RefundSending, models.ModeTest, "no_account", models.CodeInvalidRefundState},
		{models.RefundSent, models.ModeTest, "no_account", models.CodeInvalidRefundState},
		{models.RefundCancelled, models.ModeTest, "no_account", models.CodeInvalidRefundState},
		{models.RefundAwaitingDestination, models.ModeLive, "no_account", models.CodeTestModeOnly},
		{models.RefundAwaitingDestination, models.ModeTest, "underfunded", models.CodeInvalidRequest},
		{models.RefundAwaitingDestination, models.ModeTest, "", models.CodeInvalidRequest},
	} {
		err := models.DecideTestPayoutRefusal(models.Refund{Status: tc.status, Mode: tc.mode}, tc.reason)
		if tc.want == "" {
			assert.NoError(t, err, "%s %s %q", tc.mode, tc.status, tc.reason)
			continue
		}
		assert.Equal(t, tc.want, models.CodeOf(err), "%s %s %q: %v", tc.mode, tc.status, tc.reason, err)
		if tc.want == models.CodeInvalidRefundState {
			assert.ErrorContains(t, err, string(tc.status), "names the status")
		}
	}
	assert.Contains(t, models.TestPayoutRefusals(), models.DefaultTestPayoutRefusal)
}
