package elect_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestGroupOpenToAnyoneIsWarnedOf: a group made by someone else before
// herald (anyone may create under an open parent, / included) keeps its
// maker's ACL. Open to all, it lets any client write a release on the
// group node that lets the next owner start beside a running one, or
// delete an owner's node, while a copy with credentials took its group for
// protected by them and said nothing. It now says so, once per group, and
// what to run.
func TestGroupOpenToAnyoneIsWarnedOf(t *testing.T) {
	addrs := sharedAddrs(t)
	openT(t, addrs)
	g := groupPath(t)
	anyone := session(t, addrs)
	if _, err := anyone.Conn().Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var log lockedBuf
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"), elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	for range 2 {
		l, err := elect.NewLock(owner, g)
		if err != nil {
			t.Fatal(err)
		}
		h, err := l.Acquire(ctxT(t, 20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctxT(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := owner.Settle(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	const warned = "the group lets anyone write, create or delete there"
	if n := strings.Count(log.String(), warned); n != 1 || !strings.Contains(log.String(), "setAcl "+g+" digest:owner:") {
		t.Errorf("warned %d times of a group open to all, with the setAcl to run; want once:\n%s", n, log.String())
	}
	// A group of its own it does not warn of.
	lockUnder(t, owner, g+"-own", g+"-sessions")
	if err := owner.Settle(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), warned); n != 1 {
		t.Errorf("warned of the group it made itself:\n%s", log.String())
	}
}
