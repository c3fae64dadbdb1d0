package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/api/ratelimit/redistest"
)

// stubLimiter is a primary whose behaviour the test swaps at will.
type stubLimiter struct {
	calls atomic.Int64
	mu    sync.Mutex
	allow func(ctx context.Context, key string, perMinute int) (Result, error)
}

func newStub(allow func(ctx context.Context, key string, perMinute int) (Result, error)) *stubLimiter {
	return &stubLimiter{allow: allow}
}

func (s *stubLimiter) Allow(ctx context.Context, key string, perMinute int) (Result, error) {
	s.calls.Add(1)
	s.mu.Lock()
	allow := s.allow
	s.mu.Unlock()
	return allow(ctx, key, perMinute)
}

func (s *stubLimiter) set(allow func(ctx context.Context, key string, perMinute int) (Result, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allow = allow
}

var errStoreDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

// primaryOK answers like a healthy shared store with a fresh budget.
func primaryOK(_ context.Context, _ string, perMinute int) (Result, error) {
	return Result{Allowed: true, Limit: perMinute, Remaining: perMinute - 1, ResetAfter: time.Minute / time.Duration(perMinute)}, nil
}

func primaryDown(context.Context, string, int) (Result, error) {
	return Result{}, errStoreDown
}

// logRecorder keeps the level and message of every record logged.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) logger() *slog.Logger { return slog.New(recordingHandler{l}) }

// count returns how many records at exactly level were logged.
func (l *logRecorder) count(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level {
			n++
		}
	}
	return n
}

type recordingHandler struct{ l *logRecorder }

func (recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	h.l.recs = append(h.l.recs, r.Clone())
	return nil
}
func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordingHandler) WithGroup(string) slog.Handler      { return h }

// newTestFallback wires primary and a Memory to one fake clock.
func newTestFallback(primary Limiter, opts FallbackOptions) (*Fallback, *fakeClock, *logRecorder) {
	clock := newFakeClock()
	logs := &logRecorder{}
	opts.Logger = logs.logger()
	f := NewFallback(primary, NewMemory(clock.Now), opts)
	f.now = clock.Now
	return f, clock, logs
}

func TestFallbackLimiterHealthyAsksPrimary(t *testing.T) {
	primary := newStub(primaryOK)
	f, _, logs := newTestFallback(primary, FallbackOptions{})
	for range 3 {
		got, err := f.Allow(t.Context(), "k", 10)
		require.NoError(t, err)
		assert.Equal(t, Result{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: 6 * time.Second}, got)
	}
	assert.EqualValues(t, 3, primary.calls.Load())
	assert.Zero(t, logs.count(slog.LevelWarn)+logs.count(slog.LevelInfo))
}

func TestFallbackLimiterOutageAndRecovery(t *testing.T) {
	primary := newStub(primaryDown)
	f, clock, logs := newTestFallback(primary, FallbackOptions{Cooldown: 5 * time.Second})
	allow := func() Result {
		t.Helper()
		got, err := f.Allow(t.Context(), "k", 3)
		require.NoError(t, err)
		return got
	}

	// The failing call is answered locally, with the full set of fields.
	got := allow()
	assert.Equal(t, Result{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 20 * time.Second, Degraded: true}, got)
	assert.EqualValues(t, 1, primary.calls.Load())
	assert.Equal(t, 1, logs.count(slog.LevelWarn))

	// During the cooldown the primary is not contacted and the local
	// budget holds: the 4th call of a 3-per-minute key is refused.
	assert.Equal(t, Result{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 40 * time.Second, Degraded: true}, allow())
	assert.Equal(t, Result{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: time.Minute, Degraded: true}, allow())
	assert.Equal(t, Result{Allowed: false, Limit: 3, RetryAfter: 20 * time.Second, ResetAfter: time.Minute, Degraded: true}, allow())
	clock.Advance(5*time.Second - time.Microsecond)
	assert.True(t, allow().Degraded)
	assert.EqualValues(t, 1, primary.calls.Load(), "no primary call during the cooldown")

	// After it one call probes; a failed probe starts a new cooldown and
	// logs no new warning.
	clock.Advance(time.Microsecond)
	assert.True(t, allow().Degraded)
	assert.EqualValues(t, 2, primary.calls.Load(), "one probe after the cooldown")
	clock.Advance(4 * time.Second)
	assert.True(t, allow().Degraded)
	assert.EqualValues(t, 2, primary.calls.Load(), "the failed probe restarted the cooldown")
	assert.Equal(t, 1, logs.count(slog.LevelWarn), "the outage is logged once")

	// The next probe finds the primary back, and it answers from then on.
	primary.set(primaryOK)
	clock.Advance(time.Second)
	assert.Equal(t, Result{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 20 * time.Second}, allow())
	assert.False(t, allow().Degraded)
	assert.EqualValues(t, 4, primary.calls.Load())
	assert.Equal(t, 1, logs.count(slog.LevelInfo), "the recovery is logged once")

	// A second outage is a second switch, logged again.
	primary.set(primaryDown)
	assert.True(t, allow().Degraded)
	assert.True(t, allow().Degraded)
	assert.Equal(t, 2, logs.count(slog.LevelWarn))
	assert.EqualValues(t, 5, primary.calls.Load())
}

