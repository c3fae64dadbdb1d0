package sqlstore

import "github.com/memocart/memocart/models"

// SetStatusObserver sets f to be told, after the write commits, each
// order status a write of this store made an order enter: created by
// CreateOrder, the rest by RecordTransition. A write repeated by a retry
// enters nothing (the status never moves backwards), so each transition
// is told once, by the process whose write made it. Call it before the
// store is used.
func (s *Store) SetStatusObserver(f func(models.OrderStatus)) { s.entered = f }

func (s *Store) observeEntered(st models.OrderStatus) {
	if s.entered != nil {
		s.entered(st)
	}
}
