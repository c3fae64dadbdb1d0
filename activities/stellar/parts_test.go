package stellar

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []event
	}{
		{"horizon hello and a record",
			"retry: 1000\nevent: open\ndata: \"hello\"\n\nid: 12\ndata: {\"id\":\"12\"}\n\n",
			[]event{{Event: "open", Data: `"hello"`}, {ID: "12", Data: `{"id":"12"}`}}},
		{"comments are skipped", ": keepalive\n\n:x\ndata: a\n\n", []event{{Data: "a"}}},
		{"CRLF line ends", "id: 1\r\ndata: a\r\n\r\n", []event{{ID: "1", Data: "a"}}},
		{"multi-line data", "data: a\ndata: b\n\n", []event{{Data: "a\nb"}}},
		{"no space after colon", "data:a\n\n", []event{{Data: "a"}}},
		{"only the first space is dropped", "data:  a\n\n", []event{{Data: " a"}}},
		{"events without data are not dispatched", "id: 5\n\nevent: x\n\ndata: a\n\n", []event{{Data: "a"}}},
		{"closing event", "retry: 10\nevent: close\ndata: \"byebye\"\n\n", []event{{Event: "close", Data: `"byebye"`}}},
		{"an event cut off by the end is dropped", "data: a\n\ndata: b\n", []event{{Data: "a"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := 0
			r := newSSEReader(strings.NewReader(tc.input), func() { lines++ })
			var got []event
			for {
				ev, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				got = append(got, ev)
			}
			assert.Equal(t, tc.want, got)
			assert.Positive(t, lines, "every line is a sign of life")
		})
	}
}

func TestSSEReaderError(t *testing.T) {
	boom := errors.New("connection reset")
	r := newSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)), nil)
	ev, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "a", ev.Data)
	_, err = r.Next()
	assert.ErrorIs(t, err, boom, "a read error is not a clean end")
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 2 ", 2 * time.Second},
		{"-5", 0},
		{"junk", 0},
		{"99999", maxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, retryAfter(tc.header, now), "Retry-After %q", tc.header)
	}
}

func TestHTTPErrorKinds(t *testing.T) {
	tests := []struct {
		name          string
		err           httpError
		beforeHistory bool
		permanent     bool
	}{
		{"before history", httpError{Status: 410, Type: "https://stellar.org/horizon-errors/before_history"}, true, false},
		{"gone for another reason", httpError{Status: 410, Type: "https://example.com/moved"}, false, false},
		{"before_history type on another status", httpError{Status: 500, Type: "before_history"}, false, false},
		{"bad request", httpError{Status: 400}, false, true},
		{"not found is retried", httpError{Status: 404}, false, false},
		{"rate limited", httpError{Status: 429}, false, false},
		{"server error", httpError{Status: 503}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.beforeHistory, tc.err.beforeHistory())
			assert.Equal(t, tc.permanent, tc.err.permanent())
		})
	}
}

func TestBackoff(t *testing.T) {
	b := newBackoff(100*time.Millisecond, time.Second)
	b.jitter = func(n int64) int64 { return n - 1 } // the top of each range
	var got []time.Duration
	for range 6 {
		got = append(got, b.next())
	}
	assert.Equal(t, []time.Duration{100, 200, 400, 800, 1000, 1000}, scale(got, time.Millisecond))
	b.reset()
	assert.Equal(t, 100*time.Millisecond, b.next(), "reset starts over")
	assert.Equal(t, time.Second, b.ceiling())

	b.jitter = func(int64) int64 { return 0 } // the bottom of each range
	b.reset()
	assert.Equal(t, 50*time.Millisecond, b.next(), "jitter waits at least half the step")
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}
