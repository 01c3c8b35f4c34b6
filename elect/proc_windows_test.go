//go:build windows

package elect_test

import "syscall"

// Windows cannot freeze a process with a signal: os.Process.Signal refuses
// these, and the tests that freeze a child fail saying so.
const (
	sigStop = syscall.Signal(0x13)
	sigCont = syscall.Signal(0x12)
)
