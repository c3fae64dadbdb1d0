package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Defaults for FallbackOptions.
const (
	// DefaultPrimaryTimeout bounds one call to the primary limiter. A
	// healthy Redis answers the GCRA script in about a millisecond.
	DefaultPrimaryTimeout = 250 * time.Millisecond
	// DefaultCooldown is how long the primary is left alone after it fails.
	DefaultCooldown = 5 * time.Second
)

// FallbackOptions configure NewFallback. The zero value is usable.
type FallbackOptions struct {
	// Timeout bounds each call to the primary; 0 means
	// DefaultPrimaryTimeout. The caller's own deadline still applies when
	// it is sooner.
	Timeout time.Duration
	// Cooldown is how long after a primary failure every call is answered
	// locally without contacting the primary; 0 means DefaultCooldown.
	Cooldown time.Duration
	// Logger receives one warning when the primary fails and one info
	// record when it answers again; nil discards them.
	Logger *slog.Logger
}

// Fallback is a Limiter that asks a primary limiter (Redis, shared by every
// replica) and, when the primary cannot decide, answers from a local one
// (Memory) instead of failing: limits and their headers stay, but the budget
// becomes per process until the primary is back.
//
//   - Each primary call gets its own deadline (Timeout). Allow returns when it
//     passes even if the primary ignores its context, so a hung primary adds
//     at most Timeout to a request.
//   - When a primary call fails, that call is answered locally and the
//     primary is marked down for Cooldown. While down, calls go straight to
//     the local limiter without waiting on anything.
//   - Once the cooldown has passed, the next call probes the primary; calls
//     arriving during the probe still go local. A successful probe marks the
//     primary up; a failed one starts another cooldown. So a dead primary
//     costs each process at most one Timeout-long wait per Cooldown.
//   - ErrInvalidLimit is returned as is, and so is any error once the
//     caller's context is done: neither says anything about the store.
//
// Results answered locally have Degraded set. The local limiter keeps its
// state across outages; it is not fed while the primary is healthy, so at
// the start of an outage each process grants each key up to a fresh burst.
type Fallback struct {
	primary  Limiter
	local    Limiter
	timeout  time.Duration
	cooldown time.Duration
	log      *slog.Logger
	now      func() time.Time

	mu        sync.Mutex
	down      bool
	downSince time.Time
	probeAt   time.Time // while down, when the next probe may start
	probing   bool      // a probe is in flight
}

// NewFallback returns a limiter that asks primary and falls back to local.
// local nil means NewMemory(nil).
func NewFallback(primary, local Limiter, opts FallbackOptions) *Fallback {
	if local == nil {
		local = NewMemory(nil)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultPrimaryTimeout
	}
	if opts.Cooldown <= 0 {
		opts.Cooldown = DefaultCooldown
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Fallback{
		primary:  primary,
		local:    local,
		timeout:  opts.Timeout,
		cooldown: opts.Cooldown,
		log:      opts.Logger,
		now:      time.Now,
	}
}

// Allow implements Limiter. Its only errors are ErrInvalidLimit and, when
// ctx is done before the primary answered, the primary's error.
func (f *Fallback) Allow(ctx context.Context, key string, perMinute int) (Result, error) {
	if !validLimit(perMinute) {
		return Result{}, fmt.Errorf("%w: %d", ErrInvalidLimit, perMinute)
	}
	usePrimary, probe := f.route()
	if !usePrimary {
		return f.allowLocal(ctx, key, perMinute)
	}
	res, err := f.allowPrimary(ctx, key, perMinute)
	switch {
	case err == nil, errors.Is(err, ErrInvalidLimit):
		// The primary answered, so it is up, even if it disliked the limit.
		if probe {
			f.markUp()
		}
		return res, err
	case ctx.Err() != nil:
		// The caller gave up (client gone, its deadline passed): no verdict
		// on the primary, and nobody is waiting for headers.
		if probe {
			f.endProbe()
		}
		return Result{}, err
	default:
		f.markDown(err, probe)
		return f.allowLocal(ctx, key, perMinute)
	}
}

// route says whether this call should ask the primary, and whether it is
// the probe that decides if a down primary is back.
func (f *Fallback) route() (usePrimary, probe bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		return true, false
	}
	if f.probing || f.now().Before(f.probeAt) {
		return false, false
	}
	f.probing = true
	return true, true
}

// allowPrimary calls the primary with its own deadline and returns by that
// deadline even if the primary does not. A call left behind finishes on its
// own; the primary's own timeouts bound how long it lingers.
func (f *Fallback) allowPrimary(ctx context.Context, key string, perMinute int) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	type reply struct {
		res Result
		err error
	}
	done := make(chan reply, 1) // buffered: a late reply must not block
	go func() {
		res, err := f.primary.Allow(ctx, key, perMinute)
		done <- reply{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-ctx.Done():
		return Result{}, fmt.Errorf("ratelimit: no answer from the primary limiter (timeout %v): %w", f.timeout, ctx.Err())
	}
}

func (f *Fallback) allowLocal(ctx context.Context, key string, perMinute int) (Result, error) {
	res, err := f.local.Allow(ctx, key, perMinute)
	if err != nil {
		return Result{}, err
	}
	res.Degraded = true
	return res, nil
}

// markDown records a primary failure. Only the first failure of an outage
// is logged; a failed probe starts a new cooldown.
func (f *Fallback) markDown(err error, probe bool) {
	f.mu.Lock()
	wasDown := f.down
	if !wasDown || probe {
		now := f.now()
		if !wasDown {
			f.down = true
			f.downSince = now
		}
		f.probeAt = now.Add(f.cooldown)
	}
	if probe {
		f.probing = false
	}
	f.mu.Unlock()

	if !wasDown {
		f.log.Warn("rate limit store unavailable; limiting per process until it answers again",
			slog.Any("error", err), slog.Duration("retry_in", f.cooldown))
	} else if probe {
		f.log.Debug("rate limit store still unavailable", slog.Any("error", err))
	}
}

// markUp records a successful probe.
func (f *Fallback) markUp() {
	f.mu.Lock()
	wasDown := f.down
	f.down = false
	f.probing = false
	downFor := f.now().Sub(f.downSince)
	f.mu.Unlock()

	if wasDown {
		f.log.Info("rate limit store answering again; shared limits restored",
			slog.Duration("down_for", downFor))
	}
}

// endProbe releases a probe that reached no verdict, so the next call
// probes instead.
func (f *Fallback) endProbe() {
	f.mu.Lock()
	f.probing = false
	f.mu.Unlock()
}
