package sinktest

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuf is a log a sink writes while a test reads it (give it to
// slog.NewTextHandler).
type LogBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LogBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Count is how many lines hold both level (as slog's text handler writes
// it) and msg.
func (l *LogBuf) Count(level, msg string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, "level="+level) && strings.Contains(line, msg) {
			n++
		}
	}
	return n
}
