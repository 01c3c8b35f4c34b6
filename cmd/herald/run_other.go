//go:build !unix

package main

import (
	"os"
	"syscall"
)

// childProcAttr: no process groups here; the child is signalled alone.
func childProcAttr() *syscall.SysProcAttr { return nil }

// bornIn: cgroups are Linux's; commandCgroup makes none here.
func bornIn(*syscall.SysProcAttr, *os.File) {}

// terminateGroup cannot ask politely without process groups: it kills.
func terminateGroup(p *os.Process) error { return p.Kill() }

// killGroup kills the child.
func killGroup(p *os.Process) error { return p.Kill() }

// continueGroup: nothing to continue without process groups.
func continueGroup(*os.Process) error { return nil }

// groupAlive: without process groups, nothing but the child is known.
func groupAlive(int) bool { return false }

// groupMembersBesides: see group_linux.go.
func groupMembersBesides(int, int) []string { return nil }

// groupAliveBesides: see groupAlive.
func groupAliveBesides(int, int) bool { return false }
func groupLiveBesides(int, int) bool  { return false }

// watchdogThroughStop: there is no watchdog here.
const watchdogThroughStop = false

// exitCode is the child's exit status.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return exitFailure
	}
	return ps.ExitCode()
}
