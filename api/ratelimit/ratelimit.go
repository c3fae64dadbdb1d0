// Package ratelimit limits requests per API key per minute for the HTTP
// middleware in package api. It offers one Limiter interface with two
// implementations of the same algorithm: Memory for a single process and
// tests, Redis for a budget shared by every API replica. Fallback combines
// them so that a Redis outage degrades to per-process limits, with bounded
// added latency, instead of to no limits.
//
// It may import the standard library and github.com/redis/go-redis/v9 only.
//
// The algorithm is GCRA (generic cell rate algorithm): a token bucket that
// holds perMinute tokens and refills one token every minute/perMinute. Instead
// of a token count it stores a single timestamp per key, the theoretical
// arrival time (TAT), which makes it cheap to keep in one Redis string.
package ratelimit

import (
	"context"
	"errors"
	"time"
)

// MaxPerMinute is the highest limit Allow accepts. Above it the refill
// interval would be shorter than the microsecond the arithmetic works in.
const MaxPerMinute = 60_000_000

// ErrInvalidLimit is returned by Allow when perMinute is below 1 or above
// MaxPerMinute. A zero limit is an error rather than "unlimited" so that a
// missing plan setting cannot silently disable limiting.
var ErrInvalidLimit = errors.New("ratelimit: per-minute limit out of range")

// Limiter decides whether one more request under key is allowed.
//
// An error means no decision was made (for example Redis was unreachable);
// the caller chooses whether to fail open or closed.
type Limiter interface {
	Allow(ctx context.Context, key string, perMinute int) (Result, error)
}

// Result is the outcome of one Allow call, shaped for rate-limit response
// headers.
type Result struct {
	// Allowed reports whether the request may proceed. A refused request
	// does not consume any budget.
	Allowed bool
	// Limit is the per-minute limit applied.
	Limit int
	// Remaining is how many more requests would be allowed right now,
	// after this one; never negative.
	Remaining int
	// RetryAfter is, when Allowed is false, how long until one request
	// would be allowed (always > 0); it is 0 when Allowed is true.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again, that is until
	// Remaining would equal Limit.
	ResetAfter time.Duration
	// Degraded reports that Fallback's local limiter decided because the
	// shared store (Redis) could not: the budget behind this Result is this
	// process's alone, not the one shared by every replica.
	Degraded bool
}

// period is the window the limit is expressed over, in microseconds.
// Microseconds rather than nanoseconds because the Lua mirror of gcra works
// in float64, which holds Unix time in microseconds exactly but not in
// nanoseconds.
const period = int64(time.Minute / time.Microsecond)

// decision is gcra's verdict; every time in it is in microseconds.
type decision struct {
	allowed    bool
	tat        int64 // TAT to store; only meaningful when allowed
	remaining  int64
	retryAfter int64
	resetAfter int64
}

// gcra decides one request. tat is the stored theoretical arrival time (0 or
// any past instant when the key is new), now the current time, both in Unix
// microseconds. perMinute must already be validated.
//
// The Lua script in redis.go mirrors this line for line; change both or
// neither (TestLuaMatchesGo checks).
func gcra(tat, now int64, perMinute int) decision {
	limit := int64(perMinute)
	// Flooring makes the refill up to 1µs per request faster than exact;
	// keeping it integral keeps Go and Lua bit-identical.
	interval := max(period/limit, 1)
	// window is how far ahead of now the TAT may run: a full bucket's worth.
	window := limit * interval

	tat = max(tat, now)
	newTAT := tat + interval
	allowAt := newTAT - window
	if now < allowAt {
		return decision{
			allowed:    false,
			tat:        tat,
			remaining:  0,
			retryAfter: allowAt - now,
			resetAfter: tat - now,
		}
	}
	resetAfter := newTAT - now
	return decision{
		allowed:    true,
		tat:        newTAT,
		remaining:  (window - resetAfter) / interval,
		retryAfter: 0,
		resetAfter: resetAfter,
	}
}

func validLimit(perMinute int) bool {
	return perMinute >= 1 && perMinute <= MaxPerMinute
}

func (d decision) result(perMinute int) Result {
	return Result{
		Allowed:    d.allowed,
		Limit:      perMinute,
		Remaining:  int(d.remaining),
		RetryAfter: time.Duration(d.retryAfter) * time.Microsecond,
		ResetAfter: time.Duration(d.resetAfter) * time.Microsecond,
	}
}
