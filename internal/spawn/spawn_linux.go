package spawn

import (
	"os/exec"
	"runtime"
	"sync"
)

var spawner struct {
	once sync.Once
	reqs chan func()
}

// Start starts cmd from the spawner's thread.
func Start(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		go loop(spawner.reqs)
	})
	done := make(chan error, 1)
	spawner.reqs <- func() { done <- cmd.Start() }
	return <-done
}

// loop runs what reqs brings on its own thread, for good: it never
// returns, so that thread never ends.
func loop(reqs <-chan func()) {
	runtime.LockOSThread() // never unlocked
	for f := range reqs {
		f()
	}
}
