package sandbox

import (
	"context"
	"errors"
	"sync"

	"github.com/memocart/memocart/models"
)

// PaymentSource is the sandbox chain for test mode: the test-helper
// endpoint "sends" a payment and it is delivered, synchronously, to the
// handler a watcher registered, exactly as a chain watcher delivers an
// observed payment.
type PaymentSource struct {
	mu      sync.Mutex
	handler models.PaymentHandler
}

// NewPaymentSource returns a sandbox payment source with no watcher yet.
func NewPaymentSource() *PaymentSource { return &PaymentSource{} }

// ErrNoWatcher means Send was called while nothing watches the source.
var ErrNoWatcher = errors.New("sandbox payment source has no watcher")

// Watch registers handle and blocks until ctx ends.
func (s *PaymentSource) Watch(ctx context.Context, handle models.PaymentHandler) error {
	s.mu.Lock()
	s.handler = handle
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.handler = nil
	s.mu.Unlock()
	return ctx.Err()
}

// Send delivers a payment to the watcher and returns what it did with it.
func (s *PaymentSource) Send(ctx context.Context, p models.Payment) (models.PaymentOutcome, error) {
	s.mu.Lock()
	h := s.handler
	s.mu.Unlock()
	if h == nil {
		return "", ErrNoWatcher
	}
	p.Mode = models.ModeTest
	return h(ctx, p)
}
