package checkout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
	"github.com/memocart/memocart/workflows"
)

// Refunds recorded by hand (memocart payments mark-refunded): money an
// operator sent back outside the service for orders and payments from
// before refunds were paid out (refunds.go), which no refund covers. The
// store refuses them for money a refund covers (models.RefundCoversIt).
// Delete this file, with the order-side wait (workflows/refund_legacy.go)
// and the command, once no money is owed by hand: `memocart reconcile`
// shows "owed by hand" 0 in every ledger, and no Order run from before
// refund-payouts is open (the query in workflows/refund_legacy.go).

// HandRefundStore is the store's part in recording refunds by hand.
type HandRefundStore interface {
	OrderByNumber(ctx context.Context, number string) (models.Order, error)
	// MarkOrderRefunded records the refund of an order's money, as
	// models.DecideOrderRefund decides.
	MarkOrderRefunded(ctx context.Context, orderNumber, txHash string, at time.Time) error
	// MarkPaymentRefunded records the refund of a payment due back on
	// its own (models.PaymentState.DueBack).
	MarkPaymentRefunded(ctx context.Context, paymentID, txHash string, at time.Time) error
}

// OrderRefundWorkflows hands a refund to the order's workflow waiting for
// it.
type OrderRefundWorkflows interface {
	// RecordRefund has the order's workflow record the refund and waits
	// until it is written. It returns models.ErrOrderClosed when the
	// workflow has closed or does not exist.
	RecordRefund(ctx context.Context, orderID string, r workflows.RefundRequest) (workflows.RefundResult, error)
}

// HandRefunds carries out the use cases of refunds recorded by hand.
type HandRefunds struct {
	store     HandRefundStore
	workflows OrderRefundWorkflows
	now       Clock
}

// NewHandRefunds returns the use cases of refunds recorded by hand: every
// part is required.
func NewHandRefunds(store HandRefundStore, workflows OrderRefundWorkflows, now Clock) (*HandRefunds, error) {
	if err := missing("HandRefunds", map[string]bool{"store": store == nil, "workflows": workflows == nil}); err != nil {
		return nil, err
	}
	return &HandRefunds{store: store, workflows: workflows, now: orNow(now)}, nil
}

// ErrRefundNotRecorded wraps the failure of an order's workflow to record
// a refund routed through it: nothing was written, and recording it again
// is safe.
var ErrRefundNotRecorded = errors.New("its workflow did not record the refund, nothing was written")

// OrderRefundRequest is an operator's record of money sent back for an
// order.
type OrderRefundRequest struct {
	// Number is the order's (normalised) number.
	Number string
	// TxHash is the chain transaction that sent the money back.
	TxHash string
	// RecordedBy names who records it, for the workflow's log.
	RecordedBy string
}

// OrderRefund is a recorded refund of an order's money.
type OrderRefund struct {
	Number string
	TxHash string
	// ThroughWorkflow says the order's workflow recorded it (and now
	// closes); Amount and Asset are then what it recorded.
	ThroughWorkflow bool
	Amount          decimal.Decimal
	Asset           string
}

// RecordOrderRefund records that an operator sent back an order's money
// (what a cancelled or failed order received, or an overpayment's
// excess). models.RouteOrderRefund decides where: through the order's
// workflow while it waits for the refund, else in the store alone. A
// workflow that closed since (its wait ran out) leaves the refund to the
// store; one that refuses or cannot be reached leaves nothing written.
func (s *HandRefunds) RecordOrderRefund(ctx context.Context, r OrderRefundRequest) (OrderRefund, error) {
	o, err := s.store.OrderByNumber(ctx, r.Number)
	if err != nil {
		return OrderRefund{}, err
	}
	if models.RouteOrderRefund(o.Status, o.PaymentStatus, o.AmountReceived) == models.RefundThroughWorkflow {
		_, err := s.workflows.RecordRefund(ctx, o.ID,
			workflows.RefundRequest{TxHash: r.TxHash, Amount: o.AmountReceived, RecordedBy: r.RecordedBy})
		switch {
		case err == nil:
			return OrderRefund{Number: r.Number, TxHash: r.TxHash, ThroughWorkflow: true, Amount: o.AmountReceived, Asset: o.PaymentAsset}, nil
		case !errors.Is(err, models.ErrOrderClosed):
			return OrderRefund{}, fmt.Errorf("%w (%w)", ErrRefundNotRecorded, err)
		}
	}
	if err := s.store.MarkOrderRefunded(ctx, r.Number, r.TxHash, s.now()); err != nil {
		return OrderRefund{}, err
	}
	return OrderRefund{Number: r.Number, TxHash: r.TxHash}, nil
}

// RecordPaymentRefund records that an operator sent back, in the chain
// transaction txHash, a payment due back on its own (late, or in another
// asset than its order's); anything else is refused by the store.
func (s *HandRefunds) RecordPaymentRefund(ctx context.Context, paymentID, txHash string) error {
	return s.store.MarkPaymentRefunded(ctx, paymentID, txHash, s.now())
}
