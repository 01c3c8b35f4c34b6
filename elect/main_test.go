package elect_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/heraldtest"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(lateChildEnv); spec != "" {
		os.Exit(lateObserver(spec))
	}
	if spec := os.Getenv(frozenWaiterEnv); spec != "" {
		os.Exit(frozenWaiter(spec))
	}
	if spec := os.Getenv(thawedHolderEnv); spec != "" {
		os.Exit(thawedHolder(spec))
	}
	heraldtest.Main(m, nil)
}

// groupPath returns a path no other test uses.
func groupPath(t testing.TB) string { return heraldtest.Path(t, "/t") }

func ctxT(t testing.TB, d time.Duration) context.Context { return heraldtest.Ctx(t, d) }

func session(t testing.TB, servers []string, opts ...elect.SessionOption) *elect.Session {
	t.Helper()
	return heraldtest.Session(t, servers, opts...)
}

func sharedAddrs(t testing.TB) []string {
	addrs := zktest.Shared(t).Addrs()
	openTop.Do(func() { openTopErr = elect.MakeSharedPath(session(t, addrs), "/t") })
	if openTopErr != nil {
		t.Fatalf("making /t: %v", openTopErr)
	}
	return addrs
}

// openTop makes /t, above every test's paths, open to all before any test
// runs: a root made with credentials closes the path it makes above it,
// and one made first under a missing /t closed it to every later test.
var (
	openTop    sync.Once
	openTopErr error
)

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
