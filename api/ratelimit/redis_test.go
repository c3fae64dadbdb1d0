package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const redisURLEnv = "MEMOCART_TEST_REDIS_URL"

// redisSlack covers Redis's real clock moving between calls in a test.
const redisSlack = 2 * time.Second

// testRedisClient connects to the Redis named by MEMOCART_TEST_REDIS_URL.
// Unset skips; set but unreachable fails, so a broken CI service cannot pass
// as a skip.
func testRedisClient(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv(redisURLEnv)
	if url == "" {
		t.Skipf("Redis tests disabled: set %s=redis://127.0.0.1:6379/0 to run them", redisURLEnv)
	}
	opt, err := redis.ParseURL(url)
	require.NoError(t, err, "parse %s", redisURLEnv)
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("%s is set but Redis is unreachable: %v", redisURLEnv, err)
	}
	return client
}

// testPrefix returns a key prefix no other test run uses and deletes its
// keys when t ends.
func testPrefix(t *testing.T, client *redis.Client) string {
	t.Helper()
	prefix := fmt.Sprintf("memocart-test:ratelimit:%016x:", rand.Uint64())
	t.Cleanup(func() {
		// t.Context is already cancelled during cleanup.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			if err := client.Del(ctx, iter.Val()).Err(); err != nil {
				t.Errorf("clean up %s: %v", iter.Val(), err)
			}
		}
		if err := iter.Err(); err != nil {
			t.Errorf("clean up %s*: %v", prefix, err)
		}
	})
	return prefix
}

func TestRedisBehaviour(t *testing.T) {
	client := testRedisClient(t)
	for _, tc := range behaviourCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, NewRedis(client, testPrefix(t, client)), nil, redisSlack, tc.steps)
		})
	}
}

func TestRedisInvalidLimit(t *testing.T) {
	client := testRedisClient(t)
	testInvalidLimits(t, NewRedis(client, testPrefix(t, client)))
}

func TestRedisReplicasShareBudget(t *testing.T) {
	// Two clients stand in for two API replicas.
	a, b := testRedisClient(t), testRedisClient(t)
	prefix := testPrefix(t, a)
	replicas := []*Redis{NewRedis(a, prefix), NewRedis(b, prefix)}

	for i := range 4 {
		got, err := replicas[i%2].Allow(t.Context(), "key", 4)
		require.NoError(t, err)
		require.True(t, got.Allowed, "call %d", i)
		assert.Equal(t, 3-i, got.Remaining, "call %d", i)
	}
	for i, r := range replicas {
		got, err := r.Allow(t.Context(), "key", 4)
		require.NoError(t, err)
		assert.False(t, got.Allowed, "replica %d after the shared budget is spent", i)
		assertWithin(t, 15*time.Second, got.RetryAfter, redisSlack, "replica %d RetryAfter", i)
	}

	// A different prefix is a different budget.
	got, err := NewRedis(a, testPrefix(t, a)).Allow(t.Context(), "key", 4)
	require.NoError(t, err)
	assert.True(t, got.Allowed)
}

func TestRedisAllowedAgainAfterRetryAfter(t *testing.T) {
	client := testRedisClient(t)
	l := NewRedis(client, testPrefix(t, client))
	const limit = 6000 // refills every 10ms

	var got Result
	var err error
	// Redis keeps refilling while we spend, so allow for more than limit.
	for i := 0; ; i++ {
		require.Less(t, i, 2*limit, "never refused")
		got, err = l.Allow(t.Context(), "k", limit)
		require.NoError(t, err)
		if !got.Allowed {
			break
		}
	}
	assert.Equal(t, 0, got.Remaining)
	assert.Positive(t, got.RetryAfter)
	assert.LessOrEqual(t, got.RetryAfter, 10*time.Millisecond)

	time.Sleep(got.RetryAfter)
	got, err = l.Allow(t.Context(), "k", limit)
	require.NoError(t, err)
	assert.True(t, got.Allowed, "allowed after waiting RetryAfter")
}

func TestRedisKeyExpiresWhenBucketIsFull(t *testing.T) {
	client := testRedisClient(t)
	prefix := testPrefix(t, client)
	l := NewRedis(client, prefix)

	got, err := l.Allow(t.Context(), "k", 5)
	require.NoError(t, err)
	require.True(t, got.Allowed)

	ttl, err := client.PTTL(t.Context(), prefix+"k").Result()
	require.NoError(t, err)
	assertWithin(t, 12*time.Second, ttl, redisSlack, "TTL of %sk", prefix)
}

func TestRedisErrorsAreReturned(t *testing.T) {
	client := testRedisClient(t)
	prefix := testPrefix(t, client)

	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		got, err := NewRedis(client, prefix).Allow(ctx, "k", 5)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, Result{}, got)
	})
	t.Run("closed client", func(t *testing.T) {
		opt, err := redis.ParseURL(os.Getenv(redisURLEnv))
		require.NoError(t, err)
		closed := redis.NewClient(opt)
		require.NoError(t, closed.Close())
		got, err := NewRedis(closed, prefix).Allow(t.Context(), "k", 5)
		require.ErrorIs(t, err, redis.ErrClosed)
		assert.Equal(t, Result{}, got)
	})
}

// gcraScriptAt runs the production gcraLuaBody with the clock taken from
// ARGV[2] instead of TIME, so its arithmetic can be compared with gcra at
// chosen instants. Afterwards, in the same atomic script, it reports the
// stored TAT and its TTL, then removes the TTL: expiry runs on Redis's real
// clock, which would otherwise delete keys the simulated clock still needs.
var gcraScriptAt = redis.NewScript(`
local now = tonumber(ARGV[2])
local function decide()
` + gcraLuaBody + `
end
local r = decide()
r[5] = redis.call('GET', KEYS[1]) or ''
r[6] = redis.call('PTTL', KEYS[1])
redis.call('PERSIST', KEYS[1])
return r
`)

