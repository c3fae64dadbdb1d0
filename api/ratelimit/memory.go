package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// sweepEvery is how often Memory drops keys whose bucket has refilled. A key
// with a TAT in the past behaves exactly like an absent key, so dropping it
// changes no decision; it only bounds the map to keys seen in roughly the
// last two minutes.
const sweepEvery = time.Minute

// Memory is a Limiter whose state lives in this process. It suits a single
// replica and tests; replicas behind a load balancer each get their own
// budget, so use Redis there.
type Memory struct {
	now func() time.Time

	mu        sync.Mutex
	tats      map[string]int64 // key → TAT in Unix microseconds
	nextSweep int64
}

// NewMemory returns an empty in-process limiter. now is the clock; nil
// means time.Now.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, tats: make(map[string]int64)}
}

// Allow implements Limiter. It never returns an error other than
// ErrInvalidLimit.
func (m *Memory) Allow(_ context.Context, key string, perMinute int) (Result, error) {
	if !validLimit(perMinute) {
		return Result{}, fmt.Errorf("%w: %d", ErrInvalidLimit, perMinute)
	}
	now := m.now().UnixMicro()

	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	d := gcra(m.tats[key], now, perMinute)
	if d.allowed {
		m.tats[key] = d.tat
	}
	return d.result(perMinute), nil
}

// sweep evicts refilled keys at most once per sweepEvery, so the O(n) walk
// is amortised over every call in that minute. m.mu must be held.
func (m *Memory) sweep(now int64) {
	if now < m.nextSweep {
		return
	}
	m.nextSweep = now + int64(sweepEvery/time.Microsecond)
	for k, tat := range m.tats {
		if tat <= now {
			delete(m.tats, k)
		}
	}
}
