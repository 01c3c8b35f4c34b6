package elect_test

import (
	"errors"
	"fmt"
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

// A group deleted and made again (an operator's deleteall, a container the
// server removed) can show its new owner under the very name of the old
// one: the classic recipe's names carry nothing but the sequence, which
// starts again at 0. The observer reports the new owner's own session and
// term, whether or not it saw the group missing in between.
func TestObserverGroupMadeAgainUnderTheSameNames(t *testing.T) {
	for _, quick := range []bool{false, true} {
		name := "after-seeing-it-missing"
		if quick {
			name = "without-seeing-it-missing"
		}
		t.Run(name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			group := groupPath(t)
			obs := session(t, addrs)
			node, first := foreign(t, group, "lock-") // the classic recipe's names
			o := observe(t, obs, group, elect.AsRecipe(elect.RecipeLock))
			snap := expect(t, o, elect.Snapshot, nil)
			if snap.Owner == nil || snap.Owner.Node != node || snap.Owner.Session != first.SessionID() {
				t.Fatalf("snapshot owner %+v; want %s of session 0x%x", snap.Owner, node, first.SessionID())
			}
			if quick {
				again := makeAgain(t, addrs, group, node)
				if c := checkNewOwner(t, o, node, again.SessionID()); c.GroupCzxid == 0 || c.GroupCzxid == snap.GroupCzxid {
					t.Fatalf("new owner seen in group node %d, the old owner in %d; want two group nodes", c.GroupCzxid, snap.GroupCzxid)
				}
				return
			}
			if err := first.Delete(group+"/"+node, -1); err != nil {
				t.Fatal(err)
			}
			if err := first.Delete(group, -1); err != nil {
				t.Fatal(err)
			}
			for c := next(t, o); c.Owner != nil; c = next(t, o) {
			}
			node2, second := foreign(t, group, "lock-")
			if node2 != node {
				t.Fatalf("made again as %s; the test needs the old name %s", node2, node)
			}
			checkNewOwner(t, o, node, second.SessionID())
		})
	}
}

// checkNewOwner reads o until an owner is reported, which must be node of
// session, with a term of its own, and returns that change.
func checkNewOwner(t *testing.T, o source, node string, session int64) elect.Change {
	t.Helper()
	for {
		c := next(t, o)
		if c.Owner == nil {
			continue
		}
		if c.Kind != elect.OwnerChanged || c.Owner.Node != node || c.Owner.Session != session {
			t.Fatalf("%s: owner %s of session 0x%x (term %d); want %s of the new session 0x%x", c.Kind, c.Owner.Node, c.Owner.Session, c.Owner.Czxid, node, session)
		}
		return c
	}
}

// A bridge resuming from its last report (the owner's name and the
// report's zxid, elect.AfterOwner) does not take a new owner under the old
// name, in a group made again since, for the tenure it reported: the
// first snapshot says an owner may have come and gone.
func TestResumeAfterTheGroupWasMadeAgain(t *testing.T) {
	addrs := sharedAddrs(t)
	group := groupPath(t)
	node, first := foreign(t, group, "lock-") // the classic recipe's names
	_, st, err := first.Exists(group)
	if err != nil {
		t.Fatal(err)
	}
	reported := st.Pzxid // the last report: node owned as of this zxid
	// Unchanged since the report: the same tenure, no gap.
	o := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock), elect.AfterOwner(node, reported))
	if c := expect(t, o, elect.Snapshot, ownerNode(node)); c.Gap {
		t.Fatalf("snapshot %+v: gap, though nothing changed since the report", c)
	}
	again := makeAgain(t, addrs, group, node)
	o2 := observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock), elect.AfterOwner(node, reported))
	c := expect(t, o2, elect.Snapshot, ownerNode(node))
	if !c.Gap || c.Owner.Session != again.SessionID() {
		t.Fatalf("snapshot %+v after the group was made again: want a gap and the new session 0x%x", c, again.SessionID())
	}
}

func ownerNode(node string) func(elect.Change) error {
	return func(c elect.Change) error {
		if c.Owner == nil || c.Owner.Node != node {
			return fmt.Errorf("owner %v, want %s", c.Owner, node)
		}
		return nil
	}
}

