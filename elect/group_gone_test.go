package elect_test

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestGroupOwnedAndDeletedUnseenIsGap: a group read with no owner, where
// an owner then came and went and the group was deleted before the next
// read (one transaction here; a stalled observer in life), was read
// missing with no owner change and so no gap; the group made again with
// the next owner was proved made once by its parent's child version, and
// the owner in between passed without a gap mark.
func TestGroupOwnedAndDeletedUnseenIsGap(t *testing.T) {
	group := groupPath(t) + "/g"
	addrs, maker := groupMaker(t, group)
	o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock))
	expect(t, o, elect.Snapshot, nilOwner)
	inOne(t, maker, ownedOp(group, "unseen"), deleteOp(group+"/lock-0000000000"), deleteOp(group))
	waitGroupMissing(t, o, group)
	inOne(t, maker, makeOp(group), ownedOp(group, "seen"))
	if c, gap := untilOwner(t, o); !gap {
		t.Fatalf("an owner came and went, its group deleted, unseen, yet the next owner came with no gap mark: %+v", c)
	}
}

// groupMaker makes made (and its parent) on the shared ensemble, and
// returns the ensemble's addresses and the connection that made it, to
// make and delete groups with.
func groupMaker(t *testing.T, made string) ([]string, *zk.Conn) {
	t.Helper()
	addrs := sharedAddrs(t)
	maker := session(t, addrs).Conn()
	makeGroup(t, maker, made)
	return addrs, maker
}

// waitGroupMissing waits until o's last read found group missing.
func waitGroupMissing(t *testing.T, o source, group string) {
	t.Helper()
	last := func() (elect.View, bool) {
		if m, ok := o.(*elect.Many); ok {
			return m.Last(group)
		}
		return o.(*elect.Observer).Last()
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if v, ok := last(); ok && !v.Exists {
			return
		}
	}
	t.Fatal("the observer never read the group missing")
}

// TestGroupDeletedEmptyIsNoGap: a group read empty and then deleted with
// nothing in it since (a container the server reaps) is read missing with
// no gap mark, nor is the next owner of the group made again: its
// children watch fired first for the deletion, and its parent counted that
// deletion alone.
func TestGroupDeletedEmptyIsNoGap(t *testing.T) {
	group := groupPath(t) + "/g"
	addrs, maker := groupMaker(t, group)
	o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock))
	expect(t, o, elect.Snapshot, nilOwner)
	if err := maker.Delete(group, -1); err != nil {
		t.Fatal(err)
	}
	waitGroupMissing(t, o, group)
	inOne(t, maker, makeOp(group), ownedOp(group, "seen"))
	if c, gap := untilOwner(t, o); gap {
		t.Fatalf("the next owner of a group deleted empty came with a gap mark: %+v", c)
	}
}

// TestGroupDeletedAfterAnUnseenOwnerIsGap: a group read with an owner,
// where the owner left, another owned and left, and the group was deleted
// before the next read, was read as the first owner's end and the group
// gone, with no gap mark: the owner in between passed unseen. A group
// deleted takes its counters with it, so nothing tells what it held after
// the last listing that showed nodes in it.
func TestGroupDeletedAfterAnUnseenOwnerIsGap(t *testing.T) {
	group := groupPath(t) + "/g"
	addrs, maker := groupMaker(t, group)
	if _, err := maker.Create(group+"/lock-0000000000", []byte("first"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock))
	expect(t, o, elect.Snapshot, ownerIs("first"))
	inOne(t, maker, deleteOp(group+"/lock-0000000000"), leadOp(group+"/lock-0000000001", "unseen"),
		deleteOp(group+"/lock-0000000001"), deleteOp(group))
	waitGroupMissing(t, o, group)
	inOne(t, maker, makeOp(group), ownedOp(group, "seen"))
	if c, gap := untilOwner(t, o); !gap {
		t.Fatalf("an owner came and went after the first, its group deleted, unseen, yet no change said gap: %+v", c)
	}
}

