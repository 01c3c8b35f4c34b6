package elect_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/heraldtest"

	"go.uber.org/goleak"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := zktest.CloseShared(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "close shared ZooKeeper:", err)
		code = 1
	}
	if code == 0 {
		// Every session, watcher and background release must be gone.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// groupPath returns a path no other test uses.
func groupPath(t testing.TB) string { return heraldtest.Path(t, "/t") }

func ctxT(t testing.TB, d time.Duration) context.Context { return heraldtest.Ctx(t, d) }

func session(t testing.TB, servers []string, opts ...elect.SessionOption) *elect.Session {
	t.Helper()
	return heraldtest.Session(t, servers, opts...)
}

func sharedAddrs(t testing.TB) []string { return zktest.Shared(t).Addrs() }

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sharedCluster(t testing.TB) *zkserverCluster { return zktest.Shared(t) }

type zkserverCluster = zkserver.Cluster
