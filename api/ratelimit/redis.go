package ratelimit

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// gcraLuaClock defines now from the Redis server's clock, so replicas whose
// own clocks are skewed still agree. TIME in a script needs effect
// replication, which is the only mode since Redis 7 and the default since 5.
const gcraLuaClock = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
`

// gcraLuaBody mirrors gcra in ratelimit.go; it expects a local now in Unix
// microseconds. KEYS[1] holds the TAT, ARGV[1] is the validated limit.
// Every value stays an integer below 2^53, so float64 Lua numbers are exact.
// It returns {allowed, remaining, retry_after_us, reset_after_us}.
const gcraLuaBody = `
local limit = tonumber(ARGV[1])
local interval = math.floor(60000000 / limit)
if interval < 1 then interval = 1 end
local window = limit * interval

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - window
if now < allow_at then
  return {0, 0, allow_at - now, tat - now}
end
local reset_after = new_tat - now
-- The key lives exactly as long as the bucket is not full: after that an
-- absent key means the same thing. The TAT is formatted explicitly so it is
-- stored as a plain integer however this Redis version renders Lua numbers.
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil(reset_after / 1000))
return {1, math.floor((window - reset_after) / interval), 0, reset_after}
`

var gcraScript = redis.NewScript(gcraLuaClock + gcraLuaBody)

// Redis is a Limiter whose state lives in Redis, so every API replica
// sharing the client's server and prefix shares one budget per key. Each
// Allow is one EVALSHA of a script that reads and updates the key
// atomically.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a limiter storing each key's state at prefix+key.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// Allow implements Limiter. Errors talking to Redis are returned wrapped, not
// swallowed: the caller chooses whether to fail open or closed.
func (r *Redis) Allow(ctx context.Context, key string, perMinute int) (Result, error) {
	if !validLimit(perMinute) {
		return Result{}, fmt.Errorf("%w: %d", ErrInvalidLimit, perMinute)
	}
	// The key is usually an API key, so it stays out of error messages.
	vals, err := gcraScript.Run(ctx, r.client, []string{r.prefix + key}, perMinute).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: redis allow: %w", err)
	}
	d, err := decisionFromReply(vals)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: redis allow: %w", err)
	}
	return d.result(perMinute), nil
}

// decisionFromReply decodes the first four values gcraLuaBody returns.
func decisionFromReply(vals []int64) (decision, error) {
	if len(vals) < 4 {
		return decision{}, fmt.Errorf("gcra script returned %d values, want 4", len(vals))
	}
	return decision{
		allowed:    vals[0] == 1,
		remaining:  vals[1],
		retryAfter: vals[2],
		resetAfter: vals[3],
	}, nil
}
