package checkout

import (
	"context"
	"crypto/rand"
	"errors"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// TestPayments is the sandbox chain the test helpers pay through.
type TestPayments interface {
	Send(ctx context.Context, p models.Payment) (models.PaymentOutcome, error)
}

// TestWorkflows moves test orders through their workflows.
type TestWorkflows interface {
	// ExpireOrder has the order's workflow end its payment wait now, as
	// the deadline would, and returns once the outcome is written. It
	// returns an error of code models.CodeInvalidOrderState when the
	// workflow refuses (the order no longer awaits payment), and
	// models.ErrOrderClosed when the workflow has finished.
	ExpireOrder(ctx context.Context, orderID string) error
	// MoveTestOrder has the order's workflow make a test move at the
	// sandbox provider now and returns once its outcome is written. It
	// returns an error of code models.CodeInvalidOrderState when the
	// workflow refuses the move, and models.ErrOrderClosed when the
	// workflow has finished.
	MoveTestOrder(ctx context.Context, orderID string, m models.TestMove) error
}

// TestHelpers carries out test mode's helpers: what a payer, or time,
// would do to an order, done through the same paths as production (a
// payment goes through the sandbox chain and the payment matcher, a
// deadline through the order's workflow, never into the database behind
// them).
type TestHelpers struct {
	orders    OrderReader
	payments  TestPayments
	workflows TestWorkflows
	now       Clock
}

// NewTestHelpers returns the test helpers: every part is required.
func NewTestHelpers(orders OrderReader, payments TestPayments, workflows TestWorkflows, now Clock) (*TestHelpers, error) {
	if err := missing("TestHelpers", map[string]bool{"orders": orders == nil, "payments": payments == nil, "workflows": workflows == nil}); err != nil {
		return nil, err
	}
	return &TestHelpers{orders: orders, payments: payments, workflows: workflows, now: orNow(now)}, nil
}

// TestOrder names a test key's order.
type TestOrder struct {
	AccountID string
	Mode      models.Mode
	Ref       string // the order's id or normalised number
}

// Expire makes a test-mode order's payment deadline pass now, through its
// workflow, and returns the order as it then stands: cancelled (payment
// expired, or refund due for what part of it arrived), as at the
// deadline. An order no longer awaiting payment is refused
// (models.DecideExpire): on the order as recorded first, then by the
// workflow, which knows of payments not recorded yet.
func (s *TestHelpers) Expire(ctx context.Context, r TestOrder) (models.Order, error) {
	if r.Mode != models.ModeTest {
		return models.Order{}, models.NewError(models.CodeTestModeOnly)
	}
	o, err := s.orders.OrderForAccount(ctx, r.AccountID, r.Mode, r.Ref)
	if err != nil {
		return models.Order{}, err
	}
	if err := models.DecideExpire(o.Status, o.AmountDueReceived()); err != nil {
		return models.Order{}, err
	}
	// A workflow closed between the read and the update: the order is
	// answered as it stands, as after an expire.
	if err := s.workflows.ExpireOrder(ctx, o.ID); err != nil && !errors.Is(err, models.ErrOrderClosed) {
		return models.Order{}, err
	}
	return s.orders.OrderForAccount(ctx, r.AccountID, r.Mode, o.ID)
}

// Move makes a test move of a test-mode order at the sandbox provider
// now, through its workflow: its next fulfilment step (Advance), or its
// sourcing failing for a code of models.TestFailureCodes (Fail). It
// returns the order as it then stands. A move the order's status does
// not allow is refused (models.DecideTestMove): on the order as recorded
// first, then by the workflow.
func (s *TestHelpers) Move(ctx context.Context, r TestOrder, m models.TestMove) (models.Order, error) {
	if r.Mode != models.ModeTest {
		return models.Order{}, models.NewError(models.CodeTestModeOnly)
	}
	o, err := s.orders.OrderForAccount(ctx, r.AccountID, r.Mode, r.Ref)
	if err != nil {
		return models.Order{}, err
	}
	if err := models.DecideTestMove(o.Status, m); err != nil {
		return models.Order{}, err
	}
	err = s.workflows.MoveTestOrder(ctx, o.ID, m)
	if err != nil && !errors.Is(err, models.ErrOrderClosed) {
		return models.Order{}, err
	}
	now, rerr := s.orders.OrderForAccount(ctx, r.AccountID, r.Mode, o.ID)
	if rerr != nil || err == nil {
		return now, rerr
	}
	// The workflow closed between the read and the update: the move was
	// not made, and the order's status now says why.
	if derr := models.DecideTestMove(now.Status, m); derr != nil {
		return models.Order{}, derr
	}
	return models.Order{}, models.Errorf(models.CodeInvalidOrderState, "The order's workflow has closed: the order can no longer move")
}

// TestPayment is a test key's payment of one of its orders.
type TestPayment struct {
	AccountID string
	Mode      models.Mode
	Ref       string // the order's id or normalised number
	// Amount is what is sent; nil sends the order's amount due.
	Amount *decimal.Decimal
	// Asset is sent instead of the order's, when not empty (normalised:
	// CODE or CODE:ISSUER).
	Asset string
	// IdempotencyKey is the request's, if any (testPaymentID).
	IdempotencyKey string
}

// SentPayment is a test payment as sent, to its order, and what the
// matcher made of it.
type SentPayment struct {
	Payment models.Payment
	Order   models.Order
	Outcome models.PaymentOutcome
}

// Pay sends a payment of a test-mode order through the sandbox chain,
// with the order's number as its memo. A payment in another asset than
// the order's matched by its memo is answered wrong_asset: the order's
// workflow records it uncredited.
func (s *TestHelpers) Pay(ctx context.Context, r TestPayment) (SentPayment, error) {
	if r.Mode != models.ModeTest {
		return SentPayment{}, models.NewError(models.CodeTestModeOnly)
	}
	o, err := s.orders.OrderForAccount(ctx, r.AccountID, r.Mode, r.Ref)
	if err != nil {
		return SentPayment{}, err
	}
	id, err := testPaymentID(r)
	if err != nil {
		return SentPayment{}, err
	}
	p := models.Payment{
		ID: id, Mode: models.ModeTest, Asset: o.PaymentAsset, Amount: o.PaymentAmount, Memo: o.Number,
		Sender: "sandbox-payer", ReceivedAt: s.now().UTC(),
	}
	if r.Amount != nil {
		p.Amount = *r.Amount
	}
	if r.Asset != "" {
		p.Asset = r.Asset
	}
	outcome, err := s.payments.Send(ctx, p)
	if err != nil {
		return SentPayment{}, err
	}
	if outcome == models.PaymentOutcomeMatched && !models.CreditsOrder(p.Asset, o.PaymentAsset) {
		outcome = models.PaymentOutcomeWrongAsset
	}
	return SentPayment{Payment: p, Order: o, Outcome: outcome}, nil
}

// testPaymentID names the sandbox payment a request sends. Under an
// Idempotency-Key it is a function of the key, its account and mode: the
// payment may be stored and matched before the answer fails (a 503 when
// Temporal is down and the signal waits for the reconciler, a process
// killed before it answers), and the client's retry of the same request
// must then be that payment again, which the matcher stores once and the
// workflow counts once, not a second payment. Without a key each request
// is a new payment, as a payer who sends twice.
func testPaymentID(r TestPayment) (string, error) {
	if r.IdempotencyKey == "" {
		return models.NewID("sandbox", rand.Reader)
	}
	return models.IDFrom("sandbox", "test-payment\x00"+r.AccountID+"\x00"+string(r.Mode)+"\x00"+r.IdempotencyKey), nil
}
