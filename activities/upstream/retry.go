package upstream

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Retry is how a provider's client retries one call: again after a
// failure that may pass, within Attempts and the caller's deadline, and
// once more with a fresh token after a 401.
type Retry struct {
	Attempts int // calls at most, the fresh token's aside
	Backoff  Backoff
	// MaxWait bounds one wait: a longer Retry-After is answered at once,
	// not waited out with the client.
	MaxWait time.Duration
	// Sleep waits between calls (Sleep when nil); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Failure is a failed call as Retry reads it: a provider's own upstream
// error type implements it.
type Failure interface {
	error
	// HTTPStatus is the answer's status, 0 when none arrived.
	HTTPStatus() int
	// Retryable reports whether the failure may pass: throttling, an
	// outage, a timeout.
	Retryable() bool
	// RetryAfterWait is the provider's advised wait, 0 when none.
	RetryAfterWait() time.Duration
}

// Stop says why Do returned.
type Stop int

const (
	// Answered: the call succeeded, or failed with an error that is no
	// Failure (an answer about the thing asked, or a call not made for
	// another reason than time).
	Answered Stop = iota
	// Unauthorized: a 401 again, with a fresh token.
	Unauthorized
	// Final: a Failure that cannot pass.
	Final
	// Exhausted: the attempts are used up.
	Exhausted
	// NoTime: the next wait is beyond MaxWait or the caller's deadline,
	// the call was not made for want of time (ErrNoTime), or the caller
	// gave up (err is then ctx's, or the call's). It is the caller's
	// deadline, not the provider: still "retry later".
	NoTime
)

// ErrNoTime marks a call not made because the caller's deadline would
// pass first.
var ErrNoTime = errors.New("not enough time left before the deadline")

// Do makes call as r says and returns its last value, why it stopped,
// the attempts made and its last error. The caller turns a stop into its own
// answer and log line.
func Do[T any](ctx context.Context, r Retry, call func() (T, error)) (v T, stop Stop, attempt int, err error) {
	sleep := r.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	refreshed := false
	for attempt = 1; ; {
		v, err = call()
		var f Failure
		if err != nil && !errors.As(err, &f) && (errors.Is(err, ErrNoTime) || ctx.Err() != nil) {
			return v, NoTime, attempt, err
		}
		if err == nil || !errors.As(err, &f) {
			return v, Answered, attempt, err
		}
		switch {
		case f.HTTPStatus() == http.StatusUnauthorized && !refreshed:
			// The token expired or was revoked early: the call dropped
			// it, and the next fetches a fresh one.
			refreshed = true
			continue
		case f.HTTPStatus() == http.StatusUnauthorized:
			return v, Unauthorized, attempt, err
		case !f.Retryable():
			return v, Final, attempt, err
		case attempt >= r.Attempts:
			return v, Exhausted, attempt, err
		}
		wait := max(r.Backoff.Wait(attempt), f.RetryAfterWait())
		if wait > r.MaxWait || !Fits(ctx, wait) {
			return v, NoTime, attempt, err
		}
		if serr := sleep(ctx, wait); serr != nil {
			return v, NoTime, attempt, serr
		}
		attempt++
	}
}
