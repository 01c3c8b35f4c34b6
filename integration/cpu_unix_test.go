//go:build unix

package integration_test

import (
	"syscall"
	"testing"
	"time"
)

// ownCPU is the CPU time this process (the Go clients) has used so far.
func ownCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