// makeAgain deletes group with its only node and makes it again, with a
// new node of the classic recipe on a session of its own, in one
// transaction (no listing can fall in between): the new node gets the old
// one's name.
func makeAgain(t *testing.T, addrs []string, group, node string) *zk.Conn {
	t.Helper()
	again := session(t, addrs)
	res, err := again.Conn().Multi(
		&zk.DeleteRequest{Path: group + "/" + node, Version: -1},
		&zk.DeleteRequest{Path: group, Version: -1},
		&zk.CreateRequest{Path: group, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: group + "/lock-", Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)},
	)
	if err != nil || path.Base(res[3].String) != node {
		t.Fatalf("made again as %v (%v); the test needs the old name %s", res, err, node)
	}
	return again.Conn()
}

// TestGroupMadeAgainBetweenLooksIsAGap: a group deleted with its owner,
// made, owned and deleted again, and made once more with an owner, all
// while the observer could not look (its connection held). The group in
// between leaves nothing in the one after it (its counters start again),
// and the observer reported the last owner after the first with no gap
// mark: whole tenures went unreported (3-16 in 100 in an adversarial test
// of fast remakes). Whether it saw the group missing in between or not,
// the new owner now comes with a gap mark; and a group made just once
// while the observer saw it missing (its parent's child version moved by
// one) comes without.
func TestGroupMadeAgainBetweenLooksIsAGap(t *testing.T) {
	for _, seenMissing := range []bool{false, true} {
		t.Run(fmt.Sprintf("seen-missing=%v", seenMissing), func(t *testing.T) {
			addrs := sharedAddrs(t)
			group := groupPath(t) + "/g" // a parent of its own: its child version is this group's alone
			p := proxyTo(t, addrs[0])
			obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
			w := session(t, addrs).Conn()
			makeGroup(t, w, path.Dir(group))
			node, first := foreign(t, group, "lock-")
			o := observe(t, obs, group, elect.AsRecipe(elect.RecipeLock))
			expect(t, o, elect.Snapshot, nil)
			if seenMissing {
				if _, err := first.Multi(&zk.DeleteRequest{Path: group + "/" + node, Version: -1}, &zk.DeleteRequest{Path: group, Version: -1}); err != nil {
					t.Fatal(err)
				}
				for c := next(t, o); c.Owner != nil; c = next(t, o) {
				}
			}
			remake := func() {
				t.Helper()
				var ops []any
				if there, _, err := w.Exists(group); err != nil {
					t.Fatal(err)
				} else if there {
					children, _, err := w.Children(group)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range children {
						ops = append(ops, &zk.DeleteRequest{Path: group + "/" + c, Version: -1})
					}
					ops = append(ops, &zk.DeleteRequest{Path: group, Version: -1})
				}
				ops = append(ops, &zk.CreateRequest{Path: group, Acl: zk.WorldACL(zk.PermAll)},
					&zk.CreateRequest{Path: group + "/lock-", Data: []byte("unseen"), Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)})
				if _, err := w.Multi(ops...); err != nil {
					t.Fatal(err)
				}
			}
			p.Blackhole(true)
			remake() // an owner the observer cannot see
			remake() // the one it sees next
			time.Sleep(200 * time.Millisecond)
			p.Blackhole(false)
			if c, _ := untilOwner(t, o); !c.Gap {
				t.Fatalf("the owner of a group made twice between two looks reported without a gap mark: %+v", c)
			}
		})
	}
}