func TestFallbackLimiterOneProbeAtATime(t *testing.T) {
	primary := newStub(primaryDown)
	f, clock, _ := newTestFallback(primary, FallbackOptions{Timeout: time.Minute, Cooldown: time.Second})
	got, err := f.Allow(t.Context(), "k", 100)
	require.NoError(t, err)
	require.True(t, got.Degraded)
	clock.Advance(time.Second)

	// The probe hangs in the primary until released.
	entered, release := make(chan struct{}), make(chan struct{})
	primary.set(func(ctx context.Context, key string, perMinute int) (Result, error) {
		close(entered)
		<-release
		return primaryOK(ctx, key, perMinute)
	})
	probe := make(chan Result, 1)
	go func() {
		got, err := f.Allow(context.Background(), "k", 100)
		assert.NoError(t, err)
		probe <- got
	}()
	<-entered

	// Everyone else goes local at once instead of queueing behind it.
	start := time.Now()
	for range 20 {
		got, err := f.Allow(t.Context(), "k", 100)
		require.NoError(t, err)
		assert.True(t, got.Degraded)
	}
	assert.Less(t, time.Since(start), time.Second)
	assert.EqualValues(t, 2, primary.calls.Load(), "the first failure and one probe")

	close(release)
	assert.False(t, (<-probe).Degraded, "the probe is answered by the primary")
	primary.set(primaryOK)
	got, err = f.Allow(t.Context(), "k", 100)
	require.NoError(t, err)
	assert.False(t, got.Degraded)
	assert.EqualValues(t, 3, primary.calls.Load())
}

func TestFallbackLimiterBoundsAPrimaryIgnoringItsContext(t *testing.T) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	primary := newStub(func(context.Context, string, int) (Result, error) {
		<-stuck // like a client with no timeouts talking to a hung server
		return Result{}, errStoreDown
	})
	f, _, logs := newTestFallback(primary, FallbackOptions{Timeout: 50 * time.Millisecond})

	start := time.Now()
	got, err := f.Allow(t.Context(), "k", 5)
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, elapsed, 50*time.Millisecond, "the primary gets its full timeout")
	assert.Less(t, elapsed, time.Second)
	assert.Equal(t, Result{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 12 * time.Second, Degraded: true}, got)
	assert.Equal(t, 1, logs.count(slog.LevelWarn))
}

func TestFallbackLimiterInvalidLimit(t *testing.T) {
	primary := newStub(primaryOK)
	f, _, _ := newTestFallback(primary, FallbackOptions{})
	testInvalidLimits(t, f)
	assert.EqualValues(t, 1, primary.calls.Load(), "out-of-range limits never reach the primary")

	// A primary with a narrower range refuses a limit: that is an answer,
	// not an outage.
	primary.set(func(context.Context, string, int) (Result, error) {
		return Result{}, fmt.Errorf("%w: stricter store", ErrInvalidLimit)
	})
	f, _, logs := newTestFallback(primary, FallbackOptions{})
	got, err := f.Allow(t.Context(), "k", 5)
	require.ErrorIs(t, err, ErrInvalidLimit)
	assert.Equal(t, Result{}, got)
	primary.set(primaryOK)
	got, err = f.Allow(t.Context(), "k", 5)
	require.NoError(t, err)
	assert.False(t, got.Degraded, "the primary was not marked down")
	assert.Zero(t, logs.count(slog.LevelWarn))
}

