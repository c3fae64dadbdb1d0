package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/memocart/memocart/models"
)

func TestKeyCache(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	c := newKeyCache(5*time.Second, func() time.Time { return now })
	calls := 0
	var answer error
	lookup := func(_ context.Context, hash string) (models.APIKey, error) {
		calls++
		if answer != nil {
			return models.APIKey{}, answer
		}
		return models.APIKey{ID: "key_" + hash}, nil
	}
	ctx := context.Background()

	k, err := c.authenticate(ctx, "a", lookup)
	require.NoError(t, err)
	assert.Equal(t, "key_a", k.ID)
	_, _ = c.authenticate(ctx, "a", lookup)
	assert.Equal(t, 1, calls, "a known key is read once per lifetime")

	now = now.Add(5 * time.Second)
	_, _ = c.authenticate(ctx, "a", lookup)
	assert.Equal(t, 2, calls, "and read again once it expires")

	answer = models.ErrInvalidAPIKey
	_, err = c.authenticate(ctx, "b", lookup)
	require.ErrorIs(t, err, models.ErrInvalidAPIKey)
	_, err = c.authenticate(ctx, "b", lookup)
	require.ErrorIs(t, err, models.ErrInvalidAPIKey)
	assert.Equal(t, 3, calls, "an unknown key is remembered too")

	answer = errors.New("database down")
	for range 2 {
		_, err = c.authenticate(ctx, "c", lookup)
		require.ErrorContains(t, err, "database down")
	}
	assert.Equal(t, 5, calls, "a failure to read is never remembered")

	answer = nil
	for i := range maxCachedKeys + 100 {
		_, _ = c.authenticate(ctx, fmt.Sprint("flood", i), lookup)
	}
	assert.LessOrEqual(t, len(c.entries), maxCachedKeys, "memory is bounded")

	off := newKeyCache(-1, func() time.Time { return now })
	calls = 0
	for range 3 {
		_, _ = off.authenticate(ctx, "a", lookup)
	}
	assert.Equal(t, 3, calls, "a negative lifetime turns the cache off")
}

// Requests that miss a key together read it once between them, and one
// that gives up waiting does not cancel the read for the others.
func TestKeyCacheSharesAMiss(t *testing.T) {
	c := newKeyCache(5*time.Second, time.Now)
	var calls atomic.Int32
	release := make(chan struct{})
	lookup := func(ctx context.Context, hash string) (models.APIKey, error) {
		calls.Add(1)
		select {
		case <-release:
			return models.APIKey{ID: "key_" + hash}, nil
		case <-ctx.Done():
			return models.APIKey{}, ctx.Err()
		}
	}
	impatient, cancel := context.WithCancel(context.Background())
	impatientErr := make(chan error, 1)
	go func() {
		_, err := c.authenticate(impatient, "a", lookup)
		impatientErr <- err
	}()
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)

	const waiters = 8
	var wg sync.WaitGroup
	ids := make(chan string, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := c.authenticate(context.Background(), "a", lookup)
			assert.NoError(t, err)
			ids <- k.ID
		}()
	}
	cancel()
	require.ErrorIs(t, <-impatientErr, context.Canceled, "the caller that gave up gets its own error")
	// Let the waiters reach the shared read before it answers.
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	close(ids)
	for id := range ids {
		assert.Equal(t, "key_a", id)
	}
	assert.Equal(t, int32(1), calls.Load(), "one read for every request that missed together")
	_, err := c.authenticate(context.Background(), "a", lookup)
	require.NoError(t, err)
	assert.Equal(t, int32(1), calls.Load(), "and its answer is cached")
}
