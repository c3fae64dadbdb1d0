package checkout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/memocart/memocart/models"
)

// The payment matcher: the use case every payment source, the sandbox and
// the live chain watchers alike, delivers through, in the API and in the
// worker, so test mode exercises the production path. It matches observed
// incoming payments to orders by memo and hands them to the orders'
// workflows.

// PaymentStore is the store's part in matching payments.
type PaymentStore interface {
	OrderIDByNumber(ctx context.Context, mode models.Mode, number string) (string, error)
	// SaveMatch stores the payment if new and records the verdict:
	// attached to orderID, or unmatched when orderID is empty.
	SaveMatch(ctx context.Context, p models.Payment, orderID string, now time.Time) error
	// MarkPaymentLate marks a payment that found its order closed late
	// (refund due); false when the order's workflow had already recorded
	// it, and nothing changed.
	MarkPaymentLate(ctx context.Context, paymentID string, at time.Time) (bool, error)
	// ClaimPaymentRedeliveries claims up to limit matched payments created
	// before createdBefore that their workflow has not recorded and whose
	// next redelivery is due at now; each claim raises the payment's count
	// of redeliveries to n and puts its next one off by wait(n).
	ClaimPaymentRedeliveries(ctx context.Context, createdBefore, now time.Time, wait func(n int) time.Duration, limit int) ([]models.Payment, error)
	// ReleasePaymentRedelivery undoes a claim whose signal was not
	// delivered: the payment is due again at once.
	ReleasePaymentRedelivery(ctx context.Context, paymentID string) error
	PaymentsToMatch(ctx context.Context, createdBefore time.Time, limit int) ([]models.Payment, error)
	AttachUnmatched(ctx context.Context, paymentID, orderNumber string) (models.Payment, error)
}

// Signaler hands a matched payment to the order's workflow. It returns
// models.ErrOrderClosed when the workflow has already finished.
type Signaler interface {
	PaymentMatched(ctx context.Context, orderID string, p models.Payment) error
}

// Matcher matches payments to orders by memo.
type Matcher struct {
	store  PaymentStore
	signal Signaler
	log    *slog.Logger
	now    func() time.Time
	// outcome is told every decision (OnOutcome; nil: nobody).
	outcome func(models.PaymentOutcome)
}

// OnOutcome sets f to be told the outcome of every delivery the matcher
// completes: once per payment as a rule, and again each time a payment is
// delivered again (a source re-delivering after a crash, Redeliver
// re-signalling a workflow that had not acknowledged it, which may then
// find it late). A delivery that fails is not told. Call it before the
// matcher is used.
func (m *Matcher) OnOutcome(f func(models.PaymentOutcome)) { m.outcome = f }

func (m *Matcher) told(o models.PaymentOutcome, err error) (models.PaymentOutcome, error) {
	if err == nil && m.outcome != nil {
		m.outcome(o)
	}
	return o, err
}

// NewMatcher returns the payment matcher: store and signal are required.
func NewMatcher(store PaymentStore, signal Signaler, log *slog.Logger) (*Matcher, error) {
	if err := missing("Matcher", map[string]bool{"store": store == nil, "signal": signal == nil}); err != nil {
		return nil, err
	}
	return &Matcher{store: store, signal: signal, log: orDiscard(log), now: time.Now}, nil
}

// Handle finds the order the payment's memo names, stores the payment
// (once, by id) with that verdict, and signals the order's workflow, which
// counts each payment id once. It is safe to call again for the same
// payment at any point: after a crash the source re-delivers, the store
// write is idempotent, and nothing is signalled before it commits.
func (m *Matcher) Handle(ctx context.Context, p models.Payment) (models.PaymentOutcome, error) {
	if p.ID == "" || !p.Mode.Valid() {
		return "", fmt.Errorf("payment without id or mode")
	}
	orderID := ""
	if number, ok := orderNumberFromMemo(p.MemoType, p.Memo); ok {
		id, err := m.store.OrderIDByNumber(ctx, p.Mode, number)
		switch {
		case err == nil:
			orderID = id
		case !errors.Is(err, models.ErrOrderNotFound):
			return "", err
		}
	}
	if err := m.store.SaveMatch(ctx, p, orderID, m.now()); err != nil {
		return "", err
	}
	if orderID == "" {
		m.log.InfoContext(ctx, "payment kept as unmatched: its memo names no order",
			slog.String("payment_id", p.ID), slog.String("memo_type", p.MemoType))
		return m.told(models.PaymentOutcomeUnmatched, nil)
	}
	p.OrderID = orderID
	return m.told(m.deliver(ctx, p))
}

