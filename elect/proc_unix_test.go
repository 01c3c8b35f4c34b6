//go:build unix

package elect_test

import "syscall"

// The signals that freeze and thaw a test's child process, here so that
// the tests build where there are none (proc_windows_test.go).
const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)
