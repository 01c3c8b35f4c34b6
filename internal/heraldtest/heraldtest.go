// Package heraldtest holds the small helpers herald's test packages share:
// unique ZooKeeper paths, bounded contexts and sessions closed with the
// test.
package heraldtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/spawn"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

var seq atomic.Int64

// Path returns a path below root that no other test (or run) uses, named
// after the test: root/<test name>[/<suffix>]-<time>-<n>.
func Path(t testing.TB, root string, suffix ...string) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	if len(suffix) > 0 {
		name += "/" + strings.Join(suffix, "-")
	}
	return fmt.Sprintf("%s/%s-%d-%d", root, name, time.Now().UnixNano()%1e6, seq.Add(1))
}

// Ctx returns a context that ends after d or when the test ends.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Session opens a herald session (4 s timeout unless opts say otherwise)
// that is closed when the test ends.
func Session(t testing.TB, servers []string, opts ...elect.SessionOption) *elect.Session {
	t.Helper()
	opts = append([]elect.SessionOption{elect.WithSessionTimeout(4 * time.Second)}, opts...)
	s, err := elect.NewSession(Ctx(t, 30*time.Second), servers, opts...)
	if err != nil {
		t.Fatalf("herald session on %v: %v", servers, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Main runs a package's tests, closes the shared ZooKeeper (zktest.Shared)
// and whatever cleanup stops, then fails the run if goroutines are left
// (ignore names those a dependency keeps on purpose). Use it as the whole
// body of TestMain.
func Main(m *testing.M, cleanup func(), ignore ...goleak.Option) {
	// The thread the ZooKeeper servers are started from lives for good.
	ignore = append(ignore, goleak.IgnoreTopFunction(spawn.LoopFunc))
	code := m.Run()
	if err := zktest.CloseShared(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "close shared ZooKeeper:", err)
		code = 1
	}
	if cleanup != nil {
		cleanup()
	}
	if code == 0 {
		// Every session, watcher and background release must be gone.
		// A client closing behind a caller it did not keep waiting
		// (elect.NewSession giving up) ends within its second's wait
		// for an answer: look once more after that before calling it
		// a leak.
		err := goleak.Find(ignore...)
		if err != nil {
			time.Sleep(1500 * time.Millisecond)
			err = goleak.Find(ignore...)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
