package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/memocart/memocart/models"
)

// fakeStore is an in-memory activities.Store that keeps every write in the
// order it happened.
type fakeStore struct {
	mu    sync.Mutex
	order models.Order
	// failTransitions makes that many RecordTransition calls fail with a
	// transient error before the writes start succeeding.
	failTransitions int
	// onTransition, if set, runs after a transition is stored (outside the
	// lock), so tests can react to the workflow's progress.
	onTransition func(models.Transition)

	transitions     []models.Transition
	payments        []models.Payment
	writes          []string // "transition:<status>/<payment status>" and "payment:<id>", in order
	transitionCalls int
	fulfilments     []models.Fulfilment
}

func newFakeStore(o models.Order) *fakeStore { return &fakeStore{order: o} }

func (s *fakeStore) Order(_ context.Context, orderID string) (models.Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if orderID != s.order.ID {
		return models.Order{}, fmt.Errorf("fake store: order %s: %w", orderID, models.ErrOrderNotFound)
	}
	return s.order, nil
}

func (s *fakeStore) RecordTransition(_ context.Context, orderID string, t models.Transition, _ time.Time) error {
	s.mu.Lock()
	s.transitionCalls++
	if s.failTransitions > 0 {
		s.failTransitions--
		s.mu.Unlock()
		return errors.New("fake store: connection reset by peer")
	}
	if orderID != s.order.ID {
		s.mu.Unlock()
		return models.ErrOrderNotFound
	}
	s.transitions = append(s.transitions, t)
	s.writes = append(s.writes, fmt.Sprintf("transition:%s/%s", t.Status, t.PaymentStatus))
	// As the database keeps them: WatchOrder compares with them.
	s.order.Status = t.Status
	if t.Shipment != nil {
		s.order.Shipment = *t.Shipment
	}
	hook := s.onTransition
	s.mu.Unlock()
	if hook != nil {
		hook(t)
	}
	return nil
}

func (s *fakeStore) RecordPayment(_ context.Context, orderID string, p models.Payment, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if orderID != s.order.ID {
		return models.ErrOrderNotFound
	}
	for _, q := range s.payments {
		if q.ID == p.ID {
			return nil
		}
	}
	s.payments = append(s.payments, p)
	s.writes = append(s.writes, "payment:"+p.ID)
	return nil
}

// MarkOrderRefunded and MarkRecordedPaymentLate make fakeStore the activities'
// Refunds too; they record "refund:<tx>" and "late:<id>".
func (s *fakeStore) MarkOrderRefunded(_ context.Context, orderNumber, txHash string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if orderNumber != s.order.Number {
		return models.ErrOrderNotFound
	}
	s.writes = append(s.writes, "refund:"+txHash)
	return nil
}

func (s *fakeStore) MarkRecordedPaymentLate(_ context.Context, paymentID string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, "late:"+paymentID)
	return nil
}

func (s *fakeStore) RecordFulfilment(_ context.Context, orderID string, f models.Fulfilment, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if orderID != s.order.ID {
		return models.ErrOrderNotFound
	}
	s.fulfilments = append(s.fulfilments, f)
	return nil
}

func (s *fakeStore) snapshot() (transitions []models.Transition, payments []models.Payment, writes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]models.Transition(nil), s.transitions...),
		append([]models.Payment(nil), s.payments...),
		append([]string(nil), s.writes...)
}

// fakeFulfiller records its calls and plays a script: each Check returns
// the next snapshot, the last one again once the script runs out. The
// hooks run inside the activities, so tests can signal the workflow while
// it is fulfilling.
type fakeFulfiller struct {
	mu       sync.Mutex
	placeErr error
	schedule models.PollSchedule
	script   []models.Fulfilment
	onPlace  func(attempt int)
	onCheck  func(n int) // n counts checks from 1
	// checkErrs makes that many checks fail with a transient error
	// before they answer from the script.
	checkErrs int
	checks    int
	calls     []string
}