// luaAt is one run of gcraScriptAt.
type luaAt struct {
	decision
	stored string // the TAT in the key after the run, "" if none
	ttl    int64  // its PTTL in milliseconds; -1 none, -2 no key
}

func runLuaAt(t *testing.T, client *redis.Client, key string, perMinute int, now int64) luaAt {
	t.Helper()
	reply, err := gcraScriptAt.Run(t.Context(), client, []string{key}, perMinute, now).Slice()
	require.NoError(t, err)
	require.Len(t, reply, 6)
	vals := make([]int64, 4)
	for i := range vals {
		v, ok := reply[i].(int64)
		require.True(t, ok, "reply[%d] is %T", i, reply[i])
		vals[i] = v
	}
	d, err := decisionFromReply(vals)
	require.NoError(t, err)
	stored, ok := reply[4].(string)
	require.True(t, ok, "reply[4] is %T", reply[4])
	ttl, ok := reply[5].(int64)
	require.True(t, ok, "reply[5] is %T", reply[5])
	return luaAt{decision: d, stored: stored, ttl: ttl}
}

func TestLuaMatchesGo(t *testing.T) {
	client := testRedisClient(t)
	prefix := testPrefix(t, client)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMicro()

	type input struct {
		name      string
		tat       int64 // 0: no stored key
		now       int64
		perMinute int
	}
	inputs := []input{
		{name: "new key", now: base, perMinute: 5},
		{name: "tat in the past", tat: base - 1, now: base, perMinute: 5},
		{name: "tat equals now", tat: base, now: base, perMinute: 5},
		{name: "last request of the burst", tat: base + 48_000_000, now: base, perMinute: 5},
		{name: "first refusal", tat: base + 60_000_000, now: base, perMinute: 5},
		{name: "one microsecond short", tat: base + 48_000_001, now: base, perMinute: 5},
		{name: "limit of one", tat: base + 1, now: base, perMinute: 1},
		{name: "uneven interval", tat: base + 30_000_000, now: base, perMinute: 7},
		{name: "lowered limit far over", tat: base + 60_000_000, now: base, perMinute: 2},
		{name: "high limit", tat: base + 59_990_000, now: base, perMinute: 6000},
		{name: "max limit", tat: base + 59_999_999, now: base, perMinute: MaxPerMinute},
		{name: "max limit refused", tat: base + 60_000_000, now: base, perMinute: MaxPerMinute},
		{name: "near max limit", tat: base + 1234, now: base, perMinute: MaxPerMinute - 1},
		{name: "odd limit", tat: base + 777_777, now: base, perMinute: 59_999_999},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	limits := []int{1, 2, 3, 5, 7, 13, 60, 97, 1000, 6000, 12345, 999_999, MaxPerMinute}
	for i := range 300 {
		perMinute := limits[rng.IntN(len(limits))]
		if i%3 == 0 {
			perMinute = 1 + rng.IntN(MaxPerMinute)
		}
		inputs = append(inputs, input{
			name:      fmt.Sprintf("random %d", i),
			tat:       base + rng.Int64N(150_000_000) - 30_000_000,
			now:       base,
			perMinute: perMinute,
		})
	}

	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			key := prefix + in.name
			if in.tat != 0 {
				require.NoError(t, client.Set(t.Context(), key, in.tat, 0).Err())
			}
			want := gcra(in.tat, in.now, in.perMinute)
			got := runLuaAt(t, client, key, in.perMinute, in.now)

			assert.Equal(t, want.allowed, got.allowed, "allowed")
			assert.Equal(t, want.remaining, got.remaining, "remaining")
			assert.Equal(t, want.retryAfter, got.retryAfter, "retryAfter")
			assert.Equal(t, want.resetAfter, got.resetAfter, "resetAfter")
			if want.allowed {
				assert.Equal(t, strconv.FormatInt(want.tat, 10), got.stored, "stored TAT")
				// The key lives until the bucket is full, rounded up to a
				// ms. PTTL reads the real clock, which moves during a script.
				ttl := (want.resetAfter + 999) / 1000
				assert.LessOrEqual(t, got.ttl, ttl, "TTL ms")
				assert.GreaterOrEqual(t, got.ttl, ttl-50, "TTL ms")
			} else {
				assert.Equal(t, strconv.FormatInt(in.tat, 10), got.stored, "a refusal leaves the TAT alone")
				assert.Equal(t, int64(-1), got.ttl, "a refusal leaves the TTL alone")
			}
		})
	}

	// A sequence exercises the TAT Lua writes being read back by Lua.
	t.Run("sequence", func(t *testing.T) {
		key := prefix + "sequence"
		var goTAT int64
		now := base
		for i := range 300 {
			now += rng.Int64N(3_000_000)
			perMinute := limits[rng.IntN(len(limits)-3)] // small limits refuse often
			want := gcra(goTAT, now, perMinute)
			got := runLuaAt(t, client, key, perMinute, now)
			if want.allowed {
				goTAT = want.tat
			}
			require.Equal(t, strconv.FormatInt(goTAT, 10), got.stored, "call %d: stored TAT", i)
			want.tat = 0 // the script returns no TAT; compared via stored above
			require.Equal(t, want, got.decision, "call %d (now=%d, perMinute=%d)", i, now, perMinute)
		}
	})
}