// TestGroupMadeOnceWhileMissingIsNoGap: a group the observer saw missing,
// made once with an owner: the parent's child version moved by one, the
// group's making alone, so the owner comes without a gap mark.
func TestGroupMadeOnceWhileMissingIsNoGap(t *testing.T) {
	group := groupPath(t) + "/g"
	maker, o := watchedMissing(t, group)
	if _, err := maker.Multi(&zk.CreateRequest{Path: group, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: group + "/lock-", Data: []byte("seen"), Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatal(err)
	}
	if c, gap := untilOwner(t, o); gap {
		t.Fatalf("the owner of a group made once while the observer saw it missing reported with a gap mark: %+v", c)
	}
}

// watchedMissing makes the ancestors of group, not group, and observes
// it (as a lock) past its first snapshot, which finds it missing; maker
// is a connection to change it with.
func watchedMissing(t *testing.T, group string) (maker *zk.Conn, o source) {
	t.Helper()
	addrs := sharedAddrs(t)
	maker = session(t, addrs).Conn()
	var dirs []string
	for d := path.Dir(group); d != "/"; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		if _, err := maker.Create(d, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	o = observe(t, session(t, addrs), group, elect.AsRecipe(elect.RecipeLock))
	expect(t, o, elect.Snapshot, nil)
	return maker, o
}

// untilOwner reads o until a change names an owner, and returns it and
// whether any change on the way, that one included, was marked a gap.
func untilOwner(t *testing.T, o source) (c elect.Change, gap bool) {
	t.Helper()
	for {
		c = next(t, o)
		t.Logf("%s owner=%v gap=%v", c.Kind, c.Owner, c.Gap)
		if gap = gap || c.Gap; c.Owner != nil {
			return c, gap
		}
	}
}

// TestGroupMadeAndDeletedBetweenTwoMissingLooksIsAGap: the observer sees
// the group missing; the group is made, owned and deleted again before
// the observer looks again (it finds it missing again); then made once
// with an owner. Two missing views made no change, and the last making
// counted as the only one, so the middle tenure left no gap mark (found
// by a review); the parent's child version moved meanwhile, and now says
// so.
func TestGroupMadeAndDeletedBetweenTwoMissingLooksIsAGap(t *testing.T) {
	group := groupPath(t) + "/g"
	maker, o := watchedMissing(t, group)
	// A whole incarnation in one transaction: made, owned by lock-0000000000, released, deleted.
	if _, err := maker.Multi(
		&zk.CreateRequest{Path: group, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: group + "/lock-0000000000", Data: []byte("unseen"), Flags: zk.FlagEphemeral, Acl: zk.WorldACL(zk.PermAll)},
		&zk.DeleteRequest{Path: group + "/lock-0000000000", Version: -1},
		&zk.DeleteRequest{Path: group, Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the observer's exists watch fired; it looked again and found the group missing
	if _, err := maker.Multi(&zk.CreateRequest{Path: group, Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: group + "/lock-", Data: []byte("seen"), Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatal(err)
	}
	if _, gap := untilOwner(t, o); !gap {
		t.Fatal("a whole tenure (group made, owned, deleted between two looks that found it missing) went unreported with no gap mark")
	}
}

// TestParentMadeAgainHidesNoIncarnation: the parent's child version starts
// again at 0 when the parent is deleted and made again (a container parent
// the server deleted once empty, a deleteall): the count then said "made
// once" across a whole hidden incarnation (found by a review). The
// parent's czxid now has to be the same too.
func TestParentMadeAgainHidesNoIncarnation(t *testing.T) {
	group := groupPath(t) + "/p/g"
	parent := path.Dir(group)
	maker, o := watchedMissing(t, group) // the parent, fresh: child version 0
	acl := zk.WorldACL(zk.PermAll)
	if _, err := maker.Multi(
		&zk.CreateRequest{Path: group, Acl: acl},
		&zk.CreateRequest{Path: group + "/lock-0000000000", Data: []byte("unseen"), Flags: zk.FlagEphemeral, Acl: acl},
		&zk.DeleteRequest{Path: group + "/lock-0000000000", Version: -1},
		&zk.DeleteRequest{Path: group, Version: -1},
		&zk.DeleteRequest{Path: parent, Version: -1},
		&zk.CreateRequest{Path: parent, Acl: acl},
		&zk.CreateRequest{Path: group, Acl: acl},
		&zk.CreateRequest{Path: group + "/lock-", Data: []byte("seen"), Flags: zk.FlagEphemeral | zk.FlagSequence, Acl: acl},
	); err != nil {
		t.Fatal(err)
	}
	if _, gap := untilOwner(t, o); !gap {
		t.Fatal("a whole tenure hidden by the parent's remaking went unreported with no gap mark")
	}
}
