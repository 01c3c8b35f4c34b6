//go:build !unix

package main

import (
	"os"
	"syscall"
)

// childProcAttr: no process groups here; the child is signalled alone.
func childProcAttr() *syscall.SysProcAttr { return nil }

// terminateGroup cannot ask politely without process groups: it kills.
func terminateGroup(p *os.Process) error { return p.Kill() }

// killGroup kills the child.
func killGroup(p *os.Process) error { return p.Kill() }

// exitCode is the child's exit status.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return exitFailure
	}
	return ps.ExitCode()
}
