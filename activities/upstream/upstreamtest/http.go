package upstreamtest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"time"
)

// Serve starts h on l, or on a fresh loopback port when l is nil (a test
// server's WithListener: a fixed address for `memocart dev`). Closing the
// server closes l.
func Serve(h http.Handler, l net.Listener) *httptest.Server {
	if l == nil {
		return httptest.NewServer(h)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv
}

// WriteJSON answers status with v as an application/json body. A v that
// does not marshal is the test server's bug, and panics.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("upstreamtest: rendering JSON: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Wait holds a request back for d, and reports whether it waited the whole
// time: false when the request ended first, or done (the server's
// closing; nil for none) was closed.
func Wait(r *http.Request, done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-done:
	}
	return false
}
