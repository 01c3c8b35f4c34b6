package elect_test

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// A group whose node is a container (Curator creates a lock's parents as
// containers) is deleted by the server once it has stayed empty: herald's
// mark goes with it. A later Acquire creates the group again, and an
// observer follows the group through its deletions without reporting an
// owner that is gone.
func TestGroupInAContainerTheServerDeletes(t *testing.T) {
	// A server that looks for empty containers every 100ms, not every
	// minute.
	c := zktest.ForTest(t, zkserver.Config{JVMFlags: []string{"-Dznode.container.checkIntervalMs=100"}})
	ctx := ctxT(t, 60*time.Second)
	look := session(t, c.Addrs())
	group := "/containers/lock"
	if _, err := look.Conn().Create(path.Dir(group), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := look.Conn().CreateContainer(group, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	o := observe(t, session(t, c.Addrs()), path.Dir(group)+"/lock")
	expect(t, o, elect.Snapshot, nil)
	l, err := elect.NewLock(session(t, c.Addrs()), group, elect.CreateParents(), elect.WithID("holder"))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("round %d: Acquire: %v", round, err)
		}
		waitOwner(t, o, h.Node(), round)
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			// Only the first group node was a container: the ones herald
			// creates again are plain, and stay.
			eventually(t, 10*time.Second, "the server deleting the empty container", func() bool {
				ok, _, err := look.Conn().Exists(group)
				return err == nil && !ok
			})
		}
	}
	ok, _, err := look.Conn().Exists(group)
	if err != nil || !ok {
		t.Fatalf("the group herald created again is gone (%v, %v)", ok, err)
	}
}

// waitOwner reads o until it reports node as the owner, failing on any
// other owner on the way.
func waitOwner(t *testing.T, o source, node string, round int) {
	t.Helper()
	for {
		c := next(t, o)
		t.Logf("round %d: %s owner=%v prev=%v reason=%q gap=%v recipe=%s", round, c.Kind, c.Owner, c.Previous, c.Reason, c.Gap, c.Recipe)
		if c.Owner == nil {
			continue
		}
		if c.Owner.Node != node {
			t.Fatalf("round %d: observer reports owner %s; want %s", round, c.Owner.Node, node)
		}
		return
	}
}
