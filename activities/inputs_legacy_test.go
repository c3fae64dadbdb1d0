package activities

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

// TestPositionalPayloadsStillDecode: an activity task scheduled by a run
// older than baseline-2026-12, or by an older worker, carries the
// positional arguments; a worker of this code runs it, by the same name,
// as it runs the input struct's, and both do the same.
func TestPositionalPayloadsStillDecode(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	pay := models.Payment{ID: "sandbox:p1", Asset: "USDC", Amount: decimal.RequireFromString("1.5")}
	step := models.Transition{Status: models.OrderPaid, PaymentStatus: models.PaymentConfirmed, At: at, AmountReceived: decimal.RequireFromString("1.5")}
	for _, tt := range []struct {
		name       string
		positional []any
		input      any
		result     any // the result's type, when the activity has one
	}{
		{"PlaceOrder", []any{"ord_test", 2}, PlaceOrderInput{OrderID: "ord_test", Attempt: 2}, &models.Placement{}},
		{"CheckOrder", []any{"ord_test", "REF-ord_test-2"}, CheckOrderInput{OrderID: "ord_test", Ref: "REF-ord_test-2"}, &models.Progress{}},
		{"RecordTransition", []any{"ord_test", step}, RecordTransitionInput{OrderID: "ord_test", Transition: step}, nil},
		{"RecordPayment", []any{"ord_test", pay}, RecordPaymentInput{OrderID: "ord_test", Payment: pay}, nil},
		{"RecordLatePayment", []any{"ord_test", pay, at}, RecordLatePaymentInput{OrderID: "ord_test", Payment: pay, At: at}, nil},
		{"RecordRefund", []any{"12345678906", "tx1", at}, RecordRefundInput{OrderNumber: "12345678906", TxHash: "tx1", At: at}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := func(args ...any) (*fakeStore, *fakeFulfiller, any) {
				store := &fakeStore{orders: map[string]models.Order{"ord_test": testOrder("ord_test", models.ModeTest)}}
				ff := &fakeFulfiller{script: journey()}
				env := newEnv(t, parts{Store: store, Refunds: store, Fulfillers: map[models.Mode]Fulfiller{models.ModeTest: ff},
					Payouts: &RefundPayouts{Store: &refundsStore{refunds: map[string]models.Refund{}}}}.build())
				v, err := env.ExecuteActivity(tt.name, args...)
				require.NoError(t, err)
				if tt.result == nil {
					return store, ff, nil
				}
				require.NoError(t, v.Get(tt.result))
				return store, ff, tt.result
			}
			oldStore, oldFF, oldResult := run(tt.positional...)
			if oldResult != nil {
				oldResult = deref(oldResult)
			}
			newStore, newFF, newResult := run(tt.input)
			if newResult != nil {
				newResult = deref(newResult)
			}
			assert.Equal(t, newResult, oldResult, "the same result")
			assert.Equal(t, newStore.transitions, oldStore.transitions)
			assert.Equal(t, newStore.payments, oldStore.payments)
			assert.Equal(t, newStore.fulfilments, oldStore.fulfilments)
			assert.Equal(t, newStore.refunds, oldStore.refunds)
			assert.Equal(t, newFF.calls.Load(), oldFF.calls.Load(), "the same calls of the provider")
			effects := len(oldStore.transitions) + len(oldStore.payments) + len(oldStore.fulfilments) + len(oldStore.refunds)
			assert.Positive(t, effects, "the positional call did its work")
		})
	}
}

// deref is what v points to.
func deref(v any) any {
	switch p := v.(type) {
	case *models.Placement:
		return *p
	case *models.Progress:
		return *p
	}
	return v
}
