package upstreamtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFaults: rate limits are taken before failures, each by one request,
// and every request carries the latency set.
func TestFaults(t *testing.T) {
	var f Faults
	assert.Equal(t, Fault{}, f.Take(), "the zero value injects nothing")
	f.FailNext(503, 1)
	f.RateLimitNext(1, 1500*time.Millisecond)
	f.SetLatency(time.Second)
	first := f.Take()
	assert.Equal(t, Fault{Status: 429, RetryAfter: 1500 * time.Millisecond, Latency: time.Second}, first)
	assert.Equal(t, 2, first.RetryAfterSeconds())
	assert.Equal(t, Fault{Status: 503, Latency: time.Second}, f.Take())
	assert.Equal(t, Fault{Latency: time.Second}, f.Take())
}

// TestNext: an armed fault applies to exactly the next n, and arming
// again replaces what is left.
func TestNext(t *testing.T) {
	var n Next
	assert.False(t, n.Take(), "the zero value is disarmed")
	n.Arm(2)
	assert.True(t, n.Take())
	assert.True(t, n.Take())
	assert.False(t, n.Take())
	n.Arm(3)
	n.Arm(1)
	assert.True(t, n.Take())
	assert.False(t, n.Take())
}

// TestWait: a request is held back the whole time unless the server's
// closing or the request's end cuts it short.
func TestWait(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	assert.True(t, Wait(r, nil, 0))
	assert.True(t, Wait(r, nil, time.Millisecond))
	done := make(chan struct{})
	close(done)
	assert.False(t, Wait(r, done, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, Wait(r.WithContext(ctx), nil, time.Hour))
}

// TestTokens: a granted token is live until its expiry, known until
// revoked, and counted either way.
func TestTokens(t *testing.T) {
	var tk Tokens
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	known, live := tk.Check("a", now)
	assert.False(t, known || live, "the zero value holds none")
	tk.Grant("a", now.Add(time.Hour))
	known, live = tk.Check("a", now)
	assert.True(t, known && live)
	known, live = tk.Check("a", now.Add(time.Hour))
	assert.True(t, known)
	assert.False(t, live, "expired at its expiry")
	tk.Revoke()
	known, _ = tk.Check("a", now)
	assert.False(t, known)
	assert.Equal(t, 1, tk.Issued())
}

// TestClock: a frozen clock reads what it was set to, moved only by
// Advanced; a running one keeps moving from where it was put.
func TestClock(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	c := FrozenAt(at)
	assert.Equal(t, at, c.Now())
	c = c.Advanced(time.Hour)
	assert.Equal(t, at.Add(time.Hour), c.Now())
	c = c.Running(60)
	time.Sleep(20 * time.Millisecond)
	assert.True(t, c.Now().After(at.Add(time.Hour+time.Second)), "a minute a second: 20ms is over a second")
	c = c.Running(0)
	assert.Equal(t, c.Now(), c.Now(), "speed 0 freezes it")
	running := RealClock().Advanced(time.Hour)
	assert.WithinDuration(t, time.Now().Add(time.Hour), running.Now(), time.Second)
	time.Sleep(10 * time.Millisecond)
	assert.WithinDuration(t, time.Now().Add(time.Hour), running.Now(), time.Second, "still running")
}
