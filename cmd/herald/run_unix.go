//go:build unix

package main

import (
	"os"
	"syscall"
)

// terminateGroup sends SIGTERM to the child's whole process group.
func terminateGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the child's whole process group.
func killGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }

// continueGroup sends SIGCONT to the child's whole process group, so that
// a stopped process acts on the signal it was sent.
func continueGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGCONT) }

// groupAlive reports whether process group pgid still has a process in
// it, a zombie not reaped yet included.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) != syscall.ESRCH }

// exitCode is the child's exit status, or 128+N when signal N killed it,
// as a shell reports it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return exitFailure
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
