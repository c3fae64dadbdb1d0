package checkout

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// startMarkTimeout bounds one batch's write.
const startMarkTimeout = 10 * time.Second

// maxStartMarkBatch bounds the ids in one UPDATE.
const maxStartMarkBatch = 500

// startMarks records, off the request's path and in batches, that orders'
// workflows exist. The mark only tells the reconciler which orders need no
// start: a mark lost with the process (or to a failed write) leaves an
// order the reconciler starts again after its grace, which Temporal
// answers as already started, and then marks. A POST retried before its
// mark is written calls the start again, with the same answer.
type startMarks struct {
	delay time.Duration
	write func(ctx context.Context, orderIDs []string, at time.Time) error
	now   func() time.Time
	log   *slog.Logger

	mu      sync.Mutex
	pending []string
	flushes sync.WaitGroup
}

// add queues a mark; the first of a batch arms the flush.
func (m *startMarks) add(orderID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = append(m.pending, orderID)
	if len(m.pending) == 1 {
		m.flushes.Add(1)
		time.AfterFunc(m.delay, func() {
			defer m.flushes.Done()
			m.flush()
		})
	}
}

// flush writes the queued marks.
func (m *startMarks) flush() {
	m.mu.Lock()
	ids := m.pending
	m.pending = nil
	m.mu.Unlock()
	for len(ids) > 0 {
		n := min(len(ids), maxStartMarkBatch)
		ctx, cancel := context.WithTimeout(context.Background(), startMarkTimeout)
		err := m.write(ctx, ids[:n], m.now())
		cancel()
		if err != nil {
			m.log.Warn("marking order workflows started; the reconciler will", slog.Int("orders", n), slog.Any("error", err))
		}
		ids = ids[n:]
	}
}

// wait returns once every armed flush has written.
func (m *startMarks) wait() { m.flushes.Wait() }
