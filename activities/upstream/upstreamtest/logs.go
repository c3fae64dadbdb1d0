package upstreamtest

import (
	"bytes"
	"sync"
)

// LogBuffer is a log sink for a client under test: its requests log from
// several goroutines while the test reads. The zero value is ready; safe
// for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