func (f *fakeFulfiller) Place(_ context.Context, o models.Order, attempt int) (models.Placement, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("place:%d", attempt))
	hook, err := f.onPlace, f.placeErr
	f.mu.Unlock()
	if hook != nil {
		hook(attempt)
	}
	if err != nil {
		return models.Placement{}, err
	}
	return models.Placement{Ref: fmt.Sprintf("REF-%s-%d", o.ID, attempt), CheckAfter: f.schedule.First}, nil
}

func (f *fakeFulfiller) Check(_ context.Context, _ models.Order, ref string) (models.Fulfilment, error) {
	f.mu.Lock()
	if f.checkErrs > 0 {
		f.checkErrs--
		f.calls = append(f.calls, "check-failed:"+ref)
		f.mu.Unlock()
		return models.Fulfilment{}, errors.New("fake provider: 503 Service Unavailable")
	}
	f.checks++
	n := f.checks
	f.calls = append(f.calls, "check:"+ref)
	hook := f.onCheck
	var snap models.Fulfilment
	if len(f.script) > 0 {
		snap = f.script[min(n, len(f.script))-1]
	}
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	snap.Ref = ref
	return snap, nil
}

// Move makes a test helper's move as the sandbox does: a failure now, or
// the script's first snapshot past the order's recorded status, which the
// checks after it go on from.
func (f *fakeFulfiller) Move(_ context.Context, o models.Order, ref string, m models.TestMove) (models.Fulfilment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.Fail != "" {
		f.calls = append(f.calls, "move:fail:"+m.Fail)
		return models.Fulfilment{Ref: ref, Stage: models.FulfilmentFailed, FailureCode: m.Fail}, nil
	}
	f.calls = append(f.calls, "move:advance")
	for i, snap := range f.script {
		if !models.StepReached(o.Status, snap.Progress().Status) {
			f.checks = max(f.checks, i+1)
			snap.Ref = ref
			return snap, nil
		}
	}
	return models.Fulfilment{}, fmt.Errorf("fake fulfiller: nothing past %s to advance to", o.Status)
}

func (f *fakeFulfiller) Schedule() models.PollSchedule { return f.schedule }

func (f *fakeFulfiller) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// orderRefunds makes fakeStore the order workflow's activities.RefundStore:
// creating the order's refunds records "refunds" among the writes and
// answers one refund awaiting its destination; the order's run touches
// nothing else of it.
type orderRefunds struct{ *fakeStore }

func (s orderRefunds) CreateOwedRefunds(_ context.Context, orderID string, now time.Time) ([]models.Refund, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if orderID != s.order.ID {
		return nil, models.ErrOrderNotFound
	}
	s.writes = append(s.writes, "refunds")
	return []models.Refund{{ID: models.RefundID("order:" + orderID + ":1"), OrderID: orderID, Status: models.RefundAwaitingDestination, CreatedAt: now}}, nil
}

func (s orderRefunds) MarkRefundWorkflowStarted(context.Context, string, time.Time) error { return nil }

func (orderRefunds) Refund(context.Context, string) (models.Refund, error) {
	return models.Refund{}, errors.New("fake store: the order's run reads no refund")
}

func (orderRefunds) UpdateRefund(context.Context, string, time.Time, func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	return models.Refund{}, errors.New("fake store: the order's run moves no refund")
}

func (orderRefunds) UpdateRefundByClaim(context.Context, string, string, time.Time, func(models.Refund) (models.Refund, error)) (models.Refund, error) {
	return models.Refund{}, errors.New("fake store: the order's run moves no refund")
}

func (orderRefunds) ApproveRefundWithinDailyMax(context.Context, string, time.Time, time.Time, decimal.Decimal) (models.Refund, bool, error) {
	return models.Refund{}, false, errors.New("fake store: the order's run approves no refund")
}

func (orderRefunds) PaymentSenders(context.Context, []string) (map[string]string, error) {
	return nil, errors.New("fake store: the order's run pays no refund")
}
