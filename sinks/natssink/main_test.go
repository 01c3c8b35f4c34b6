package natssink_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
)

// url is the package's shared server; tests that stop a server or need
// authentication start their own.
var url string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	before := runtime.NumGoroutine()
	dir, err := os.MkdirTemp("", "natssink-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "natssink tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := natsserver.Run(ctx, natsserver.Config{StoreDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "natssink tests: cannot start the embedded NATS server:", err)
		return 1
	}
	url = srv.ClientURL()
	code := m.Run()
	cancel()
	srv.WaitForShutdown()
	if code == 0 && !settled(before) {
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "goroutines left running after the tests:\n%s\n", buf[:runtime.Stack(buf, true)])
		return 1
	}
	return code
}

// settled waits for the goroutine count to fall back to what it was before
// the server started: a leak check.
func settled(before int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	return true
}