// TestSinceAMissingGroupCountsItsMaking: an observer continuing from
// another's view of a group found missing (Since) read the group's
// making with no count to compare, so the first owner of a group made
// once since came with a gap mark; the view's count of its parent (or
// nearest ancestor) is read again now. Made, owned, deleted and made
// again since is still a gap.
func TestSinceAMissingGroupCountsItsMaking(t *testing.T) {
	for _, missing := range []int{0, 2} {
		t.Run(fmt.Sprintf("missing-levels=%d", missing), func(t *testing.T) {
			base := groupPath(t)
			addrs, maker := groupMaker(t, base)
			group := base + strings.Repeat("/p", missing) + "/g"
			last := lastGroupMissing(t, session(t, addrs), group)
			inOne(t, maker, append(makeLevels(group, missing), ownedOp(group, "seen"))...)
			o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock), elect.Since(last))
			if c := expect(t, o, elect.Snapshot, ownerIs("seen")); c.Gap {
				t.Errorf("the first owner of a group made once since the last view: %+v; want no gap", c)
			}
		})
	}
	t.Run("still missing, a sibling made", func(t *testing.T) {
		// Its own making and deletion move the count by two: one more
		// child is another's (another lock's container), and was a gap
		// though nothing went unseen.
		group := groupPath(t) + "/g"
		addrs, maker := groupMaker(t, path.Dir(group))
		last := lastGroupMissing(t, session(t, addrs), group)
		makeGroup(t, maker, path.Dir(group)+"/other")
		o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock), elect.Since(last))
		if c := expect(t, o, elect.Snapshot, nilOwner); c.Gap {
			t.Errorf("still missing, a sibling made since the last view: %+v; want no gap", c)
		}
	})
	t.Run("made again", func(t *testing.T) {
		group := groupPath(t) + "/g"
		addrs, maker := groupMaker(t, path.Dir(group))
		last := lastGroupMissing(t, session(t, addrs), group)
		inOne(t, maker, makeOp(group), ownedOp(group, "unseen"), deleteOp(group+"/lock-0000000000"), deleteOp(group),
			makeOp(group), ownedOp(group, "seen"))
		o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock), elect.Since(last))
		if c := expect(t, o, elect.Snapshot, ownerIs("seen")); !c.Gap {
			t.Errorf("a tenure in a group made and deleted since the last view, yet: %+v; want a gap", c)
		}
	})
}

// lastGroupMissing is the last view of an observer that found group
// missing, stopped.
func lastGroupMissing(t *testing.T, s *elect.Session, group string) elect.View {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o, err := elect.Observe(ctx, s, group, elect.AsRecipe(elect.RecipeLock))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, o, elect.Snapshot, nilOwner)
	cancel()
	o.Wait()
	last, ok := o.Last()
	if !ok || last.Exists {
		t.Fatalf("the first observer's last view: %+v, %v; want the group missing", last, ok)
	}
	return last
}

// TestGroupsReapedTogetherAreNoGap: a group read empty and then deleted
// with a sibling under the same parent (the server reaps every empty
// container in one pass; another lock's container made meanwhile) moved
// its parent's child version by two, and the deletion was a gap though
// nothing went unseen: the children watch fired first for the deletion,
// so nothing was made in the group before it, and the group made again,
// owned and deleted after it adds two more, three in all.
func TestGroupsReapedTogetherAreNoGap(t *testing.T) {
	for _, again := range []bool{false, true} {
		t.Run(map[bool]string{false: "sibling", true: "made-again-unseen"}[again], func(t *testing.T) {
			base := groupPath(t)
			group, sibling := base+"/g", base+"/h"
			addrs, maker := groupMaker(t, group)
			makeGroup(t, maker, sibling)
			o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock))
			expect(t, o, elect.Snapshot, nilOwner)
			ops := []any{deleteOp(group), deleteOp(sibling)}
			if again {
				ops = []any{deleteOp(group), makeOp(group), ownedOp(group, "unseen"), deleteOp(group + "/lock-0000000000"), deleteOp(group)}
			}
			inOne(t, maker, ops...)
			waitGroupMissing(t, o, group)
			inOne(t, maker, makeOp(group), ownedOp(group, "seen"))
			if c, gap := untilOwner(t, o); gap != again {
				t.Fatalf("the next owner (an owner unseen before: %v): %+v; want gap %v", again, c, again)
			}
		})
	}
}
