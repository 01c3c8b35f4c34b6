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
	a, b := groupPath(t)+"-a", groupPath(t)+"-b"
	addrs := zkAddrs(t)
	s := session(t, addrs)
	for _, p := range []string{"/t", a, b} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1) })
	acquire(t, s, b+"/g")
	l := &ledger{owned: map[string]bool{}, any: map[string]bool{}, since: map[string]time.Time{}}
	start(t, bridge.Config{Servers: addrs, Discover: []string{a, b}, Sinks: []publish.Sink{l}, Heartbeat: 20 * time.Millisecond})
	waitFor(t, 30*time.Second, "the owner below the other root published", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.owned[b+"/g"]
	})
	if _, err := s.Conn().SetACL(a, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, a+"/new")
	l.existed(a+"/new", time.Now())
	time.Sleep(time.Second) // heartbeats meanwhile, checked
	if _, err := s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the new owner published, and confirmed, once the root is readable again", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.owned[a+"/new"] && l.checked > 0
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, bad := range l.bad {
		t.Error(bad)
	}
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
	a, b := groupPath(t)+"-a", groupPath(t)+"-b"
	addrs := zkAddrs(t)
	s := session(t, addrs)
	for _, p := range []string{"/t", b} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1) })
	acquire(t, s, b+"/g")
	l := &ledger{owned: map[string]bool{}, any: map[string]bool{}, since: map[string]time.Time{}}
	start(t, bridge.Config{Servers: addrs, Discover: []string{a, b}, Sinks: []publish.Sink{l}, Heartbeat: 20 * time.Millisecond})
	waitFor(t, 30*time.Second, "the owner below the other root published", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.owned[b+"/g"]
	})
	if _, err := s.Conn().Create(a, nil, 0, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermAdmin)); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, a+"/new")
	l.existed(a+"/new", time.Now())
	time.Sleep(time.Second) // heartbeats meanwhile, checked
	if _, err := s.Conn().SetACL(a, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the new owner published, and confirmed, once the root is readable", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.owned[a+"/new"] && l.checked > 0
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, bad := range l.bad {
		t.Error(bad)
	}
}
