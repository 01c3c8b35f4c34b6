package main

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// logPipe is the writer of run's and lock's log. Their control path logs
// before it acts ("lost leadership; stopping the child"), and a write to a
// standard error nobody reads (Ctrl-S on the terminal, `| less` paused, a
// stuck log shipper) blocks once the pipe is full: the command ran on
// beside the next owner for as long. So the log goes through a queue,
// written out by a goroutine of its own; a line that finds the queue full
// is dropped and counted, and the count written before the next line that
// gets through. The command's own output does not go through it: the
// command writes to herald's file descriptors itself.
type logPipe struct {
	out     io.Writer
	lines   chan []byte
	pending atomic.Int64 // lines queued and not written yet
	dropped atomic.Int64
	mu      sync.Mutex
	broken  func() // called once when out is a pipe nobody reads any more
	once    sync.Once
}

// logQueue is how many lines the log holds while standard error is blocked.
const logQueue = 1024

func newLogPipe(out io.Writer) *logPipe {
	l := &logPipe{out: out, lines: make(chan []byte, logQueue)}
	go l.writeOut()
	return l
}

// Write queues a copy of p (a handler reuses its buffer), or drops it when
// the queue is full. It never blocks and never fails.
func (l *logPipe) Write(p []byte) (int, error) {
	if !l.put(append([]byte(nil), p...)) {
		l.dropped.Add(1)
	}
	return len(p), nil
}

// put queues b unless the queue is full, and reports whether it did.
func (l *logPipe) put(b []byte) bool {
	l.pending.Add(1)
	select {
	case l.lines <- b:
		return true
	default:
		l.pending.Add(-1)
		return false
	}
}

func (l *logPipe) writeOut() {
	for b := range l.lines {
		if n := l.dropped.Swap(0); n > 0 {
			l.write([]byte(fmt.Sprintf("herald: %d log lines dropped: standard error took nothing for a while\n", n)))
		}
		l.write(b)
		l.pending.Add(-1)
	}
}

func (l *logPipe) write(b []byte) {
	if len(b) == 0 {
		return
	}
	if _, err := l.out.Write(b); errors.Is(err, syscall.EPIPE) {
		l.mu.Lock()
		f := l.broken
		l.mu.Unlock()
		if f != nil {
			l.once.Do(f)
		}
	}
}

// onBroken has f called, once, when a write finds standard error a pipe
// nobody reads any more (EPIPE). Go's runtime would have ended herald with
// SIGPIPE there, unless the signal is caught (see holderContext).
func (l *logPipe) onBroken(f func()) {
	l.mu.Lock()
	l.broken = f
	l.mu.Unlock()
}

// flush waits, at most d, until the lines queued are written (and a count
// of lines dropped, if any).
func (l *logPipe) flush(d time.Duration) {
	if l.dropped.Load() > 0 {
		l.put(nil) // the count goes out before it
	}
	for end := time.Now().Add(d); l.pending.Load() > 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
}
