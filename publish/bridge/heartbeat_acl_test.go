package bridge_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestHeartbeatConfirmsNothingBelowARootMadeUnreadable (found by an
// adversarial test): the ACL of one of a running bridge's discover roots
// is changed so that the bridge may not READ it, and a group with an
// owner is made below it. ZooKeeper tells a session no change of a node
// it may not read, so the root's watch never fired: the bridge never
// listed it again, said nothing, and its heartbeats confirmed the new
// group, in their scope, as having no owner. It must notice (its listing
// of the root then fails), confirm no round until it can list the root,
// and then publish the owner and confirm again.
func TestHeartbeatConfirmsNothingBelowARootMadeUnreadable(t *testing.T) {
	a, s, l := twoRootBridge(t, true)
	if _, err := s.Conn().SetACL(a, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	ownedWhileUnreadable(t, s, l, a, "the new owner published, and confirmed, once the root is readable again")
}

// acquire takes the lock group g on s, making its parents.
func acquire(t *testing.T, s *elect.Session, g string) {
	t.Helper()
	lk, err := elect.NewLock(s, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Acquire(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// TestHeartbeatConfirmsNothingBelowARootMadeUnreadableByItsMaker: a
// discover root missing when the bridge starts is made with an ACL that
// does not let the bridge READ it, and a group with an owner below it.
// The exists watch the bridge set on the root told it nothing: it
// waited for the root for ever, and its heartbeats confirmed the group,
// in their scope, as having no owner.
func TestHeartbeatConfirmsNothingBelowARootMadeUnreadableByItsMaker(t *testing.T) {
	a, s, l := twoRootBridge(t, false)
	if _, err := s.Conn().Create(a, nil, 0, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermAdmin)); err != nil {
		t.Fatal(err)
	}
	ownedWhileUnreadable(t, s, l, a, "the new owner published, and confirmed, once the root is readable")
}

// twoRootBridge makes the discover roots a and b below /t (a only when
// makeA), an owner of b/g, and a bridge with a fast heartbeat on both
// roots; it returns once that owner is published, so the bridge has
// listed both roots before a test takes READ from a.
func twoRootBridge(t *testing.T, makeA bool) (string, *elect.Session, *ledger) {
	t.Helper()
	a, b := groupPath(t)+"-a", groupPath(t)+"-b"
	addrs := zkAddrs(t)
	s := session(t, addrs)
	if makeA {
		makeOpen(t, s, "/t", a, b)
	} else {
		makeOpen(t, s, "/t", b)
	}
	t.Cleanup(func() { _, _ = s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1) })
	acquire(t, s, b+"/g")
	l := newLedger()
	start(t, bridge.Config{Servers: addrs, Discover: []string{a, b}, Sinks: []publish.Sink{l}, Heartbeat: 20 * time.Millisecond})
	waitFor(t, 30*time.Second, "the owner below the other root published", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.owned[b+"/g"]
	})
	return a, s, l
}

// ownedWhileUnreadable gives a+"/new" an owner while a is unreadable to
// the bridge, lets a second of heartbeats pass (the ledger checks each
// against what existed), then opens a again: the owner must be
// published and a round confirmed, and no heartbeat may have been wrong.
func ownedWhileUnreadable(t *testing.T, s *elect.Session, l *ledger, a, what string) {
	t.Helper()
	defer l.reportBad(t) // the heartbeats while a was unreadable, even when the owner never comes
	acquire(t, s, a+"/new")
	l.existed(a+"/new", time.Now())
	time.Sleep(time.Second) // heartbeats meanwhile, checked
	if _, err := s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, what, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.owned[a+"/new"] && l.checked > 0
	})
}

// TestHeartbeatConfirmsNothingBelowALevelMadeUnreadable: as above, for a
// pattern's "*" level (root/*/*) rather than its root. The heartbeat
// looked again at the roots whose watches may have been swallowed, not
// at the levels below them: the level's children watch never fired, and
// the heartbeats confirmed the group made below it as having no owner. A
// level with a fixed name below it (root/*/new) has no discoverer: its
// group is observed by path, and heard of by its own exists watch.
func TestHeartbeatConfirmsNothingBelowALevelMadeUnreadable(t *testing.T) {
	for _, last := range []string{"*", "new"} {
		t.Run("root/*/"+last, func(t *testing.T) {
			root, addrs, s := madeRoot(t)
			lv, other := root+"/svc", root+"/other"
			makeOpen(t, s, lv, other)
			t.Cleanup(func() { _, _ = s.Conn().SetACL(lv, zk.WorldACL(zk.PermAll), -1) })
			acquire(t, s, other+"/new")
			l := newLedger()
			start(t, bridge.Config{Servers: addrs, Patterns: []bridge.Pattern{{Root: root, Segs: []string{"*", last}}},
				Sinks: []publish.Sink{l}, Heartbeat: 20 * time.Millisecond})
			l.existed(other+"/new", time.Now())
			// A heartbeat after that waited for every level's first listing.
			waitFor(t, 30*time.Second, "the other level's owner published and confirmed", func() bool {
				l.mu.Lock()
				defer l.mu.Unlock()
				return l.owned[other+"/new"] && l.checked > 0
			})
			if _, err := s.Conn().SetACL(lv, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermAdmin), -1); err != nil {
				t.Fatal(err)
			}
			ownedWhileUnreadable(t, s, l, lv, "the new owner published once the level is readable again")
		})
	}
}
