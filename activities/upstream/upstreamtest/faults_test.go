package upstreamtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFaults: rate limits are taken before failures, each by one request,
// and every request carries the latency set.
func TestFaults(t *testing.T) {
	var f Faults
	assert.Equal(t, Fault{}, f.Take(), "the zero value injects nothing")
	f.FailNext(503, 1)
	f.RateLimitNext(1, 1500*time.Millisecond)
	f.SetLatency(time.Second)
	first := f.Take()
	assert.Equal(t, Fault{Status: 429, RetryAfter: 1500 * time.Millisecond, Latency: time.Second}, first)
	assert.Equal(t, 2, first.RetryAfterSeconds())
	assert.Equal(t, Fault{Status: 503, Latency: time.Second}, f.Take())
	assert.Equal(t, Fault{Latency: time.Second}, f.Take())
}

// TestWait: a request is held back the whole time unless the server's
// closing or the request's end cuts it short.
func TestWait(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	assert.True(t, Wait(r, nil, 0))
	assert.True(t, Wait(r, nil, time.Millisecond))
	done := make(chan struct{})
	close(done)
	assert.False(t, Wait(r, done, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, Wait(r.WithContext(ctx), nil, time.Hour))
}
