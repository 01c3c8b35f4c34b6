//go:build linux

package main

import "syscall"

// childProcAttr puts the child in its own process group, and has the kernel
// kill it if herald dies (SIGKILL included): a child must never outlive the
// runner that holds its leadership. What the child started is the
// watchdog's to stop (see watchdog_unix.go).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
