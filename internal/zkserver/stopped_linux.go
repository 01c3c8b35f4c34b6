package zkserver

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// waitStopped waits until every thread of pid is stopped (state T in
// /proc): SIGSTOP is delivered asynchronously, and a JVM thread may still
// answer a request for a moment after kill() returned.
func waitStopped(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	for {
		if allStopped(dir) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond) // polling the kernel's view
	}
}

func allStopped(dir string) bool {
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) {
			return false
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return false
		}
	}
	return true
}
