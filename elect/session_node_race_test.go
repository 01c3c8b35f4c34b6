package elect_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestOwnerAndSessionNodeDeletedBackToBack: an operator forcing over a
// stuck owner deletes its node and its session node, one right after the
// other, both before the next owner's look at its predecessor (a script,
// or a runner slowed by a loaded machine or a far network). Two deletions
// are no session's end, which takes both in one transaction: the owner,
// cut off or frozen, may still run its command, so the look must not
// count the predecessor as gone with its session. Before, it did: once
// both were gone, the session node's absence was taken for proof.
func TestOwnerAndSessionNodeDeletedBackToBack(t *testing.T) {
	for _, k := range sessionKinds {
		for _, sessionFirst := range []bool{false, true} {
			name := k.name + "/owner's node first"
			if sessionFirst {
				name = k.name + "/session node first"
			}
			t.Run(name, func(t *testing.T) {
				s1, first, owned, c := behindProvingOwner(t, k)
				nodes := []string{first.NodePath(), k.node(first.Group(), s1)}
				if sessionFirst {
					nodes[0], nodes[1] = nodes[1], nodes[0]
				}
				deleteNodes(t, c, nodes...)
				second := owned()
				predecessorKept(t, second, "owner's node and session node deleted by hand, its session alive", "different transactions", "deleted by hand earlier")
			})
		}
	}
}

// TestSessionNodeDeletedThenACopyJoins: the owner's node and its session
// node deleted by hand one after the other, and then, before the next
// owner's look, a copy on a session of its own joins the group, making
// its queue node and its session node in one transaction. That
// transaction is the last child change under both parents, as a session's
// end would be; it made a node, though, and the look must tell it from
// the end.
func TestSessionNodeDeletedThenACopyJoins(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) {
			s1, first, owned, c := behindProvingOwner(t, k)
			deleteNodes(t, c, first.NodePath(), k.node(first.Group(), s1))
			second := owned()
			joinThird(t, k, first.Group())
			eventually(t, 10*time.Second, "the third copy queued", func() bool {
				ch, _, err := c.Children(first.Group())
				return err == nil && len(queueNames(ch)) == 2
			})
			predecessorKept(t, second, "owner's node and session node deleted by hand, then a copy joined", "made a node")
		})
	}
}

// queueNames is the children that end in a sequence.
func queueNames(children []string) []string {
	var out []string
	for _, c := range children {
		if _, ok := elect.ParseSequence(c); ok {
			out = append(out, c)
		}
	}
	return out
}

// TestSessionNodeDeletedThenACopyLeaves: the owner's node and its session
// node deleted by hand one after the other, and then, before the next
// owner's look, a copy queued behind it ends its session, which deletes
// that copy's queue node and its session node in one transaction. That
// transaction is the last child change under both parents, as the
// owner's session's end would be, and it made no node: only the count of
// the group's child changes since the owner's node was seen tells that it
// took another's node, not the owner's.
func TestSessionNodeDeletedThenACopyLeaves(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) {
			s1, first, owned, c := behindProvingOwner(t, k)
			s3 := joinThird(t, k, first.Group())
			awaitThirdQueued(t, k, c, first.Group(), s3)
			deleteNodes(t, c, first.NodePath(), k.node(first.Group(), s1))
			second := owned()
			if err := s3.Close(); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the third copy's session closed", func() bool {
				ch, _, err := c.Children(first.Group())
				return err == nil && len(queueNames(ch)) == 1
			})
			predecessorKept(t, second, "owner's node and session node deleted by hand, then a copy left", "ended in the same moment")
		})
	}
}

