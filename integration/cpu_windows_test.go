//go:build windows

package integration_test

import (
	"syscall"
	"testing"
	"time"
)

// ownCPU is the CPU time this process (the Go clients) has used so far:
// its kernel and user times, which Windows counts in 100 ns units.
func ownCPU(b *testing.B) time.Duration {
	b.Helper()
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		b.Fatal(err)
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		b.Fatal(err)
	}
	units := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((units(kernel) + units(user)) * 100)
}
