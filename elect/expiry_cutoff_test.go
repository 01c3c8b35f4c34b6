package elect_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestExpiryOwnerOnAMemberCutOffLosesAsItsSessionExpires: a LoseOnExpiry
// owner's member is cut off from the rest of the ensemble; the leader
// expires its session and a waiter on another member owns. The owner's
// lease suspended the session half a timeout after the last sync the
// leader answered, and it was declared lost only a whole timeout after
// that suspension: the owner believed it held 0.6-0.7 s beside the next
// owner, every try (1.5 s sessions). It now loses a timeout after that
// sync's send, as the leader may expire it.
func TestExpiryOwnerOnAMemberCutOffLosesAsItsSessionExpires(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	ctx := ctxT(t, 60*time.Second)
	zkc, cut, other := cuttableEnsemble(t, ctx)
	path := groupPath(t)
	a, err := elect.NewElection(session(t, []string{zkc.Member(cut).Addr()}, elect.WithSessionTimeout(timeout)), path, elect.CreateParents(), elect.WithLossPolicy(elect.LoseOnExpiry))
	if err != nil {
		t.Fatal(err)
	}
	ha, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := elect.NewElection(session(t, []string{zkc.Member(other).Addr()}, elect.WithSessionTimeout(timeout)), path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	owned := make(chan time.Time, 1)
	go func() {
		hb, err := b.Campaign(ctx, "b")
		if err != nil {
			t.Errorf("the waiter on the other member: %v", err)
			close(owned)
			return
		}
		owned <- time.Now()
		_ = hb.Resign(context.Background())
	}()
	time.Sleep(timeout)
	cutAt := time.Now()
	if err := zkc.Isolate(cut, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zkc.Isolate(cut, false) })
	var done time.Time
	select {
	case <-ha.Done():
		done = time.Now()
	case <-ctx.Done():
		t.Fatal("the owner on the cut-off member never lost ownership")
	}
	at, ok := <-owned
	if !ok {
		return
	}
	t.Logf("the owner lost %v (%v), the next owned %v after the cut", done.Sub(cutAt).Round(time.Millisecond), ha.Reason(), at.Sub(cutAt).Round(time.Millisecond))
	// The leader's expiry is not ours to see: it may come up to a sync
	// period and half a tick before a timeout after the newest sync the
	// leader answered (see leader_lease.go; cuttableEnsemble's tick is
	// 250 ms).
	if late := done.Sub(at); late > timeout/8+125*time.Millisecond {
		t.Errorf("the LoseOnExpiry owner on the cut-off member held %v after the next owned", late.Round(time.Millisecond))
	}
	if ha.Held() {
		t.Error("Held is true after Done")
	}
}
