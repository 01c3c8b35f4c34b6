//go:build linux

package main

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
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

// The kernel sends Pdeathsig when the thread that started the child ends,
// not herald (go.dev/issue/27505), and Go ends a thread when a goroutine
// locked to it returns: a command started from such a thread would be
// killed while herald still holds its leadership, and the next holder's
// copy would start beside whatever it left. Every command with a
// Pdeathsig is therefore started from one thread that never ends.
var spawner struct {
	once sync.Once
	reqs chan func()
}

// startCmd starts cmd from the spawner's thread.
func startCmd(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		go spawnLoop(spawner.reqs)
	})
	done := make(chan error, 1)
	spawner.reqs <- func() { done <- cmd.Start() }
	return <-done
}

// spawnLoop runs what reqs brings on its own thread, for good: it never
// returns, so that thread never ends.
func spawnLoop(reqs <-chan func()) {
	runtime.LockOSThread() // never unlocked
	for f := range reqs {
		f()
	}
}
