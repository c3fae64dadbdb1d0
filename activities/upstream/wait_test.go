package upstream

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	top    = func(n int64) int64 { return n - 1 } // the top of each range
	bottom = func(int64) int64 { return 0 }       // the bottom
)

func TestBackoffWait(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name        string
		min, max    time.Duration
		attempt     int
		top, bottom time.Duration
	}{
		{"first failure", 250 * ms, 2 * time.Second, 1, 250 * ms, 125 * ms},
		{"doubles", 250 * ms, 2 * time.Second, 2, 500 * ms, 250 * ms},
		{"doubles again", 250 * ms, 2 * time.Second, 3, time.Second, 500 * ms},
		{"reaches the cap", 250 * ms, 2 * time.Second, 4, 2 * time.Second, time.Second},
		{"stays at the cap", 250 * ms, 2 * time.Second, 1000, 2 * time.Second, time.Second},
		{"cap between steps", 300 * ms, time.Second, 3, time.Second, 500 * ms},
		{"min above max", 3 * time.Second, time.Second, 1, time.Second, 500 * ms},
		{"attempt zero is the first", 250 * ms, 2 * time.Second, 0, 250 * ms, 125 * ms},
		{"too short to halve", time.Nanosecond, time.Nanosecond, 5, time.Nanosecond, time.Nanosecond},
		{"zero value", 0, 0, 3, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.top, Backoff{Min: tt.min, Max: tt.max, Jitter: top}.Wait(tt.attempt), "top")
			assert.Equal(t, tt.bottom, Backoff{Min: tt.min, Max: tt.max, Jitter: bottom}.Wait(tt.attempt), "bottom")
		})
	}
}

// Without a Jitter, waits are random but stay between half and all of the
// step, and are not all the same.
func TestBackoffDefaultJitter(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for attempt, step := range map[int]time.Duration{1: 100 * time.Millisecond, 3: 400 * time.Millisecond, 9: time.Second} {
		seen := map[time.Duration]bool{}
		for range 200 {
			w := b.Wait(attempt)
			require.GreaterOrEqual(t, w, step/2, "attempt %d", attempt)
			require.LessOrEqual(t, w, step, "attempt %d", attempt)
			seen[w] = true
		}
		assert.Greater(t, len(seen), 1, "attempt %d: no jitter", attempt)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, header string
		want         time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "3", 3 * time.Second},
		{"zero seconds", "0", 0},
		{"padded seconds", " 7 ", 7 * time.Second},
		{"negative seconds", "-1", 0},
		{"seconds past any wait", "99999999999999", math.MaxInt64},
		{"fractional seconds", "1.5", 0},
		{"HTTP date ahead", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"HTTP date passed", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"HTTP date now", now.Format(http.TimeFormat), 0},
		{"RFC 850 date ahead", now.Add(time.Hour).Format(time.RFC850), time.Hour},
		{"garbage", "soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RetryAfter(tt.header, now), "Retry-After %q", tt.header)
		})
	}
}

func TestFits(t *testing.T) {
	hour, cancelHour := context.WithTimeout(context.Background(), time.Hour)
	defer cancelHour()
	passed, cancelPassed := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPassed()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"no deadline, long wait", context.Background(), 1000 * time.Hour, true},
		{"no deadline, no wait", context.Background(), 0, true},
		{"well before the deadline", hour, time.Second, true},
		{"past the deadline", hour, 2 * time.Hour, false},
		{"all the time left does not fit", hour, time.Hour, false},
		{"deadline passed", passed, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Fits(tt.ctx, tt.d))
		})
	}
}

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     func(t *testing.T) context.Context
		d       time.Duration
		wantErr error
		atLeast time.Duration
	}{
		{"waits d", func(*testing.T) context.Context { return context.Background() }, 30 * time.Millisecond, nil, 30 * time.Millisecond},
		{"already cancelled", func(*testing.T) context.Context { return cancelled }, time.Hour, context.Canceled, 0},
		{"cancelled while waiting", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			t.Cleanup(cancel)
			return ctx
		}, time.Hour, context.Canceled, 20 * time.Millisecond},
		{"deadline while waiting", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, time.Hour, context.DeadlineExceeded, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// From before the context's own timer starts: the wait is at
			// least that long after this.
			start := time.Now()
			ctx := tt.ctx(t)
			err := Sleep(ctx, tt.d)
			elapsed := time.Since(start)
			assert.ErrorIs(t, err, tt.wantErr) // errors.Is(err, nil) only for a nil err
			assert.GreaterOrEqual(t, elapsed, tt.atLeast)
			assert.Less(t, elapsed, 5*time.Second, "returned with ctx, not after d")
		})
	}
}
