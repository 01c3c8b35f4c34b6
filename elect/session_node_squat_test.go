package elect_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestSessionNodeNameTakenByAnotherSession: everyone may create under the
// session root, and a session node's name follows from its session's id,
// which the ids handed out one after another make easy to foresee. A
// client without credentials made a lock owner's session node before the
// owner did, and wrote there a note saying the owner released its node,
// vouching for the owners before. Once that node was deleted by hand
// while its owner lived on, the waiter behind took the note for the
// owner's and started at once. A note counts now only on a node of the
// owner's own session.
func TestSessionNodeNameTakenByAnotherSession(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root := g + "-sessions"
	openT(t, addrs)
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"))
	waiter := session(t, addrs, elect.WithDigestAuth("owner:pw"))
	if err := elect.MakeSharedPath(owner, root); err != nil {
		t.Fatal(err)
	}
	anyone := session(t, addrs) // no credentials
	live := fmt.Sprintf("%s/session-%016x-live", root, uint64(owner.ID()))
	if _, err := anyone.Conn().Create(live, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("a client without credentials creates %s: %v", live, err)
	}
	opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(root)}
	l, err := elect.NewLock(owner, g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	note := fmt.Sprintf(`{"herald":1,"group":%q,"node":%q,"reason":"released","vouches":true}`, g, held.Node())
	if _, err := anyone.Conn().Set(live, []byte(note), -1); err != nil {
		t.Fatalf("the other client writes its note: %v", err)
	}
	wl, err := elect.NewLock(waiter, g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	owned := make(chan *elect.Handle, 1)
	go func() {
		if h, err := wl.Acquire(ctx); err == nil {
			owned <- h
		}
	}()
	eventually(t, 10*time.Second, "the waiter's node", func() bool {
		names, _, err := owner.Conn().Children(g)
		return err == nil && len(names) == 2
	})
	if err := owner.Conn().Delete(held.NodePath(), -1); err != nil { // by hand: the owner lives on
		t.Fatal(err)
	}
	var h *elect.Handle
	select {
	case h = <-owned:
	case <-ctx.Done():
		t.Fatal("the waiter never owned")
	}
	if released, err := h.PredecessorReleased(ctx); err != nil || released {
		t.Fatalf("PredecessorReleased = %v, %v; want false: the owner's node was deleted by hand, and the note is another session's", released, err)
	}
}
