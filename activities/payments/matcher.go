// Package payments matches observed incoming payments to orders by memo and
// hands them to the orders' workflows. Every payment source, the sandbox
// and the live chain watchers alike, delivers through the one Matcher, so
// test mode exercises the production path.
//
// It may import models. The store and the workflow signaller are small
// interfaces declared here and provided by cmd.
package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/memocart/memocart/models"
)

// Source observes incoming payments and delivers each to handle, in order,
// until ctx ends. A payment whose handling fails is delivered again later:
// handlers are idempotent.
type Source interface {
	Watch(ctx context.Context, handle models.PaymentHandler) error
}

// Store is the persistence the matcher needs.
type Store interface {
	SavePayment(ctx context.Context, p models.Payment) (bool, error)
	OrderIDByNumber(ctx context.Context, mode models.Mode, number string) (string, error)
	AttachPayment(ctx context.Context, paymentID, orderID string) error
	MarkPaymentLate(ctx context.Context, paymentID string, at time.Time) error
	PaymentsAwaitingSignal(ctx context.Context, createdBefore time.Time, limit int) ([]models.Payment, error)
}

// Signaler hands a matched payment to the order's workflow. It returns
// models.ErrOrderClosed when the workflow has already finished.
type Signaler interface {
	PaymentMatched(ctx context.Context, orderID string, p models.Payment) error
}

// Matcher matches payments to orders by memo.
type Matcher struct {
	store  Store
	signal Signaler
	log    *slog.Logger
	now    func() time.Time
}

// NewMatcher returns a matcher.
func NewMatcher(store Store, signal Signaler, log *slog.Logger) *Matcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Matcher{store: store, signal: signal, log: log, now: time.Now}
}

// Handle stores the payment (once, by id), finds the order its memo names
// and signals that order's workflow, which counts each payment id once. It
// is safe to call again for the same payment at any point: after a crash
// the source re-delivers and the steps already done are no-ops.
func (m *Matcher) Handle(ctx context.Context, p models.Payment) (models.PaymentOutcome, error) {
	if p.ID == "" || !p.Mode.Valid() {
		return "", fmt.Errorf("payment without id or mode")
	}
	if _, err := m.store.SavePayment(ctx, p); err != nil {
		return "", err
	}
	number, ok := models.NormalizeOrderNumber(p.Memo)
	if !ok {
		m.log.InfoContext(ctx, "payment kept as unmatched: memo is not an order number", slog.String("payment_id", p.ID))
		return models.PaymentOutcomeUnmatched, nil
	}
	orderID, err := m.store.OrderIDByNumber(ctx, p.Mode, number)
	if errors.Is(err, models.ErrOrderNotFound) {
		m.log.InfoContext(ctx, "payment kept as unmatched: no such order", slog.String("payment_id", p.ID))
		return models.PaymentOutcomeUnmatched, nil
	}
	if err != nil {
		return "", err
	}
	if err := m.store.AttachPayment(ctx, p.ID, orderID); err != nil {
		return "", err
	}
	p.OrderID = orderID
	return m.deliver(ctx, p)
}

func (m *Matcher) deliver(ctx context.Context, p models.Payment) (models.PaymentOutcome, error) {
	err := m.signal.PaymentMatched(ctx, p.OrderID, p)
	if errors.Is(err, models.ErrOrderClosed) {
		m.log.WarnContext(ctx, "payment arrived after its order closed; refund due",
			slog.String("payment_id", p.ID), slog.String("order_id", p.OrderID))
		if err := m.store.MarkPaymentLate(ctx, p.ID, m.now()); err != nil {
			return "", err
		}
		return models.PaymentOutcomeLate, nil
	}
	if err != nil {
		return "", fmt.Errorf("signalling order workflow: %w", err)
	}
	// Not marked as delivered here: a signal accepted by Temporal can still
	// miss a workflow that is completing at that instant. The workflow's
	// own RecordPayment activity is the acknowledgement; until it runs,
	// Redeliver keeps trying, and finds the order closed if it was.
	return models.PaymentOutcomeMatched, nil
}

// Redeliver signals matched payments whose workflow has not acknowledged
// them (recorded them through its RecordPayment activity) within grace:
// the process died between matching and signalling, Temporal was down, or
// the signal reached a workflow in the instant it completed. The workflow
// counts each payment id once, so delivering twice is harmless; a closed
// workflow turns the payment late, due back.
func (m *Matcher) Redeliver(ctx context.Context, grace time.Duration) (int, error) {
	ps, err := m.store.PaymentsAwaitingSignal(ctx, m.now().Add(-grace), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		if _, err := m.deliver(ctx, p); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
