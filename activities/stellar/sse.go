package stellar

import (
	"bufio"
	"io"
	"strings"
)

// maxEventSize bounds one SSE line. A record with its joined transaction
// carries the transaction's XDR, which Soroban transactions make large;
// anything beyond this is not Horizon.
const maxEventSize = 16 << 20

// event is one dispatched Server-Sent Event.
type event struct {
	ID    string
	Event string
	Data  string
}

// sseReader parses a text/event-stream as the HTML standard defines it:
// "field: value" lines, lines starting with ":" are comments, and a blank
// line dispatches the event gathered so far. Lines may end in LF or CRLF.
type sseReader struct {
	sc *bufio.Scanner
	// onLine is called for every line read, comments included, so the
	// caller can treat keep-alives as signs of life.
	onLine func()
}

func newSSEReader(r io.Reader, onLine func()) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventSize)
	if onLine == nil {
		onLine = func() {}
	}
	return &sseReader{sc: sc, onLine: onLine}
}

// Next returns the next event that carries data. It returns io.EOF when the
// stream ends cleanly between events, and the read error otherwise; an
// event cut off by the end of the stream is dropped, as the standard says.
func (s *sseReader) Next() (event, error) {
	var ev event
	var data strings.Builder
	hasData := false
	for s.sc.Scan() {
		s.onLine()
		line := s.sc.Text()
		if line == "" {
			if !hasData {
				ev = event{}
				continue
			}
			ev.Data = data.String()
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "retry":
			// The server's reconnection hint; the watcher's own backoff
			// decides instead.
		}
	}
	if err := s.sc.Err(); err != nil {
		return event{}, err
	}
	return event{}, io.EOF
}
