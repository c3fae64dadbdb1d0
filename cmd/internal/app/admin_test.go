package app

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdminListener: pprof is served on the admin address when asked for,
// and only there.
func TestAdminListener(t *testing.T) {
	e := Env{Cfg: Config{AdminAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:8080"}, Log: slog.New(slog.DiscardHandler)}
	addr, stop, err := StartAdmin(t.Context(), e)
	require.NoError(t, err)
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(string(body), "heap profile:"), "a heap profile: %.60s", body)

	// Liveness for processes without a public listener (the worker).
	resp, err = http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", string(body))

	off := Env{Cfg: Config{HTTPAddr: "127.0.0.1:8080"}, Log: slog.New(slog.DiscardHandler)}
	addr, stop, err = StartAdmin(t.Context(), off)
	require.NoError(t, err)
	stop()
	assert.Empty(t, addr, "no listener unless configured")

	same := Env{Cfg: Config{AdminAddr: "127.0.0.1:8080", HTTPAddr: "127.0.0.1:8080"}, Log: slog.New(slog.DiscardHandler)}
	_, _, err = StartAdmin(t.Context(), same)
	assert.ErrorContains(t, err, "must differ")
}
