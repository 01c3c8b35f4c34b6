package elect_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkherald/herald/elect"
)

// TestNodeWithAFarSequenceMakesNoSecondLeader: someone creates, by hand, a
// persistent node whose name ends in a sequence 2^31-1 after the next
// candidate's (a restore, a tool, a hostile user). Ordered pair by pair
// across the wrap, the queue became circular (A < B < X < A), and which
// node was lowest depended on the order of ZooKeeper's listing: the next
// candidate found itself lowest while the leader led, and the fence let
// the wrong leader write and refused the real one. Ordered from the
// group's counter, the hand-made node holds the queue up, the leader
// leads and writes, and the next candidate waits. Each try names the node
// differently, so the listings come in different orders.
func TestNodeWithAFarSequenceMakesNoSecondLeader(t *testing.T) {
	addrs, ctx := sharedAddrs(t), ctxT(t, 60*time.Second)
	op := session(t, addrs)
	for try := 0; try < 8; try++ {
		g := groupPath(t)
		ea, err := elect.NewElection(session(t, addrs), g, elect.CreateParents(), elect.NoHazardCheck())
		if err != nil {
			t.Fatal(err)
		}
		a, err := ea.Campaign(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Checkpoint(ctx, []byte("a1")); err != nil {
			t.Fatal(err)
		}
		// The checkpoint's create and the hand-made node's each move the
		// counter: the next candidate's sequence is a's plus 3.
		far := a.Sequence() + 3
		far += 1<<31 - 1
		name := fmt.Sprintf("x%d_%s", try, elect.FormatSequence(far))
		if _, err := op.Conn().Create(g+"/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		eb, err := elect.NewElection(session(t, addrs), g, elect.NoHazardCheck())
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		b, err := eb.Campaign(cctx, "b")
		cancel()
		if err == nil {
			t.Fatalf("try %d: b (%s) leads beside a (%s, held %v) with %s in the group", try, b.Node(), a.Node(), a.Held(), name)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("try %d: b's campaign: %v; want it waiting until its context ends", try, err)
		}
		if err := a.Checkpoint(ctx, []byte("a2")); err != nil {
			t.Fatalf("try %d: the leader's checkpoint with %s in the group: %v", try, name, err)
		}
		if v, err := elect.ReadGroup(ctx, op, g); err != nil || v.Owner == nil || v.Owner.Node != a.Node() {
			t.Fatalf("try %d: the group's reading: %+v, %v; want a (%s) the owner", try, v.Owner, err, a.Node())
		}
		if err := a.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
