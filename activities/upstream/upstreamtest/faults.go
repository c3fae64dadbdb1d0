// Package upstreamtest holds what the providers' test servers
// (creatorstest, browsetest, zinctest, horizontest) share: the failures a
// test injects, the tokens a token endpoint grants, and the plumbing of
// serving HTTP. They and the sandbox catalog invent products from its
// words and ids. The tests of the clients that talk to them share its log
// sink and scripted upstream.
package upstreamtest

import (
	"sync"
	"time"
)

// Faults are the failures a test server injects: the test sets them, each
// request takes its share (Take), and the server answers it in its
// provider's words. The zero value injects nothing. Safe for concurrent
// use.
type Faults struct {
	mu         sync.Mutex
	failStatus int
	failN      int
	rateN      int
	retryAfter time.Duration
	latency    time.Duration
}

// FailNext makes the next n requests answer status.
func (f *Faults) FailNext(status, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failStatus, f.failN = status, n
}

// RateLimitNext makes the next n requests answer 429, advising a wait of
// retryAfter (none when zero).
func (f *Faults) RateLimitNext(n int, retryAfter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rateN, f.retryAfter = n, retryAfter
}

// SetLatency holds every answer back by d.
func (f *Faults) SetLatency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = d
}

// Fault is what one request answers: Status 0 is no failure; 429 is a
// rate limit advising RetryAfter; anything else an injected failure. The
// answer is held back by Latency first.
type Fault struct {
	Status     int
	RetryAfter time.Duration
	Latency    time.Duration
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up.
func (f Fault) RetryAfterSeconds() int {
	return int((f.RetryAfter + time.Second - 1) / time.Second)
}

// Take takes the next request's fault: a rate limit before a failure.
func (f *Faults) Take() Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := Fault{Latency: f.latency}
	switch {
	case f.rateN > 0:
		f.rateN--
		out.Status, out.RetryAfter = 429, f.retryAfter
	case f.failN > 0:
		f.failN--
		out.Status = f.failStatus
	}
	return out
}

// Latency is the latency set, for a request that takes no fault.
func (f *Faults) Latency() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latency
}

// Next arms a fault for the next n requests (or records, or orders: what
// the server counts) and hands each its share. The zero value is disarmed.
// Safe for concurrent use.
type Next struct {
	mu sync.Mutex
	n  int
}

// Arm makes the next n Takes report true; n <= 0 disarms.
func (c *Next) Arm(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = n
}

// Take reports whether the fault applies to this one, using up its share.
func (c *Next) Take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		return false
	}
	c.n--
	return true
}
