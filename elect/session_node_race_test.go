package elect_test

import (
	"testing"
	"time"

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
				proof := []elect.Option{elect.ProveSessionEnd()}
				s1, first, seen, owned := behindOwner(t, k, proof, proof...)
				sawSessionNode(t, seen, true)
				c := session(t, sharedAddrs(t)).Conn()
				nodes := []string{first.NodePath(), k.node(first.Group(), s1)}
				if sessionFirst {
					nodes[0], nodes[1] = nodes[1], nodes[0]
				}
				for _, n := range nodes {
					if err := c.Delete(n, -1); err != nil {
						t.Fatal(err)
					}
				}
				second := owned()
				got, err := second.PredecessorReleased(ctxT(t, 10*time.Second))
				if err != nil || got || second.PredecessorSessionEnded() {
					t.Fatalf("owner's node and session node deleted by hand, its session alive: PredecessorReleased = %v, %v (session ended: %v); want false", got, err, second.PredecessorSessionEnded())
				}
			})
		}
	}
}
