package upstream

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is an exponential backoff from Min, doubling per attempt and
// capped at Max, with "equal jitter": each wait is uniformly between half
// and all of the step, so callers failing together do not retry in
// lockstep. The zero value waits not at all.
type Backoff struct {
	Min, Max time.Duration
	// Jitter returns a number in [0, n); nil is rand.Int64N. Tests set it
	// to pin a wait to the top or bottom of its range.
	Jitter func(n int64) int64
}

// Wait returns the wait after the attempt-th failure, the first being 1
// (as is anything lower).
func (b Backoff) Wait(attempt int) time.Duration {
	step := b.Min
	for i := 1; i < attempt && step < b.Max; i++ {
		step *= 2
	}
	step = min(step, b.Max)
	half := step / 2
	if half <= 0 {
		return step
	}
	jitter := b.Jitter
	if jitter == nil {
		jitter = rand.Int64N
	}
	return half + time.Duration(jitter(int64(step-half)+1))
}

// RetryAfter reads a Retry-After header, delay seconds or an HTTP date,
// as a wait from now. Zero when absent, unreadable, negative or past.
func RetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		switch {
		case secs < 0:
			return 0
		case secs > int64(math.MaxInt64/time.Second):
			// Longer than any caller waits; not an overflow into a
			// negative wait that would retry at once.
			return math.MaxInt64
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Fits reports whether waiting d still leaves ctx time for a request.
func Fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}

// Sleep waits for d, or until ctx is done and then returns its error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
