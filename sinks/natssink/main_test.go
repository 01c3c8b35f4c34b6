package natssink_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/zkherald/herald/internal/natsserver"
)

// url is the package's shared server; tests that stop a server or need
// authentication start their own.
var url string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
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
	return code
}
