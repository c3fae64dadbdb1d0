package upstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// failure is an upstream.Failure with the given status.
type failure struct {
	status int
	after  time.Duration
}

func (f failure) Error() string                 { return "failed" }
func (f failure) HTTPStatus() int               { return f.status }
func (f failure) Retryable() bool               { return f.status == 0 || f.status == 429 || f.status >= 500 }
func (f failure) RetryAfterWait() time.Duration { return f.after }

// TestDo: a call is retried while its failure may pass, within the
// attempts and MaxWait; a 401 gets one more call (a fresh token); an
// error that is no Failure is an answer, returned at once.
func TestDo(t *testing.T) {
	var slept []time.Duration
	r := Retry{Attempts: 3, Backoff: Backoff{Min: time.Millisecond, Max: time.Millisecond}, MaxWait: time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
	answers := func(errs ...error) func() (int, error) {
		n := 0
		return func() (int, error) {
			n++
			if n > len(errs) {
				return n, nil
			}
			return n, errs[n-1]
		}
	}
	answer := errors.New("no such product")
	for _, c := range []struct {
		name     string
		errs     []error
		stop     Stop
		attempts int
		ok       bool
	}{
		{"succeeds after two outages", []error{failure{status: 503}, failure{status: 0}}, Answered, 3, true},
		{"an answer is returned at once", []error{answer}, Answered, 1, false},
		{"one fresh token after a 401", []error{failure{status: 401}}, Answered, 1, true},
		{"a second 401", []error{failure{status: 401}, failure{status: 401}}, Unauthorized, 1, false},
		{"a failure that cannot pass", []error{failure{status: 400}}, Final, 1, false},
		{"the attempts used up", []error{failure{status: 503}, failure{status: 503}, failure{status: 503}}, Exhausted, 3, false},
		{"a Retry-After beyond MaxWait", []error{failure{status: 429, after: time.Hour}}, NoTime, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stop, attempts, err := Do(context.Background(), r, answers(c.errs...))
			assert.Equal(t, c.stop, stop)
			assert.Equal(t, c.attempts, attempts)
			assert.Equal(t, c.ok, err == nil, "%v", err)
		})
	}
	assert.NotEmpty(t, slept)

	// A call not made for want of time, or cut off by the caller, is the
	// caller's deadline, whatever it returned.
	_, stop, attempts, err := Do(context.Background(), r, answers(fmt.Errorf("pacing: %w", ErrNoTime)))
	assert.Equal(t, NoTime, stop)
	assert.Equal(t, 1, attempts)
	assert.ErrorIs(t, err, ErrNoTime)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, stop, _, err = Do(ctx, r, answers(errors.New("cut off")))
	assert.Equal(t, NoTime, stop)
	assert.Error(t, err)
}
