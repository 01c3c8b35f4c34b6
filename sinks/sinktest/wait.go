package sinktest

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// WaitUntil polls cond until it holds, failing the test after d.
func WaitUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not ordering
	}
}

// Goroutines counts the goroutines whose stack holds frame, such as
// "kafkasink.(*Sink).watch(": a background loop that must be gone after
// Close.
func Goroutines(frame string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), frame)
		}
		buf = make([]byte, 2*len(buf))
	}
}