// TestACopyLeftThenTheOwnersSessionEnds: a copy queued behind the next
// in line, and left (its session ended, taking its node and its session
// node in one transaction) while the owner held; then the owner's
// session really ends. The next in line's listing from before the copy
// came cannot account for that copy's going, and its wait took its
// bound; kept fresh, the listing shows the group as it was just before
// the owner's end, and the handover is at once.
func TestACopyLeftThenTheOwnersSessionEnds(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) {
			s1, first, owned, c := behindProvingOwner(t, k)
			_, st, err := c.Children(first.Group())
			if err != nil {
				t.Fatal(err)
			}
			saved := make(chan []string, 64)
			t.Cleanup(elect.OnListingSaved(func(children []string, _ int32) {
				select {
				case saved <- children:
				default:
				}
			}))
			s3 := joinThird(t, k, first.Group())
			awaitThirdQueued(t, k, c, first.Group(), s3)
			if err := s3.Close(); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the third copy's session closed", func() bool {
				ch, st2, err := c.Children(first.Group())
				return err == nil && len(queueNames(ch)) == 2 && st2.Cversion > st.Cversion
			})
			awaitSavedWithout(t, saved, 2)
			_ = s1.Close()
			second := owned()
			got, err := second.PredecessorReleased(ctxT(t, 10*time.Second))
			if err != nil || !got || !second.PredecessorSessionEnded() {
				t.Fatalf("a copy left, then the owner's session ended: PredecessorReleased = %v, %v (session ended: %v); want true at once", got, err, second.PredecessorSessionEnded())
			}
		})
	}
}

// awaitSavedWithout waits a while for a saved listing that shows n queue
// nodes after one that showed more (the copy that left gone from it). It
// does not fail on its own: a waiter that saves no fresh listing fails
// the test's proof instead.
func awaitSavedWithout(t *testing.T, saved <-chan []string, n int) {
	t.Helper()
	more := false
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ch := <-saved:
			q := len(queueNames(ch))
			more = more || q > n
			if more && q == n {
				return
			}
		case <-deadline:
			t.Logf("no listing saved with %d queue nodes after the copy left", n)
			return
		}
	}
}

// behindProvingOwner is the set-up these races share: a first owner, a
// next in line waiting behind it (both proving a session's end), the next
// in line's look having seen the owner's session node, and a connection of
// an operator's own to delete with.
func behindProvingOwner(t *testing.T, k sessionKind) (s1 *elect.Session, first *elect.Handle, owned func() *elect.Handle, c *zk.Conn) {
	t.Helper()
	proof := []elect.Option{elect.ProveSessionEnd()}
	s1, first, seen, owned := behindOwner(t, k, proof, proof...)
	sawSessionNode(t, seen, true)
	return s1, first, owned, session(t, sharedAddrs(t)).Conn()
}

// deleteNodes deletes nodes by hand, in order, as an operator would.
func deleteNodes(t *testing.T, c *zk.Conn, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		if err := c.Delete(n, -1); err != nil {
			t.Fatal(err)
		}
	}
}

// predecessorKept fails unless second's look finds its predecessor
// neither released nor gone with its session: what was done (why) was no
// session's end. The handle must say why it could not tell, in words
// holding one of said.
func predecessorKept(t *testing.T, second *elect.Handle, why string, said ...string) {
	t.Helper()
	got, err := second.PredecessorReleased(ctxT(t, 10*time.Second))
	if err != nil || got || second.PredecessorSessionEnded() {
		t.Fatalf("%s: PredecessorReleased = %v, %v (session ended: %v); want false", why, got, err, second.PredecessorSessionEnded())
	}
	unproven := second.SessionEndUnproven()
	if !slices.ContainsFunc(said, func(w string) bool { return strings.Contains(unproven, w) }) {
		t.Fatalf("%s: SessionEndUnproven() = %q; want it to say one of %q", why, unproven, said)
	}
}

// joinThird starts a third copy joining group on a session of its own,
// in the background (it queues, and never owns within the test), and
// returns that session.
func joinThird(t *testing.T, k sessionKind, group string) *elect.Session {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	s3 := session(t, sharedAddrs(t))
	go func() { _, _ = k.join(ctx, s3, group, "third", elect.ProveSessionEnd()) }()
	return s3
}

// awaitThirdQueued waits for the copy joining group on s3 to have both its
// queue node and its session node, the group then holding three.
func awaitThirdQueued(t *testing.T, k sessionKind, c *zk.Conn, group string, s3 *elect.Session) {
	t.Helper()
	eventually(t, 10*time.Second, "the third copy queued with its session node", func() bool {
		ch, _, err := c.Children(group)
		there, _, _ := c.Exists(k.node(group, s3))
		return err == nil && len(queueNames(ch)) == 3 && there
	})
}
