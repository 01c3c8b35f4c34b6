// Package zktest starts real ZooKeeper servers for Go tests, on top of
// zkserver.
//
// ForTest gives a test its own standalone server or ensemble, closed by
// t.Cleanup. Shared gives every test of a binary the same standalone
// server; Main closes it after the tests:
//
//	func TestMain(m *testing.M) { zktest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		zk := zktest.Shared(t)
//		conn, _, err := zk.Connect(zk.Addrs(), time.Second) // go-zookeeper
//		...
//	}
//
// When Java or ZooKeeper is missing, both fail the test with one clear
// message if HERALD_REQUIRE_SERVERS=1 (CI), and skip it with the same
// message otherwise. Any other start failure always fails the test.
package zktest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/zkserver"
)

// RequireEnv is the environment variable that turns a missing server into
// a test failure instead of a skip.
const RequireEnv = "HERALD_REQUIRE_SERVERS"

// startTimeout bounds a test's server start.
const startTimeout = 90 * time.Second

// ForTest starts a cluster for t and closes it when t ends.
func ForTest(t testing.TB, cfg zkserver.Config) *zkserver.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := zkserver.Start(ctx, cfg)
	if err != nil {
		fail(t, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("zktest: close ZooKeeper: %v", err)
		}
	})
	return c
}

var shared struct {
	mu sync.Mutex
	c  *zkserver.Cluster
	// err remembers a failed start so later tests fail or skip at once.
	err error
	// prepare, when set (SharedPrepare), runs once on the shared server
	// right after it starts, before any test uses it.
	prepare func(*zkserver.Cluster) error
}

// SharedPrepare sets f to run once on the shared server right after it
// starts, before any test of the binary sees it (call it from TestMain):
// to make what every test takes for granted, such as an open parent that
// whichever test came first would otherwise make with its own ACL. Its
// error fails every test that asks for the server.
func SharedPrepare(f func(*zkserver.Cluster) error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.prepare = f
}

// Shared returns the standalone server shared by every test of this test
// binary, starting it on first use. It is not closed by t.Cleanup: call
// CloseShared from TestMain, or use Main. Tests sharing it must use unique
// paths.
func Shared(t testing.TB) *zkserver.Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil && shared.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		shared.c, shared.err = zkserver.Start(ctx, zkserver.Config{})
		cancel()
		if shared.err == nil && shared.prepare != nil {
			shared.err = shared.prepare(shared.c)
		}
	}
	if shared.err != nil {
		fail(t, shared.err)
	}
	return shared.c
}

// CloseShared stops the shared server, if one was started.
func CloseShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil {
		return nil
	}
	err := shared.c.Close()
	shared.c, shared.err = nil, nil
	return err
}

// Main runs the tests, closes the shared server and exits with the tests'
// status. Use it as the whole body of TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := CloseShared(); err != nil && code == 0 {
		os.Stderr.WriteString("zktest: close shared ZooKeeper: " + err.Error() + "\n")
		code = 1
	}
	os.Exit(code)
}

func fail(t testing.TB, err error) {
	t.Helper()
	if zkserver.IsNotInstalled(err) && os.Getenv(RequireEnv) != "1" {
		t.Skipf("%v (set %s=1 to fail instead of skipping)", err, RequireEnv)
	}
	t.Fatal(err)
}