func TestFallbackLimiterCallerGivingUpIsNotAnOutage(t *testing.T) {
	primary := newStub(func(ctx context.Context, key string, perMinute int) (Result, error) {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		return primaryOK(ctx, key, perMinute)
	})
	f, clock, logs := newTestFallback(primary, FallbackOptions{Cooldown: time.Second})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	_, err := f.Allow(cancelled, "k", 5)
	require.ErrorIs(t, err, context.Canceled)
	got, err := f.Allow(t.Context(), "k", 5)
	require.NoError(t, err)
	assert.False(t, got.Degraded, "the primary was not marked down")
	assert.Zero(t, logs.count(slog.LevelWarn))

	// A probe whose caller gives up leaves the next call to probe.
	primary.set(primaryDown)
	got, err = f.Allow(t.Context(), "k", 5)
	require.NoError(t, err)
	require.True(t, got.Degraded)
	clock.Advance(time.Second)
	primary.set(func(ctx context.Context, _ string, _ int) (Result, error) { return Result{}, ctx.Err() })
	_, err = f.Allow(cancelled, "k", 5)
	require.ErrorIs(t, err, context.Canceled)
	primary.set(primaryOK)
	got, err = f.Allow(t.Context(), "k", 5)
	require.NoError(t, err)
	assert.False(t, got.Degraded, "the next call probed and found the primary up")
}

func TestFallbackLimiterDefaults(t *testing.T) {
	f := NewFallback(newStub(primaryDown), nil, FallbackOptions{})
	assert.Equal(t, DefaultPrimaryTimeout, f.timeout)
	assert.Equal(t, DefaultCooldown, f.cooldown)
	got, err := f.Allow(t.Context(), "k", 60) // nil logger and local work
	require.NoError(t, err)
	assert.True(t, got.Degraded)
	assert.True(t, got.Allowed)
	assert.Equal(t, 59, got.Remaining)
}

// Against a real, throwaway Redis that the tests stop and hang.

// countingLimiter counts the calls that reach the limiter it wraps.
type countingLimiter struct {
	Limiter
	calls atomic.Int64
}

func (c *countingLimiter) Allow(ctx context.Context, key string, perMinute int) (Result, error) {
	c.calls.Add(1)
	return c.Limiter.Allow(ctx, key, perMinute)
}

// throwawayRedis starts a private redis-server and a client configured like
// cmd/memocart's: timeouts in the hundreds of milliseconds that follow the
// context, at most one retry.
func throwawayRedis(t *testing.T) (*redistest.Instance, *redis.Client) {
	t.Helper()
	in := redistest.Start(t)
	client := redis.NewClient(&redis.Options{
		Addr:                  in.Addr(),
		DialTimeout:           500 * time.Millisecond,
		ReadTimeout:           500 * time.Millisecond,
		WriteTimeout:          500 * time.Millisecond,
		PoolTimeout:           500 * time.Millisecond,
		MaxRetries:            1,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = client.Close() })
	return in, client
}

// failures are the ways the tests break a throwaway Redis and mend it.
var failures = []struct {
	name       string
	fail, mend func(*redistest.Instance)
}{
	{name: "stopped", fail: (*redistest.Instance).Stop, mend: (*redistest.Instance).Restart},
	{name: "hung", fail: (*redistest.Instance).Pause, mend: (*redistest.Instance).Resume},
}

func TestFallbackRedisHealthy(t *testing.T) {
	_, client := throwawayRedis(t)
	primary := &countingLimiter{Limiter: NewRedis(client, "t:")}
	f := NewFallback(primary, NewMemory(nil), FallbackOptions{})
	for i := range 3 {
		got, err := f.Allow(t.Context(), "k", 3)
		require.NoError(t, err)
		assert.False(t, got.Degraded)
		assert.True(t, got.Allowed)
		assert.Equal(t, 2-i, got.Remaining)
	}
	got, err := f.Allow(t.Context(), "k", 3)
	require.NoError(t, err)
	assert.False(t, got.Allowed)
	assert.False(t, got.Degraded)
	assert.EqualValues(t, 4, primary.calls.Load())
	n, err := client.Exists(t.Context(), "t:k").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the state is in Redis")
}

