package elect_test

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestGroupMadeAndDeletedUnderAParentMadeAndDeleted: the observer finds
// the group missing; its parent (or, first, the group alone) is made, the
// group made, owned and deleted, and the parent deleted, between two looks
// that both find the group missing. A missing parent read as a stat of
// zeros, the same at both looks, so nothing was reported (found by a
// review); a missing parent's child version is now unknown, and the look
// marks a gap.
func TestGroupMadeAndDeletedUnderAParentMadeAndDeleted(t *testing.T) {
	for _, parentThere := range []bool{true, false} {
		t.Run(fmt.Sprintf("parent-there=%v", parentThere), func(t *testing.T) { hiddenIncarnation(t, parentThere) })
	}
}

// hiddenIncarnation is TestGroupMadeAndDeletedUnderAParentMadeAndDeleted
// with the parent there throughout or made and deleted with the group.
func hiddenIncarnation(t *testing.T, parentThere bool) {
	addrs := sharedAddrs(t)
	base := groupPath(t)
	group := base + "/p/g"
	parent := path.Dir(group)
	maker := session(t, addrs).Conn()
	makeGroup(t, maker, base)
	if parentThere {
		makeGroup(t, maker, parent)
	}
	o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock))
	expect(t, o, elect.Snapshot, nil)
	acl := zk.WorldACL(zk.PermAll)
	ops := []interface{}{}
	if !parentThere {
		ops = append(ops, &zk.CreateRequest{Path: parent, Acl: acl})
	}
	ops = append(ops,
		&zk.CreateRequest{Path: group, Acl: acl},
		&zk.CreateRequest{Path: group + "/lock-0000000000", Data: []byte("unseen"), Flags: zk.FlagEphemeral, Acl: acl},
		&zk.DeleteRequest{Path: group + "/lock-0000000000", Version: -1},
		&zk.DeleteRequest{Path: group, Version: -1})
	if !parentThere {
		ops = append(ops, &zk.DeleteRequest{Path: parent, Version: -1})
	}
	if _, err := maker.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-o.Changes():
		t.Logf("%s owner=%v gap=%v", c.Kind, c.Owner, c.Gap)
		if !c.Gap {
			t.Fatalf("change without gap: %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("parentThere=%v: a whole incarnation (made, owned, deleted between two looks that found it missing) left no change and no gap mark", parentThere)
	}
}
