package zkserver

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// sysProcAttr puts the server in its own process group and has the kernel
// kill it when the process that started it dies, so a crashed or killed
// test binary leaves no ZooKeeper behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// The kernel sends Pdeathsig when the thread that started the server
// ends, not the process (go.dev/issue/27505), and Go ends a thread when
// a goroutine locked to it returns: a test that locks a thread of its
// own (a ptrace tracer) and returns on the thread a server was started
// from killed that server under the test binary's other tests. Every
// server is therefore started from one thread that never ends.
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
// returns, and test binaries' leak checks pass it over (SpawnerFunc).
func spawnLoop(reqs <-chan func()) {
	runtime.LockOSThread() // never unlocked
	for f := range reqs {
		f()
	}
}