func TestFallbackRedisOutage(t *testing.T) {
	for _, fc := range failures {
		t.Run(fc.name, func(t *testing.T) {
			in, client := throwawayRedis(t)
			primary := &countingLimiter{Limiter: NewRedis(client, "t:")}
			logs := &logRecorder{}
			f := NewFallback(primary, NewMemory(nil), FallbackOptions{Cooldown: time.Minute, Logger: logs.logger()})
			// A pooled connection exists, as it would in a running server.
			got, err := f.Allow(t.Context(), "warm", 3)
			require.NoError(t, err)
			require.False(t, got.Degraded)

			fc.fail(in)
			start := time.Now()
			got, err = f.Allow(t.Context(), "k", 3)
			elapsed := time.Since(start)
			t.Logf("first call after the failure took %v", elapsed)
			assert.Less(t, elapsed, 1500*time.Millisecond, "first call after the failure")
			require.NoError(t, err)
			assert.True(t, got.Degraded)
			assert.True(t, got.Allowed)
			assert.Equal(t, 3, got.Limit)
			assert.Equal(t, 2, got.Remaining)
			assertWithin(t, 20*time.Second, got.ResetAfter, time.Second, "ResetAfter")

			start = time.Now()
			for i := range 20 {
				got, err := f.Allow(t.Context(), "k", 3)
				require.NoError(t, err)
				assert.True(t, got.Degraded, "call %d", i)
				assert.Equal(t, i < 2, got.Allowed, "call %d: 3 per minute allows 3, refuses the 4th", i)
				assert.Equal(t, 3, got.Limit, "call %d", i)
				if !got.Allowed {
					assert.Zero(t, got.Remaining, "call %d", i)
					assert.Positive(t, got.RetryAfter, "call %d", i)
					assert.Positive(t, got.ResetAfter, "call %d", i)
				}
			}
			elapsed = time.Since(start)
			t.Logf("20 calls during the cooldown took %v", elapsed)
			assert.Less(t, elapsed, time.Second, "20 calls during the cooldown")
			assert.EqualValues(t, 2, primary.calls.Load(), "Redis is not contacted during the cooldown")
			assert.Equal(t, 1, logs.count(slog.LevelWarn))
		})
	}
}

func TestFallbackRedisRecovers(t *testing.T) {
	const cooldown = 200 * time.Millisecond
	for _, fc := range failures {
		t.Run(fc.name, func(t *testing.T) {
			in, client := throwawayRedis(t)
			logs := &logRecorder{}
			f := NewFallback(NewRedis(client, "t:"), NewMemory(nil), FallbackOptions{Cooldown: cooldown, Logger: logs.logger()})
			got, err := f.Allow(t.Context(), "k", 3)
			require.NoError(t, err)
			require.False(t, got.Degraded)

			fc.fail(in)
			got, err = f.Allow(t.Context(), "k", 3)
			require.NoError(t, err)
			require.True(t, got.Degraded)
			downAt := time.Now()

			fc.mend(in)
			require.Eventually(t, func() bool {
				got, err := f.Allow(t.Context(), "k", 3)
				return err == nil && !got.Degraded
			}, 10*time.Second, 20*time.Millisecond, "Redis answers again after the cooldown")
			t.Logf("Redis answered again %v after the failure", time.Since(downAt))
			assert.GreaterOrEqual(t, time.Since(downAt), cooldown)
			assert.Equal(t, 1, logs.count(slog.LevelWarn), "switch to local logged once")
			assert.Equal(t, 1, logs.count(slog.LevelInfo), "switch back logged once")
		})
	}
}

// A client left at go-redis defaults (5 s read timeout, context ignored)
// still costs at most Fallback's own timeout against a hung Redis.
func TestFallbackRedisHungWithDefaultClient(t *testing.T) {
	in := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: in.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	f := NewFallback(NewRedis(client, "t:"), NewMemory(nil), FallbackOptions{})
	got, err := f.Allow(t.Context(), "k", 3)
	require.NoError(t, err)
	require.False(t, got.Degraded)

	in.Pause()
	start := time.Now()
	got, err = f.Allow(t.Context(), "k", 3)
	elapsed := time.Since(start)
	t.Logf("first call after the hang took %v", elapsed)
	assert.Less(t, elapsed, 1500*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, got.Degraded)
}