// orderNumberFromMemo reads an order number from a memo: text memos as a
// person typed them, numeric id memos as digits; hash and return memos, or
// none, never name an order. The sandbox sends text memos without a type.
func orderNumberFromMemo(memoType, memo string) (string, bool) {
	if memoType == "" {
		memoType = "text"
	}
	return models.OrderNumberFromMemo(memoType, memo)
}

// Attach hands an unmatched payment to the order an operator names (the
// payer got the memo wrong), through the same delivery as a match.
func (m *Matcher) Attach(ctx context.Context, paymentID, orderNumber string) (models.PaymentOutcome, error) {
	p, err := m.store.AttachUnmatched(ctx, paymentID, orderNumber)
	if err != nil {
		return "", err
	}
	m.log.InfoContext(ctx, "operator attached payment to order", slog.String("payment_id", p.ID), slog.String("order_id", p.OrderID))
	return m.told(m.deliver(ctx, p))
}

// ErrSignal wraps a failure to signal the order's workflow of a payment
// already recorded as matched: the reconciler re-drives it (Redeliver).
var ErrSignal = errors.New("signalling order workflow")

func (m *Matcher) deliver(ctx context.Context, p models.Payment) (models.PaymentOutcome, error) {
	err := m.signal.PaymentMatched(ctx, p.OrderID, p)
	if errors.Is(err, models.ErrOrderClosed) {
		late, err := m.store.MarkPaymentLate(ctx, p.ID, m.now())
		if err != nil {
			return "", err
		}
		if !late {
			// Delivered again after the workflow had counted it (a
			// source replaying, a retried test payment): not late.
			return models.PaymentOutcomeMatched, nil
		}
		m.log.WarnContext(ctx, "payment arrived after its order closed; refund due",
			slog.String("payment_id", p.ID), slog.String("order_id", p.OrderID))
		return models.PaymentOutcomeLate, nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSignal, err)
	}
	// Not marked as delivered here: a signal accepted by Temporal can still
	// miss a workflow that is completing at that instant. The workflow's
	// own RecordPayment activity is the acknowledgement; until it runs,
	// Redeliver keeps trying, and finds the order closed if it was.
	return models.PaymentOutcomeMatched, nil
}

// Redeliver re-drives the matcher's two hand-offs a crash or an outage can
// interrupt, for payments older than grace (younger ones may be in flight):
//   - payments a source stored but never matched are matched now;
//   - matched payments whose workflow has not acknowledged them (recorded
//     them through its RecordPayment activity) are signalled again: the
//     process died before signalling, Temporal was down, or the signal
//     reached a workflow in the instant it completed.
//
// The workflow counts each payment id once, so delivering twice is
// harmless; a closed workflow turns the payment late, due back. Each
// payment is signalled again by one replica at a time, and less often the
// longer its workflow takes to record it (redeliveryWait): a workflow that
// is behind (a backlog of workflow tasks) is not sent a signal per replica
// per round, each of which would add to its history and its backlog.
func (m *Matcher) Redeliver(ctx context.Context, grace time.Duration) (int, error) {
	cutoff := m.now().Add(-grace)
	toMatch, err := m.store.PaymentsToMatch(ctx, cutoff, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range toMatch {
		if _, err := m.Handle(ctx, p); err != nil {
			return n, err
		}
		n++
	}
	ps, err := m.store.ClaimPaymentRedeliveries(ctx, cutoff, m.now(), redeliveryWait(grace), 100)
	if err != nil {
		return n, err
	}
	for i, p := range ps {
		if _, err := m.told(m.deliver(ctx, p)); err != nil {
			// Not delivered (Temporal or the database unavailable): this
			// payment and the rest of the batch are due again next round,
			// so an outage does not stretch the waits meant for a
			// workflow that is behind.
			for _, q := range ps[i:] {
				if rerr := m.store.ReleasePaymentRedelivery(ctx, q.ID); rerr != nil {
					m.log.WarnContext(ctx, "releasing a payment's redelivery; it waits for its next turn", slog.String("payment_id", q.ID), slog.Any("error", rerr))
				}
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// MaxRedeliveryWait bounds the wait between two redeliveries of a payment.
const MaxRedeliveryWait = 2 * time.Minute

// redeliveryWait is the wait after a payment's n-th redelivery: grace,
// doubling with each one, at most MaxRedeliveryWait.
func redeliveryWait(grace time.Duration) func(n int) time.Duration {
	return func(n int) time.Duration {
		w := grace
		for i := 1; i < n && w < MaxRedeliveryWait; i++ {
			w *= 2
		}
		return min(w, MaxRedeliveryWait)
	}
}
