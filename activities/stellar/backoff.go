package stellar

import (
	"math/rand/v2"
	"time"
)

// backoff spaces out reconnections: exponential from min to max, with
// "equal jitter" (each wait is uniformly between half and all of the
// current step) so many watchers restarted together do not reconnect in
// lockstep.
type backoff struct {
	min, max time.Duration
	step     time.Duration // 0 after reset
	jitter   func(n int64) int64
}

func newBackoff(lo, hi time.Duration) *backoff {
	return &backoff{min: lo, max: hi, jitter: rand.Int64N}
}

// next returns the wait before the next attempt and grows the step.
func (b *backoff) next() time.Duration {
	switch {
	case b.step == 0:
		b.step = b.min
	case b.step < b.max:
		b.step = min(b.step*2, b.max)
	}
	return b.jittered(b.step)
}

// ceiling returns a wait at the maximum step, for conditions that need an
// operator rather than a quick retry.
func (b *backoff) ceiling() time.Duration {
	b.step = b.max
	return b.jittered(b.max)
}

func (b *backoff) jittered(d time.Duration) time.Duration {
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + time.Duration(b.jitter(int64(d-half)+1))
}

// reset starts the next failure streak at the minimum again.
func (b *backoff) reset() { b.step = 0 }
