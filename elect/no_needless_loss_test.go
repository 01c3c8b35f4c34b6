package elect_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// The clock checks Held makes (see held.go) and the loss a timeout after
// the newest sync the leader answered must not cost a healthy holder its
// ownership: these owners' sessions live on, and no one else owns.

// heldThroughout fails the test the first time h's Held says false
// within d.
func heldThroughout(t *testing.T, h *elect.Handle, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !h.Held() {
			st, _ := h.Session().State()
			t.Fatalf("Held said false %v before the end (%v: %v; session %v)", time.Until(end).Round(time.Millisecond), h.Reason(), h.Err(), st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// campaignAs owns a new group on s under policy p.
func campaignAs(t *testing.T, s *elect.Session, p elect.LossPolicy) *elect.Handle {
	t.Helper()
	e, err := elect.NewElection(s, groupPath(t), elect.CreateParents(), elect.WithLossPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctxT(t, 30*time.Second), "a")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestExpiryOwnerKeepsThroughAnEnsembleLeaderElection: the ZooKeeper
// leader is killed; the members elect another, which gives every session a
// whole timeout again, and the client reconnects. A LoseOnExpiry owner
// holds throughout, though its newest answered sync was sent before the
// kill.
func TestExpiryOwnerKeepsThroughAnEnsembleLeaderElection(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3, TickTime: 250 * time.Millisecond})
	h := campaignAs(t, session(t, zkc.Addrs(), elect.WithSessionTimeout(4*time.Second)), elect.LoseOnExpiry)
	leader, err := zkc.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	heldThroughout(t, h, 8*time.Second)
}

// TestExpiryOwnerKeepsWhenItsMemberIsCutOff: the owner's member may be cut
// off from the ensemble; the lease suspends the session and the client
// moves to the other member well within the timeout, where the session
// lives on: a LoseOnExpiry owner holds throughout.
func TestExpiryOwnerKeepsWhenItsMemberIsCutOff(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	zkc, cut, other := cuttableEnsemble(t, ctx)
	// 4 s: the owner has until a timeout after the newest sync the
	// leader answered to reach the other member, half a timeout after
	// the lease suspends it; at 2 s, a loaded machine's reconnect may
	// take that second.
	s := session(t, []string{zkc.Member(cut).Addr(), zkc.Member(other).Addr()}, elect.WithSessionTimeout(4*time.Second))
	h := campaignAs(t, s, elect.LoseOnExpiry)
	if s.Conn().Server() == zkc.Member(other).Addr() {
		cut = other // the member the owner is on
	}
	if err := zkc.Isolate(cut, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zkc.Isolate(cut, false) })
	heldThroughout(t, h, 6*time.Second)
}

// TestSuspendOwnerKeepsOnASlowLink: 300 ms each way to the member (a
// 600 ms round trip, well under what the lease allows a 4 s timeout: half
// of it, less a sync period; see leader_lease.go) is slow but alive; an
// owner holds throughout under either policy.
func TestSuspendOwnerKeepsOnASlowLink(t *testing.T) { ownerKeepsOnASlowLink(t, elect.LoseOnSuspend) }

// TestExpiryOwnerKeepsOnASlowLink is TestSuspendOwnerKeepsOnASlowLink
// under LoseOnExpiry.
func TestExpiryOwnerKeepsOnASlowLink(t *testing.T) { ownerKeepsOnASlowLink(t, elect.LoseOnExpiry) }

func ownerKeepsOnASlowLink(t *testing.T, p elect.LossPolicy) {
	px := proxyTo(t, sharedAddrs(t)[0])
	px.Delay(300 * time.Millisecond)
	h := campaignAs(t, session(t, []string{px.Addr()}, elect.WithSessionTimeout(4*time.Second)), p)
	heldThroughout(t, h, 4*time.Second)
}
