// Package loadtest drives load at a running Memocart and at the references
// it is measured against (pgbench on the same Postgres server, bare
// StartWorkflow calls on the same Temporal server), and summarises what it
// measured. `devstack loadtest` puts the pieces together; nothing here runs
// in `make test`'s path except this package's own unit tests.
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is what one run measured: how many calls completed in how long,
// each successful call's latency, and the failures.
type Sample struct {
	// Calls is the number of calls that completed, successful or not.
	Calls   int
	Elapsed time.Duration
	// Latencies of the successful calls, sorted.
	Latencies []time.Duration
	Errors    int
	FirstErr  error
	// Late is, for an open-loop run, how many calls could not start on
	// schedule because MaxInFlight calls were already running: the service
	// was slower than the offered rate.
	Late int
}

// Rate is successful calls per second.
func (s Sample) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(len(s.Latencies)) / s.Elapsed.Seconds()
}

// Quantile returns the q-quantile (0..1) of the successful calls'
// latencies, nearest rank; 0 when there were none.
func (s Sample) Quantile(q float64) time.Duration { return Quantile(s.Latencies, q) }

// Quantile returns the q-quantile (0..1) of sorted durations, nearest
// rank; 0 when there are none.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(q*float64(n)+0.5) - 1
	i = max(0, min(n-1, i))
	return sorted[i]
}

// Err summarises the failures, nil when there were none.
func (s Sample) Err() error {
	if s.Errors == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d calls failed, first: %w", s.Errors, s.Calls, s.FirstErr)
}

// recorder collects latencies and errors from concurrent callers.
type recorder struct {
	mu       sync.Mutex
	lat      []time.Duration
	calls    int
	errors   int
	firstErr error
}

func (r *recorder) record(d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if err != nil {
		r.errors++
		if r.firstErr == nil {
			r.firstErr = err
		}
		return
	}
	r.lat = append(r.lat, d)
}

func (r *recorder) sample(elapsed time.Duration, late int) Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	return Sample{Calls: r.calls, Elapsed: elapsed, Latencies: lat, Errors: r.errors, FirstErr: r.firstErr, Late: late}
}

// Closed runs call from conc goroutines, each starting its next call when
// the previous one returns, until d has passed: the closed-loop maximum
// rate at that concurrency. call gets the goroutine's index and its
// running count.
func Closed(ctx context.Context, conc int, d time.Duration, call func(ctx context.Context, worker, i int) error) Sample {
	var rec recorder
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				err := call(ctx, w, i)
				rec.record(time.Since(t0), err)
			}
		})
	}
	wg.Wait()
	return rec.sample(time.Since(start), 0)
}

// Count makes n calls from conc goroutines and measures how long they all
// took. call gets the call's index, 0..n-1, each exactly once.
func Count(ctx context.Context, conc, n int, call func(ctx context.Context, i int) error) Sample {
	var rec recorder
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				err := call(ctx, i)
				rec.record(time.Since(t0), err)
			}
		})
	}
	wg.Wait()
	return rec.sample(time.Since(start), 0)
}

// Open starts calls at a fixed rate (per second) for d, whatever the
// service does: the open-loop load a population of independent clients
// offers. Each call's latency counts from the moment it was due, not from
// when it could start, so a stalled service shows in the figures
// (no coordinated omission). At most maxInFlight calls run at once; a call
// due while that many are running waits for one to finish and counts as
// late.
func Open(ctx context.Context, rate float64, d time.Duration, maxInFlight int, call func(ctx context.Context, i int) error) (Sample, error) {
	if rate <= 0 || maxInFlight <= 0 {
		return Sample{}, errors.New("loadtest: open loop needs a positive rate and concurrency")
	}
	var rec recorder
	interval := time.Duration(float64(time.Second) / rate)
	n := int(d / interval)
	slots := make(chan struct{}, maxInFlight)
	late := 0
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case slots <- struct{}{}:
		default:
			late++
			slots <- struct{}{}
		}
		wg.Go(func() {
			defer func() { <-slots }()
			err := call(ctx, i)
			rec.record(time.Since(due), err)
		})
	}
	wg.Wait()
	return rec.sample(time.Since(start), late), nil
}

// Median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
