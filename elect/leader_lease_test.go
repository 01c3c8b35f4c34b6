package elect_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestOwnerOnAMemberCutOffLosesBeforeTheNextOwns: the owner's client is
// connected to a follower that is cut off from the rest of the ensemble,
// its own link to the follower up. The follower goes on answering its
// pings until it gives the leader up (syncLimit × tickTime, 2.5 s here),
// while the leader expires the owner's session after its timeout (1.5 s)
// and the next waiter, on another member, owns. The owner must have lost
// ownership before that: it did not, and a herald run beside it started
// its command while the first still ran, every try (found by an
// adversarial test). Now the session asks the leader (a sync every
// eighth of the timeout) and suspends when it has not answered for half.
func TestOwnerOnAMemberCutOffLosesBeforeTheNextOwns(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3, Isolatable: true, TickTime: 250 * time.Millisecond})
	ctx := ctxT(t, 60*time.Second)
	leader, err := zkc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var followers []int
	for i, m := range zkc.Members() {
		if m != leader {
			followers = append(followers, i)
		}
	}
	cut, other := followers[0], followers[1]
	path := groupPath(t)
	a, err := elect.NewLock(session(t, []string{zkc.Member(cut).Addr()}, elect.WithSessionTimeout(timeout)), path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	ha, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := elect.NewLock(session(t, []string{zkc.Member(other).Addr()}, elect.WithSessionTimeout(timeout)), path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	owned := make(chan time.Time, 1)
	go func() {
		hb, err := b.Acquire(ctx)
		if err != nil {
			t.Errorf("the waiter on the other member: %v", err)
			close(owned)
			return
		}
		owned <- time.Now()
		_ = hb.Release(context.Background())
	}()
	time.Sleep(timeout) // the waiter is queued, the owner's lease fresh
	select {
	case <-ha.Done():
		t.Fatalf("ownership ended before the cut: %v (%v)", ha.Reason(), ha.Err())
	default:
	}
	cutAt := time.Now()
	if err := zkc.Isolate(cut, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zkc.Isolate(cut, false) })
	var lost time.Time
	select {
	case <-ha.Done():
		lost = time.Now()
	case at := <-owned:
		t.Fatalf("the waiter on the other member owned %v after the cut while the owner on the cut-off member still held", at.Sub(cutAt).Round(time.Millisecond))
	case <-ctx.Done():
		t.Fatal("the owner on the cut-off member never lost ownership")
	}
	at, ok := <-owned
	if !ok {
		return
	}
	t.Logf("owner lost ownership %v after the cut (%v), the next owned %v after it", lost.Sub(cutAt).Round(time.Millisecond), ha.Reason(), at.Sub(cutAt).Round(time.Millisecond))
	if lost.After(at) {
		t.Fatalf("two owners: the next owned %v before the owner on the cut-off member lost ownership", lost.Sub(at))
	}
	// The owner's command is killed a sixth of the timeout after the loss
	// at the latest (herald's lossGrace): that too must come first.
	if margin := at.Sub(lost); margin < timeout/6 {
		t.Errorf("the owner lost ownership only %v before the next owned: less than the sixth of the timeout (%v) its command gets to die", margin.Round(time.Millisecond), timeout/6)
	}
}
