package elect_test

import (
	"errors"
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
)

// TestParentMadeAgainBetweenReads: HBase's /hbase wiped (hbase clean
// --cleanZk) and made again between two reads of its master restarts the
// parent's child counter from 0, so a master that came and went in the new
// parent moved it less than the old parent's count: the read that found
// the next master compared the two counters and said no gap. The parent's
// czxid tells a parent made again, and then nothing tells what the old
// one held after the last read: a gap, for a running observer across a
// lost connection and for one continuing from another's last view
// (Since).
func TestParentMadeAgainBetweenReads(t *testing.T) {
	addrs := sharedAddrs(t)
	p := proxyTo(t, addrs[0])
	obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(8*time.Second))
	op := session(t, addrs)
	parent := groupPath(t) + "/hbase"
	mkdirs(t, op.Conn(), parent)
	master := parent + "/master"
	siblings := []string{"backup-masters", "rs", "draining", "table", "splitWAL", "running"}
	for _, s := range siblings {
		if _, err := op.Conn().Create(parent+"/"+s, nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	hmaster := func(host string) *elect.Session {
		s := session(t, addrs)
		if _, err := s.Conn().Create(master, hbaseMasterData(host, 16000, 1), zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := hmaster("a")
	o := observeSingle(t, obs, master, elect.SingleNodeFor(master))
	expect(t, o.Observer, elect.Snapshot, ownerIs("a,16000,1"))
	last, _ := o.Last()
	p.Refuse(true)
	p.Cut()
	expect(t, o.Observer, elect.Unknown, nil)
	// a goes, /hbase is wiped and made again; master c comes and goes in
	// it, then b holds.
	_ = a.Close()
	wipe(t, op.Conn(), parent, siblings)
	_ = hmaster("c").Close()
	b := hmaster("b")
	p.Refuse(false)
	if c := expect(t, o.Observer, elect.Snapshot, ownerIs("b,16000,1")); !c.Gap {
		t.Errorf("master c led unseen in /hbase made again, yet: %+v", c)
	}
	// Made again with nothing in it but the next master: still a gap,
	// since nothing tells what the old parent held after b was read (a
	// master may have come and gone there before the wipe).
	p.Refuse(true)
	p.Cut()
	expect(t, o.Observer, elect.Unknown, nil)
	_ = b.Close()
	wipe(t, op.Conn(), parent, nil)
	hmaster("d")
	p.Refuse(false)
	if c := expect(t, o.Observer, elect.Snapshot, ownerIs("d,16000,1")); !c.Gap {
		t.Errorf("/hbase made again after b, which nothing tells the end of, yet: %+v", c)
	}
	since := observeSingle(t, op, master, elect.SingleNodeFor(master), elect.Since(last))
	if c := expect(t, since.Observer, elect.Snapshot, ownerIs("d,16000,1")); !c.Gap {
		t.Errorf("continuing from a's view, masters b and c led unseen, yet: %+v", c)
	}
}

// wipe deletes parent's children and parent, then makes parent again,
// empty, as a wipe of a system's ZooKeeper data does before it restarts.
func wipe(t *testing.T, c *zk.Conn, parent string, children []string) {
	t.Helper()
	for _, s := range children {
		if err := c.Delete(path.Join(parent, s), -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(parent, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(parent, nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
}

// TestParentReapedWhileEmptyIsNoGap: a leader node's parent that is a
// container (Curator makes parents so) is deleted by the server once it
// stays empty, and made again by the next leader. Nothing watched the
// parent, so the next read found a parent made again, which nothing
// accounts for: the next leader was a gap though nothing went unseen.
// The parent's deletion is watched while no leader stands, and a parent
// found again is counted from its own parent's child version: made once,
// its counters tell the rest; made, led, deleted and made again before a
// read, it is still a gap.
func TestParentReapedWhileEmptyIsNoGap(t *testing.T) {
	addrs, obs, op, root := parentRoot(t)
	parent := root + "/app"
	leader := parent + "/leader"
	lead := func(id string) *elect.Session {
		s := session(t, addrs)
		if _, err := s.Conn().CreateContainer(parent, nil, zk.FlagContainer, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
		if _, err := s.Conn().Create(leader, []byte(id), zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// reap ends the leader, then deletes the empty parent as the server
	// does, and gives the observer a moment to read it gone.
	reap := func(o singleSource, s *elect.Session) {
		_ = s.Close()
		expect(t, o.Observer, elect.OwnerChanged, nilOwner)
		if err := op.Conn().Delete(parent, -1); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if sv, ok := o.Leader(); ok && !sv.ParentExists {
				return
			}
		}
	}
	a := lead("a")
	o := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic})
	expect(t, o.Observer, elect.Snapshot, ownerIs("a"))
	reap(o, a)
	b := lead("b")
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("b")); c.Gap {
		t.Errorf("b after the empty parent was reaped and made again: %+v; want no gap", c)
	}
	reap(o, b)
	// c leads and goes, its parent reaped, before d leads in a third.
	d := session(t, addrs)
	inOne(t, d.Conn(), makeOp(parent), leadOp(leader, "c"), deleteOp(leader), deleteOp(parent),
		makeOp(parent), leadOp(leader, "d"))
	if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("d")); !c.Gap {
		t.Errorf("d after c led in a parent made and reaped unseen: %+v; want a gap", c)
	}
}

func nilOwner(c elect.Change) error {
	if c.Owner != nil {
		return fmt.Errorf("owner %v, want none", c.Owner)
	}
	return nil
}

// TestLeaderOnAPathNeverMadeIsNoGap: a bridge started before the system
// whose leader it follows made its path (HDFS's failover controller makes
// /hadoop-ha/<nameservice> when formatted): the leader's parent and the
// parent's parent missing. Counted at the parent's parent alone, which
// had no count to read, the first leader came with a gap mark. The
// nearest ancestor that exists counts the making now, and each level
// below it made once says nothing came and went unseen; a level made,
// deleted and made again in between is still a gap.
func TestLeaderOnAPathNeverMadeIsNoGap(t *testing.T) {
	addrs, obs, _, root := parentRoot(t)
	t.Run("made once", func(t *testing.T) {
		leader := root + "/once/app/leader"
		o := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic})
		expect(t, o.Observer, elect.Snapshot, nilOwner)
		s := session(t, addrs)
		mkdirs(t, s.Conn(), path.Dir(leader))
		if _, err := s.Conn().Create(leader, []byte("a"), zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
		if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("a")); c.Gap {
			t.Errorf("the first leader on a path made for it: %+v; want no gap", c)
		}
	})
	t.Run("a level made again", func(t *testing.T) {
		x := root + "/again"
		leader := x + "/app/leader"
		o := observeSingle(t, obs, leader, elect.SingleNode{Format: ident.Generic})
		expect(t, o.Observer, elect.Snapshot, nilOwner)
		// c leads in /again/app and goes, and the app level is deleted
		// and made again for d, all in one transaction: unseen.
		s := session(t, addrs)
		inOne(t, s.Conn(), makeOp(x), makeOp(x+"/app"), leadOp(leader, "c"), deleteOp(leader), deleteOp(x+"/app"),
			makeOp(x+"/app"), leadOp(leader, "d"))
		if c := expect(t, o.Observer, elect.OwnerChanged, ownerIs("d")); !c.Gap {
			t.Errorf("d after c led in a level made, deleted and made again unseen: %+v; want a gap", c)
		}
	})
}
