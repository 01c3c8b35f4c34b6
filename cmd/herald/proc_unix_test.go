//go:build unix

package main

import "syscall"

// What the tests do to processes, kept here so that the tests build where
// there are no such signals (proc_windows_test.go).
const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
	sigTSTP = syscall.SIGTSTP
)

// signalPID sends sig to the process (or, pid negative, the process group).
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// ownProcessGroup starts a process in a process group of its own.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// mkfifo makes a named pipe at path.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
