package elect_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestReleaseAbandoned: another session deletes the node of an owner whose
// process died, recording why. The next owner finds the release (no wait
// for the dead session to expire, nor for its bound), and an observer
// reports the reason.
func TestReleaseAbandoned(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	a, b, obs, other := session(t, addrs), session(t, addrs), session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	la, next, o := alphaHoldsBetaWaitsFor(t, ctx, a, b, obs, path, elect.RecipeLock)
	rec := elect.Release{Node: la.Node(), ID: "alpha", Term: la.Term(), Reason: elect.ReasonRunnerDied, Time: time.Now().UTC()}
	deleted, err := elect.ReleaseAbandoned(ctx, other, la.NodePath(), rec, elect.RecipeLock)
	if err != nil || !deleted {
		t.Fatalf("ReleaseAbandoned = %v, %v; want the node deleted", deleted, err)
	}
	if ch := betaFindsTheRelease(t, ctx, next, o, la, elect.ReasonRunnerDied); ch.Recipe != elect.RecipeLock {
		t.Errorf("handover %+v: want a lock's", ch)
	}
	if deleted, err := elect.ReleaseAbandoned(ctx, other, la.NodePath(), rec, elect.RecipeLock); err != nil || deleted {
		t.Errorf("again, the node gone: ReleaseAbandoned = %v, %v; want false, nil", deleted, err)
	}
}
