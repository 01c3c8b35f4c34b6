//go:build linux

package main

import (
	"os"
	"syscall"
)

// childProcAttr puts the child in its own process group, and has the kernel
// kill it if herald dies (SIGKILL included): a child must never outlive the
// runner that holds its leadership. What the child started is the
// watchdog's to stop (see watchdog_unix.go).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// bornIn has the child born in the cgroup dir is open on (clone3 with
// CLONE_INTO_CGROUP, Linux 5.7).
func bornIn(attr *syscall.SysProcAttr, dir *os.File) {
	attr.UseCgroupFD, attr.CgroupFD = true, int(dir.Fd())
}
