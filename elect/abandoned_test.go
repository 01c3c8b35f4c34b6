package elect_test

import (
	"errors"
	pathpkg "path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestReleaseAbandoned: another session deletes the node of an owner whose
// process died, recording why. The next owner finds the release (no wait
// for the dead session to expire, nor for its bound), and an observer
// reports the reason. Where the group node holds someone else's data,
// which herald never writes over, an election's office takes the record;
// before, the node was deleted alone there, and the next owner waited.
func TestReleaseAbandoned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		recipe elect.Recipe
		data   []byte
	}{
		{"a lock", elect.RecipeLock, nil},
		{"an election under someone else's data", elect.RecipeElection, []byte("kept by an operator")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			path := groupPath(t)
			a, b, obs, other := session(t, addrs), session(t, addrs), session(t, addrs), session(t, addrs)
			if tc.data != nil {
				if _, err := obs.Conn().Create(pathpkg.Dir(path), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					t.Fatal(err)
				}
				if _, err := obs.Conn().Create(path, tc.data, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
			}
			ctx := ctxT(t, 30*time.Second)
			la, next, o := alphaHoldsBetaWaitsFor(t, ctx, a, b, obs, path, tc.recipe)
			rec := elect.Release{Node: la.Node(), ID: "alpha", Term: la.Term(), Reason: elect.ReasonRunnerDied, Time: time.Now().UTC()}
			deleted, err := elect.ReleaseAbandoned(ctx, other, la.NodePath(), rec, tc.recipe)
			if err != nil || !deleted {
				t.Fatalf("ReleaseAbandoned = %v, %v; want the node deleted", deleted, err)
			}
			if ch := betaFindsTheRelease(t, ctx, next, o, la, elect.ReasonRunnerDied); ch.Recipe != tc.recipe {
				t.Errorf("handover %+v: want a %s's", ch, tc.recipe)
			}
			if deleted, err := elect.ReleaseAbandoned(ctx, other, la.NodePath(), rec, tc.recipe); err != nil || deleted {
				t.Errorf("again, the node gone: ReleaseAbandoned = %v, %v; want false, nil", deleted, err)
			}
			if d, _, err := obs.Conn().Get(path); tc.data != nil && (err != nil || string(d) != string(tc.data)) {
				t.Errorf("the group node holds %q (%v), want the operator's data untouched", d, err)
			}
		})
	}
}
