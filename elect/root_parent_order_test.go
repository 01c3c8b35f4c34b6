package elect_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/zkherald/herald/elect"
)

// TestSessionRootRefusedAboveItIsWarnedOf: where a bridge of another
// identity made /herald first (closed to all but its identity, as it
// makes /herald/sources), a lock's copy could not make its session root
// there, and gave up its session node with a debug line only: a waiter
// behind it waited its whole bound, unwarned. It warns, once, naming
// the node that refused and what to do, as where the root refuses it.
func TestSessionRootRefusedAboveItIsWarnedOf(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	parent := g + "-herald"
	if err := elect.MakeRoot(session(t, addrs, elect.WithDigestAuth("bridge:pw")), parent+"/sources"); err != nil {
		t.Fatal(err)
	}
	var log lockedBuf
	runner := session(t, addrs, elect.WithDigestAuth("runner:pw"), elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	lockUnder(t, runner, g+"-a", parent+"/sessions")
	lockUnder(t, runner, g+"-b", parent+"/sessions")
	if n := strings.Count(log.String(), "level=WARN msg=\"no session node"); n != 1 {
		t.Errorf("warned %d times that the session root could not be made; want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), parent+" does not let this identity create there") {
		t.Errorf("the warning does not name %s:\n%s", parent, log.String())
	}
}
