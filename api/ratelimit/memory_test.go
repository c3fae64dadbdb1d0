package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models/clocktest"
)

// fakeClock is safe for concurrent use so the concurrency test can share it.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock {
	return clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

func TestMemoryBehaviour(t *testing.T) {
	for _, tc := range behaviourCases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			runSteps(t, NewMemory(clock.Now), clock.Advance, 0, tc.steps)
		})
	}
}

func TestMemoryRefill(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "waiting RetryAfter allows exactly one more",
			steps: concat(burst("k", 5, 5), []step{
				{key: "k", perMinute: 5, want: refused(5, 12*time.Second, time.Minute)},
				{advance: 12 * time.Second, key: "k", perMinute: 5, want: allowed(5, 0, time.Minute)},
				{key: "k", perMinute: 5, want: refused(5, 12*time.Second, time.Minute)},
			}),
		},
		{
			name: "waiting just under RetryAfter still refuses",
			steps: concat(burst("k", 5, 5), []step{
				{advance: 12*time.Second - time.Microsecond, key: "k", perMinute: 5,
					want: refused(5, time.Microsecond, 48*time.Second+time.Microsecond)},
			}),
		},
		{
			name: "partial refill returns whole requests only",
			steps: concat(burst("k", 5, 5), []step{
				{advance: 30 * time.Second, key: "k", perMinute: 5, want: allowed(5, 1, 42*time.Second)},
				{key: "k", perMinute: 5, want: allowed(5, 0, 54*time.Second)},
				{key: "k", perMinute: 5, want: refused(5, 6*time.Second, 54*time.Second)},
			}),
		},
		{
			name: "waiting ResetAfter refills the bucket",
			steps: concat(burst("k", 5, 5), []step{
				{advance: time.Minute, key: "k", perMinute: 5, want: allowed(5, 4, 12*time.Second)},
			}),
		},
		{
			name: "a long idle key behaves like a new one",
			steps: concat(burst("k", 5, 3), []step{
				{advance: time.Hour, key: "k", perMinute: 5, want: allowed(5, 4, 12*time.Second)},
			}),
		},
		{
			name: "high limit refills every 10ms",
			steps: concat(burst("k", 6000, 6000), []step{
				{key: "k", perMinute: 6000, want: refused(6000, 10*time.Millisecond, time.Minute)},
				{advance: 10 * time.Millisecond, key: "k", perMinute: 6000, want: allowed(6000, 0, time.Minute)},
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			runSteps(t, NewMemory(clock.Now), clock.Advance, 0, tc.steps)
		})
	}
}

func TestMemoryInvalidLimit(t *testing.T) {
	testInvalidLimits(t, NewMemory(newFakeClock().Now))
}

func TestMemoryEvictsRefilledKeys(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(clock.Now)
	size := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.tats)
	}
	has := func(key string) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, ok := m.tats[key]
		return ok
	}
	allow := func(key string, perMinute int) {
		_, err := m.Allow(t.Context(), key, perMinute)
		require.NoError(t, err)
	}

	// 60/min: each key's bucket is full again one second later.
	for i := range 100 {
		allow(string(rune('A'+i%26))+string(rune('a'+i/26)), 60)
	}
	require.Equal(t, 100, size())

	// Before the sweep interval is up nothing is dropped, even if stale.
	clock.Advance(30 * time.Second)
	allow("busy", 1) // full again 60s from now, so it must survive the sweep
	require.Equal(t, 101, size())

	clock.Advance(31 * time.Second)
	allow("trigger", 60)
	assert.Equal(t, 2, size(), "every refilled key is evicted")
	assert.True(t, has("busy"), "a key whose bucket is not full is kept")
	assert.True(t, has("trigger"))

	// Eviction loses nothing: busy is still limited.
	got, err := m.Allow(t.Context(), "busy", 1)
	require.NoError(t, err)
	assert.False(t, got.Allowed)
	assert.Equal(t, 29*time.Second, got.RetryAfter)
}

func TestMemoryConcurrentNeverExceedsBurst(t *testing.T) {
	const (
		limit      = 100
		goroutines = 16
		perG       = 50
	)
	clock := newFakeClock()
	m := NewMemory(clock.Now)

	var allowedCount atomic.Int64
	remainingSeen := make([]atomic.Int64, limit)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				got, err := m.Allow(t.Context(), "shared", limit)
				if err != nil {
					t.Error(err)
					return
				}
				if got.Allowed {
					allowedCount.Add(1)
					remainingSeen[got.Remaining].Add(1)
				}
			}
		})
	}
	wg.Wait()

	assert.EqualValues(t, limit, allowedCount.Load())
	// Atomic read-modify-write means each Remaining value is handed out once.
	for r := range remainingSeen {
		assert.EqualValues(t, 1, remainingSeen[r].Load(), "Remaining=%d", r)
	}
}

func TestMemoryNilClockUsesTimeNow(t *testing.T) {
	m := NewMemory(nil)
	got, err := m.Allow(t.Context(), "k", 60)
	require.NoError(t, err)
	assert.True(t, got.Allowed)
	assert.Equal(t, 59, got.Remaining)
	assertWithin(t, time.Second, got.ResetAfter, 0, "ResetAfter")
}
