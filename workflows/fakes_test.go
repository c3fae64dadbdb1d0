package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

func (s *fakeStore) RecordTransition(_ context.Context, orderID string, t models.Transition) error {
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
	hook := s.onTransition
	s.mu.Unlock()
	if hook != nil {
		hook(t)
	}
	return nil
}

func (s *fakeStore) RecordPayment(_ context.Context, orderID string, p models.Payment) error {
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

func (s *fakeStore) snapshot() (transitions []models.Transition, payments []models.Payment, writes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]models.Transition(nil), s.transitions...),
		append([]models.Payment(nil), s.payments...),
		append([]string(nil), s.writes...)
}

// fakeFulfiller records its calls and answers with fixed values. The
// hooks run inside the activity, so tests can signal the workflow while it
// is fulfilling.
type fakeFulfiller struct {
	mu        sync.Mutex
	sourceErr error
	shipment  models.Shipment
	onSource  func()
	onShip    func()
	calls     []string
}

func (f *fakeFulfiller) Source(_ context.Context, o models.Order) (string, error) {
	hook := f.record("source")
	if hook != nil {
		hook()
	}
	if f.sourceErr != nil {
		return "", f.sourceErr
	}
	return "REF-" + o.ID, nil
}

func (f *fakeFulfiller) Ship(_ context.Context, _ models.Order) (models.Shipment, error) {
	if hook := f.record("ship"); hook != nil {
		hook()
	}
	return f.shipment, nil
}

func (f *fakeFulfiller) Deliver(_ context.Context, _ models.Order) error {
	f.record("deliver")
	return nil
}

func (f *fakeFulfiller) record(call string) (hook func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	switch call {
	case "source":
		return f.onSource
	case "ship":
		return f.onShip
	}
	return nil
}

func (f *fakeFulfiller) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}
