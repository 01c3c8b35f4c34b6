package natsserver

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain runs a package's tests against one embedded server with
// JetStream, passing its URL to setURL first, and fails the run when
// goroutines are left behind after the server stopped (a leak check).
// Use it as the whole body of TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(natsserver.TestMain(m, func(u string) { url = u })) }
func TestMain(m *testing.M, setURL func(string)) int {
	before := runtime.NumGoroutine()
	dir, err := os.MkdirTemp("", "herald-nats-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsserver:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Run(ctx, Config{StoreDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsserver: cannot start the embedded NATS server:", err)
		return 1
	}
	setURL(srv.ClientURL())
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
// the server started.
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
