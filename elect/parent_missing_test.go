package elect_test

import (
	"fmt"
	"path"
	"strings"
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
// review); a missing parent is now counted at its nearest ancestor that
// exists, whose children changed between the looks, and the look marks a
// gap.
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

// TestGroupMadeWithItsParentsWhileMissingIsNoGap: the observer finds the
// group missing and its parent (or two levels above it) missing too; the
// levels, the group and an owner are made. A group that never existed
// has no unseen history, yet its first owner came with a gap mark: a
// missing parent's child version is not known, so the making could not
// be counted (a bridge started before the first `herald lock` of a new
// path marked it so). The nearest ancestor that exists counts it: one
// more child there, and each level below it holding one child made
// once, is this group made once and nothing else. Made, owned, deleted
// and made again under a parent made again is still a gap.
func TestGroupMadeWithItsParentsWhileMissingIsNoGap(t *testing.T) {
	for _, missing := range []int{1, 2} {
		t.Run(fmt.Sprintf("missing-levels=%d", missing), func(t *testing.T) {
			group, maker, o := missingWithParents(t, missing)
			if _, err := maker.Multi(append(makeLevels(group, missing), ownedOp(group, "seen"))...); err != nil {
				t.Fatal(err)
			}
			if c, gap := untilOwner(t, o); gap {
				t.Fatalf("the first owner of a group made with its %d missing levels reported with a gap mark: %+v", missing, c)
			}
		})
	}
	t.Run("parent-made-again", func(t *testing.T) {
		group, maker, o := missingWithParents(t, 1)
		parent := path.Dir(group)
		ops := append(makeLevels(group, 1), ownedOp(group, "unseen"))
		ops = append(ops, &zk.DeleteRequest{Path: group + "/lock-0000000000", Version: -1},
			&zk.DeleteRequest{Path: group, Version: -1}, &zk.DeleteRequest{Path: parent, Version: -1})
		ops = append(ops, makeLevels(group, 1)...)
		if _, err := maker.Multi(append(ops, ownedOp(group, "seen"))...); err != nil {
			t.Fatal(err)
		}
		if _, gap := untilOwner(t, o); !gap {
			t.Fatal("a whole tenure under a parent deleted and made again went unreported with no gap mark")
		}
	})
}

// missingWithParents observes (as a lock, past its first snapshot) a
// group whose missing levels above it are missing too, below a base that
// exists.
func missingWithParents(t *testing.T, missing int) (group string, maker *zk.Conn, o source) {
	t.Helper()
	addrs := sharedAddrs(t)
	base := groupPath(t)
	maker = session(t, addrs).Conn()
	makeGroup(t, maker, base)
	group = base + strings.Repeat("/p", missing) + "/g"
	o = observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock))
	expect(t, o, elect.Snapshot, nil)
	return group, maker, o
}

// makeLevels are the requests that make group's missing levels above it
// and the group.
func makeLevels(group string, missing int) []interface{} {
	var ops []interface{}
	for i := missing; i >= 0; i-- {
		p := group
		for range i {
			p = path.Dir(p)
		}
		ops = append(ops, &zk.CreateRequest{Path: p, Acl: zk.WorldACL(zk.PermAll)})
	}
	return ops
}

// ownedOp makes group's first queue node, owned by id.
func ownedOp(group, id string) *zk.CreateRequest {
	return &zk.CreateRequest{Path: group + "/lock-0000000000", Data: []byte(id), Flags: zk.FlagEphemeral, Acl: zk.WorldACL(zk.PermAll)}
}
