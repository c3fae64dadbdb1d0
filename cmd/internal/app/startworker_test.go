package app

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
)

// fakeStarter fails its Start with the error its build gave it.
type fakeStarter struct {
	err     error
	started *int
}

func (f fakeStarter) Start() error {
	if f.err == nil {
		*f.started++
	}
	return f.err
}

func (fakeStarter) Stop() {}

// TestStartWorkerRetriesWhileTemporalIsUnreachable: a worker whose start
// finds Temporal gone (the server killed between the client's dial and the
// worker's start, as make chaos did) is built again and started once it
// answers; an error waiting cannot fix is returned at once.
func TestStartWorkerRetriesWhileTemporalIsUnreachable(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	t.Run("unreachable, then up", func(t *testing.T) {
		builds, started := 0, 0
		failures := []error{
			serviceerror.NewUnavailable("connection refused"),
			errors.Join(errors.New("worker start"), serviceerror.NewUnavailable("connection reset")), // wrapped
		}
		w, err := startWorker(t.Context(), log, time.Minute, func() starter {
			builds++
			if builds <= len(failures) {
				return fakeStarter{err: failures[builds-1], started: &started}
			}
			return fakeStarter{started: &started}
		})
		require.NoError(t, err)
		require.NotNil(t, w)
		assert.Equal(t, 3, builds, "a new worker per attempt")
		assert.Equal(t, 1, started)
	})
	t.Run("not a connectivity error", func(t *testing.T) {
		builds, started := 0, 0
		_, err := startWorker(t.Context(), log, time.Minute, func() starter {
			builds++
			return fakeStarter{err: serviceerror.NewNamespaceNotFound("nope"), started: &started}
		})
		require.Error(t, err)
		assert.Equal(t, 1, builds, "no retry")
	})
	t.Run("gives up after the bound", func(t *testing.T) {
		builds, started := 0, 0
		_, err := startWorker(t.Context(), log, 0, func() starter {
			builds++
			return fakeStarter{err: serviceerror.NewUnavailable("down"), started: &started}
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Temporal unreachable")
		assert.Equal(t, 1, builds)
	})
}
