package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exchangeFailure is what Exchange's failed callback was given.
type exchangeFailure struct {
	status int
	err    error
}

func (f *exchangeFailure) Error() string { return f.err.Error() }
func (f *exchangeFailure) Unwrap() error { return f.err }

func failedAs(status int, err error) error { return &exchangeFailure{status, err} }

func TestExchange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("X-Test", "yes")
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write([]byte("0123456789"))
		case "/short":
			// A body shorter than announced: cut short.
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("partial"))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	}))
	defer srv.Close()
	get := func(ctx context.Context, path string) *http.Request {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		return req
	}

	t.Run("an answer, read within the limit", func(t *testing.T) {
		resp, body, err := Exchange(context.Background(), srv.Client(), get(context.Background(), "/ok"), 4, failedAs)
		require.NoError(t, err)
		assert.Equal(t, http.StatusTeapot, resp.StatusCode)
		assert.Equal(t, "yes", resp.Header.Get("X-Test"))
		assert.Equal(t, "0123", string(body))
	})
	t.Run("a body cut short fails with the answer's status", func(t *testing.T) {
		_, _, err := Exchange(context.Background(), srv.Client(), get(context.Background(), "/short"), 1<<10, failedAs)
		var f *exchangeFailure
		require.ErrorAs(t, err, &f)
		assert.Equal(t, http.StatusOK, f.status)
	})
	t.Run("no response fails with status 0", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		req, err := http.NewRequest(http.MethodGet, dead.URL, nil)
		require.NoError(t, err)
		_, _, err = Exchange(context.Background(), http.DefaultClient, req, 1<<10, failedAs)
		var f *exchangeFailure
		require.ErrorAs(t, err, &f)
		assert.Equal(t, 0, f.status)
	})
	t.Run("the call's own timeout fails with status 0", func(t *testing.T) {
		rctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, _, err := Exchange(context.Background(), srv.Client(), get(rctx, "/slow"), 1<<10, failedAs)
		var f *exchangeFailure
		require.ErrorAs(t, err, &f)
		assert.Equal(t, 0, f.status)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("the caller giving up is its context's error", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, _, err := Exchange(ctx, srv.Client(), get(ctx, "/slow"), 1<<10, failedAs)
		assert.Equal(t, context.DeadlineExceeded, err)
		var f *exchangeFailure
		assert.False(t, errors.As(err, &f))
	})
}
