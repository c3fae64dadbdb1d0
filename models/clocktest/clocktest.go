// Package clocktest is the tests' clock: it moves only when a test
// advances it or the code under test sleeps on it, so times and waits are
// asserted exactly and cost no time. Safe for concurrent use (servers
// under test read it from request goroutines).
package clocktest

import (
	"context"
	"sync"
	"time"
)

// Clock is a settable clock.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

// New returns a clock at at.
func New(at time.Time) *Clock { return &Clock{now: at} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleep is a sleep of d that takes no time: the clock moves on by d and
// remembers the wait (Slept). It answers ctx's error, as a sleep cut short
// would.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return ctx.Err()
}

// Slept lists the waits slept on the clock, in order.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}
