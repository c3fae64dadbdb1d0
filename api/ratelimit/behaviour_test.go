package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// step is one Allow call and the result it must produce. advance moves the
// clock first; only limiters with a fake clock can run steps that use it.
type step struct {
	advance   time.Duration
	key       string
	perMinute int
	want      Result
}

// allowed is the Result of an allowed call.
func allowed(limit, remaining int, resetAfter time.Duration) Result {
	return Result{Allowed: true, Limit: limit, Remaining: remaining, ResetAfter: resetAfter}
}

// refused is the Result of a refused call.
func refused(limit int, retryAfter, resetAfter time.Duration) Result {
	return Result{Allowed: false, Limit: limit, RetryAfter: retryAfter, ResetAfter: resetAfter}
}

// burst is n allowed calls on a fresh key, each one interval deeper into
// the bucket. The interval is floored to whole microseconds, as in gcra.
func burst(key string, limit, n int) []step {
	interval := time.Minute / time.Microsecond / time.Duration(limit) * time.Microsecond
	steps := make([]step, n)
	for i := range n {
		steps[i] = step{key: key, perMinute: limit, want: allowed(limit, limit-1-i, time.Duration(i+1)*interval)}
	}
	return steps
}

func concat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// behaviourCases hold no clock movement, so they run unchanged against
// Redis, whose clock cannot be faked.
var behaviourCases = []struct {
	name  string
	steps []step
}{
	{
		name: "burst of perMinute then refused",
		steps: concat(burst("k", 5, 5), []step{
			{key: "k", perMinute: 5, want: refused(5, 12*time.Second, time.Minute)},
			// A refusal consumes nothing, so asking again changes nothing.
			{key: "k", perMinute: 5, want: refused(5, 12*time.Second, time.Minute)},
		}),
	},
	{
		name: "limit of one",
		steps: []step{
			{key: "k", perMinute: 1, want: allowed(1, 0, time.Minute)},
			{key: "k", perMinute: 1, want: refused(1, time.Minute, time.Minute)},
		},
	},
	{
		// 60s/7 is not a whole number of microseconds; the interval is
		// floored to 8571428µs.
		name: "limit that does not divide a minute",
		steps: concat(burst("k", 7, 7), []step{
			{key: "k", perMinute: 7, want: refused(7, 8571428*time.Microsecond, 7*8571428*time.Microsecond)},
		}),
	},
	{
		name: "keys are independent",
		steps: concat(burst("a", 2, 2), []step{
			{key: "a", perMinute: 2, want: refused(2, 30*time.Second, time.Minute)},
		}, burst("b", 2, 2), []step{
			{key: "b", perMinute: 2, want: refused(2, 30*time.Second, time.Minute)},
		}),
	},
	{
		// The stored TAT is an instant, so usage under one limit counts
		// against another: 3 of 10 (18s of a 60s window) leaves room for
		// one more at 2/min (30s each), then 18s must pass.
		name: "changing the limit for a key",
		steps: concat(burst("k", 10, 3), []step{
			{key: "k", perMinute: 2, want: allowed(2, 0, 48*time.Second)},
			{key: "k", perMinute: 2, want: refused(2, 18*time.Second, 48*time.Second)},
			{key: "k", perMinute: 10, want: allowed(10, 1, 54*time.Second)},
			{key: "k", perMinute: 10, want: allowed(10, 0, time.Minute)},
			{key: "k", perMinute: 10, want: refused(10, 6*time.Second, time.Minute)},
		}),
	},
}

// runSteps plays steps against l. Durations may fall short of want by up
// to slack, which covers a real clock moving between calls; they may never
// exceed it.
func runSteps(t *testing.T, l Limiter, advance func(time.Duration), slack time.Duration, steps []step) {
	t.Helper()
	for i, s := range steps {
		if s.advance != 0 {
			require.NotNil(t, advance, "step %d advances the clock but this limiter has no fake clock", i)
			advance(s.advance)
		}
		got, err := l.Allow(t.Context(), s.key, s.perMinute)
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.want.Allowed, got.Allowed, "step %d: Allowed", i)
		assert.Equal(t, s.want.Limit, got.Limit, "step %d: Limit", i)
		assert.Equal(t, s.want.Remaining, got.Remaining, "step %d: Remaining", i)
		if s.want.Allowed {
			assert.Zero(t, got.RetryAfter, "step %d: RetryAfter", i)
		} else {
			assert.Positive(t, got.RetryAfter, "step %d: RetryAfter", i)
			assertWithin(t, s.want.RetryAfter, got.RetryAfter, slack, "step %d: RetryAfter", i)
		}
		assertWithin(t, s.want.ResetAfter, got.ResetAfter, slack, "step %d: ResetAfter", i)
	}
}

func assertWithin(t *testing.T, want, got, slack time.Duration, msg string, args ...any) {
	t.Helper()
	assert.LessOrEqual(t, got, want, append([]any{msg}, args...)...)
	assert.GreaterOrEqual(t, got, want-slack, append([]any{msg}, args...)...)
}

// testInvalidLimits checks that l refuses to decide for limits out of range.
func testInvalidLimits(t *testing.T, l Limiter) {
	for _, perMinute := range []int{0, -1, MaxPerMinute + 1} {
		_, err := l.Allow(context.Background(), "k", perMinute)
		require.ErrorIs(t, err, ErrInvalidLimit, "perMinute %d", perMinute)
	}
	_, err := l.Allow(context.Background(), "k", MaxPerMinute)
	require.NoError(t, err, "MaxPerMinute itself is valid")
}
