package publish

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package when goroutines outlive the tests: every
// pipeline worker must be gone once its Close returned. It compares the
// goroutine count before and after, waiting up to a deadline, and ignores
// goroutines the runtime or the fuzzing engine keep (signal handling).
func TestMain(m *testing.M) {
	before := counted()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for counted() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := counted(); n > before {
			fmt.Fprintf(os.Stderr, "goroutine leak: %d before, %d after\n%s\n", before, n, stacks())
			code = 1
		}
	}
	os.Exit(code)
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

func counted() int {
	n := 0
	for _, g := range strings.Split(stacks(), "\n\n") {
		if strings.Contains(g, "os/signal.") {
			continue
		}
		n++
	}
	return n
}
