package elect_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestSessionNodeOfAnotherSessionIsNotTakenForOurs: a session node's name
// follows from its session's id, which ZooKeeper hands out one after
// another, and anyone may create under an open session root. A client
// without credentials made a lock owner's session node before the owner
// did; the owner took it for its own, wrote its release notes there
// (which no reader trusts: the node is not of the owner's session) and
// said releases were recorded in a group whose node takes no mark, so
// `herald lock` kept quiet that every handoff waits out its bound, and
// history showed each release as a deletion by someone else.
func TestSessionNodeOfAnotherSessionIsNotTakenForOurs(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root := g + "-sessions"
	owner := session(t, addrs)
	if err := elect.MakeSharedPath(owner, root); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Conn().Create(g, []byte("someone else's data"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	anyone := session(t, addrs)
	live := fmt.Sprintf("%s/session-%016x-live", root, uint64(owner.ID()))
	if _, err := anyone.Conn().Create(live, []byte("squatted"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("another client creates %s: %v", live, err)
	}
	l, err := elect.NewLock(owner, g, elect.ProveSessionEnd(), elect.SessionNodesUnder(root))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if held.ReleasesRecorded() {
		t.Error("ReleasesRecorded = true: the only place for a record is a session node of another session, whose notes count for nothing")
	}
	b, st, err := anyone.Conn().Get(live)
	switch {
	case err != nil:
		t.Fatal(err)
	case string(b) != "squatted" || st.Version != 0:
		t.Errorf("the other session's node was written by the lock's owner (version %d): %s", st.Version, b)
	}
}

// TestSessionNodeOfAnotherSessionInTheOfficeIsNotTakenForOurs: the same
// in an election's office, where anyone may create in a group open to
// all: the copy says whose node it found, and keeps none.
func TestSessionNodeOfAnotherSessionInTheOfficeIsNotTakenForOurs(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	var log lockedBuf
	owner := session(t, addrs, elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	anyone := session(t, addrs)
	for _, p := range []string{g, g + "/" + elect.OfficeNode} {
		if err := elect.MakeSharedPath(anyone, p); err != nil {
			t.Fatal(err)
		}
	}
	live := g + "/" + elect.OfficeNode + "/" + elect.SessionNodeName(owner.ID())
	if _, err := anyone.Conn().Create(live, []byte("squatted"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("another client creates %s: %v", live, err)
	}
	e, err := elect.NewElection(owner, g, elect.ProveSessionEnd())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Campaign(ctxT(t, 20*time.Second), "owner"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "our session node's name was taken by another session") {
		t.Errorf("no word of the session node another session made under our name:\n%s", log.String())
	}
}
