package integration_test

import (
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// curatorSession is the Curator clients' session timeout: killing the JVM
// hands their nodes over after about this long.
const curatorSession = 3 * time.Second

const step = 20 * time.Second // bound of one observed step

// TestCuratorPeers observes groups written by Apache Curator 5.4 running in
// a JVM: a LeaderLatch election and an InterProcessMutex lock, then both at
// once beside a herald election, then the JVM killed.
func TestCuratorPeers(t *testing.T) {
	zkc := zktest.Shared(t)
	cur := startCurator(t, zkc.ConnectString(), curatorSession)
	s := session(t, zkc.Addrs())
	survivor := rawConn(t, zkc.Addrs(), 4*time.Second)
	latch, mutex := groupPath(t, "latch"), groupPath(t, "mutex")
	lw := observe(t, s, latch) // before the group exists: Curator creates it
	mw := observe(t, s, mutex)
	var latchSurvivor string
	gozkLocked := make(chan error, 1)

	t.Run("LeaderLatch", func(t *testing.T) {
		lw.t = t
		lw.await("snapshot of the missing group", step, func(c elect.Change) bool { return c.Kind == elect.Snapshot })
		nodes := map[string]string{}
		for _, id := range []string{"a", "b", "c"} {
			cur.send("join " + latch + " " + id)
			nodes[id] = cur.expect("joined "+id, step)[0]
		}
		c := lw.owner(nodes["a"], step)
		if c.Owner.ID != "a" || c.Recipe != elect.RecipeElection || c.Owner.Session == 0 || c.Owner.Czxid == 0 {
			t.Fatalf("owner of a Curator latch: %s; want id a (the node's data), recipe election, session and term", describe(c))
		}
		lw.candidate(elect.Joined, nodes["c"], step)
		cur.send("leader a")
		cur.expect("leader a", step)

		cur.send("leave c")
		cur.expect("left c", step)
		lw.candidate(elect.Left, nodes["c"], step)

		cur.send("leave a")
		cur.expect("left a", step)
		c = lw.owner(nodes["b"], step)
		if c.Kind != elect.OwnerChanged || c.Previous == nil || c.Previous.Node != nodes["a"] || c.Owner.ID != "b" {
			t.Fatalf("after a left: %s; want owner-changed a -> b", describe(c))
		}
		cur.send("leader b")
		cur.expect("leader b", step) // Curator agrees with the observer

		// A go-zookeeper session queues behind b with Curator's node name,
		// so it inherits the latch when the JVM dies.
		created, err := survivor.Create(latch+"/latch-", []byte("survivor"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		latchSurvivor = path.Base(created)
		lw.candidate(elect.Joined, latchSurvivor, step)

		v, err := elect.ReadGroup(ctxFor(t, step), s, latch)
		if err != nil {
			t.Fatal(err)
		}
		if v.Recipe != elect.RecipeElection || v.Owner == nil || v.Owner.ID != "b" || len(v.Queue) != 2 || v.Queue[1].Node != latchSurvivor {
			t.Fatalf("ReadGroup(%s) = recipe %s owner %v queue %v; want election, b, then the survivor", latch, v.Recipe, v.Owner, v.Queue)
		}
	})

	t.Run("InterProcessMutex", func(t *testing.T) {
		mw.t = t
		mw.await("snapshot of the missing group", step, func(c elect.Change) bool { return c.Kind == elect.Snapshot })
		cur.send("lock " + mutex + " x")
		cur.expect("queued x", step)
		cur.expect("locked x", step)
		c := mw.await("owner x", step, func(c elect.Change) bool { return c.Owner != nil && c.Owner.ID == "x" })
		if c.Recipe != elect.RecipeLock {
			t.Fatalf("Curator mutex guessed as %s; want lock", c.Recipe)
		}
		if info, _ := elect.ParseName(c.Owner.Node); info.Convention != "curator" {
			t.Fatalf("node %s read as convention %q; want curator", c.Owner.Node, info.Convention)
		}
		x := c.Owner.Node

		cur.send("lock " + mutex + " y")
		cur.expect("queued y", step)
		y := mw.await("y queued", step, func(c elect.Change) bool { return c.Kind == elect.Joined }).Candidate.Node

		// go-zookeeper's Lock sorts Curator's "-lock-" names correctly, so
		// it can wait in the same queue.
		gl := zk.NewLock(survivor, mutex, zk.WorldACL(zk.PermAll))
		go func() { gozkLocked <- gl.LockWithData([]byte("gozk")) }()
		mw.await("go-zookeeper waiter", step, func(c elect.Change) bool {
			if c.Kind != elect.Joined {
				return false
			}
			info, _ := elect.ParseName(c.Candidate.Node)
			return info.Convention == "go-zookeeper"
		})
		v, err := elect.ReadGroup(ctxFor(t, step), s, mutex)
		if err != nil {
			t.Fatal(err)
		}
		if got := queueIDs(elect.Change{Queue: v.Queue}); len(got) != 3 || got[0] != "x" || v.Queue[1].Node != y {
			t.Fatalf("queue %v; want x, y, then the go-zookeeper waiter", v.Queue)
		}

		cur.send("unlock x")
		cur.expect("unlocked x", step)
		c = mw.owner(y, step)
		if c.Owner.ID != "y" || c.Previous == nil || c.Previous.Node != x {
			t.Fatalf("after x unlocked: %s; want owner y, previous x", describe(c))
		}
		cur.expect("locked y", step)
		select {
		case err := <-gozkLocked:
			t.Fatalf("go-zookeeper lock returned while y holds it: %v", err)
		default:
		}
	})

	t.Run("MixedWithHerald", func(t *testing.T) { mixedWithHerald(t, zkc.Addrs(), s, cur) })

	t.Run("ProcessKilled", func(t *testing.T) {
		lw.t, mw.t = t, t
		killed := time.Now()
		cur.kill()
		c := lw.owner(latchSurvivor, step+curatorSession)
		if c.Owner.ID != "survivor" || c.Previous == nil || c.Previous.ID != "b" {
			t.Fatalf("latch after the JVM died: %s; want survivor after b", describe(c))
		}
		c = mw.await("go-zookeeper owner", step+curatorSession, func(c elect.Change) bool {
			return c.Kind == elect.OwnerChanged && c.Owner != nil && c.Owner.ID == "gozk"
		})
		if c.Previous == nil || c.Previous.ID != "y" {
			t.Fatalf("mutex after the JVM died: %s; want gozk after y", describe(c))
		}
		select {
		case err := <-gozkLocked:
			if err != nil {
				t.Fatalf("go-zookeeper lock: %v", err)
			}
		case <-time.After(step):
			t.Fatal("go-zookeeper lock not acquired after the Curator holder died")
		}
		t.Logf("ownership moved %v after the kill (session timeout %v)", time.Since(killed).Round(time.Millisecond), curatorSession)
	})
}

// mixedWithHerald runs herald candidates and a Curator latch on different
// groups at once, one observer session watching both.
func mixedWithHerald(t *testing.T, addrs []string, s *elect.Session, cur *peer) {
	hg, cg := groupPath(t, "herald"), groupPath(t, "curator")
	hw, cw := observe(t, s, hg), observe(t, s, cg)
	ctx := ctxFor(t, time.Minute)
	campaign := func(id string) <-chan *elect.Handle {
		e, err := elect.NewElection(session(t, addrs), hg, elect.CreateParents())
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan *elect.Handle, 1)
		go func() {
			h, err := e.Campaign(ctx, id)
			if err != nil {
				t.Errorf("campaign %s: %v", id, err)
				h = nil
			}
			ch <- h
		}()
		return ch
	}
	h1 := <-campaign("h1")
	if h1 == nil {
		t.FailNow()
	}
	if c := hw.owner(h1.Node(), step); c.Owner.ID != "h1" || c.Owner.Czxid != h1.Term() {
		t.Fatalf("herald group: %s; want h1 with term %d", describe(c), h1.Term())
	}
	cur.send("join " + cg + " p1")
	p1 := cur.expect("joined p1", step)[0]
	if c := cw.owner(p1, step); c.Owner.ID != "p1" {
		t.Fatalf("Curator group: %s; want p1", describe(c))
	}
	h2 := campaign("h2")
	hw.await("h2 queued", step, func(c elect.Change) bool { return c.Kind == elect.Joined })
	cur.send("join " + cg + " p2")
	p2 := cur.expect("joined p2", step)[0]
	cw.candidate(elect.Joined, p2, step)

	// Both owners go at the same moment.
	cur.send("leave p1")
	if err := h1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	cur.expect("left p1", step)
	h := <-h2
	if h == nil {
		t.FailNow()
	}
	c := hw.owner(h.Node(), step)
	if c.Kind != elect.OwnerChanged || c.Owner.ID != "h2" || c.Previous == nil || c.Previous.Node != h1.Node() || c.Reason != elect.ReasonResigned {
		t.Fatalf("herald group after h1 resigned: %s reason %q; want h1 -> h2, resigned", describe(c), c.Reason)
	}
	if c.OwnerTerm() <= h1.Term() {
		t.Fatalf("term went from %d to %d; terms only grow", h1.Term(), c.OwnerTerm())
	}
	c = cw.owner(p2, step)
	if c.Kind != elect.OwnerChanged || c.Owner.ID != "p2" || c.Previous == nil || c.Previous.Node != p1 {
		t.Fatalf("Curator group after p1 left: %s; want p1 -> p2", describe(c))
	}
	for _, p := range c.Queue {
		if info, _ := elect.ParseName(p.Node); info.Convention != "curator" {
			t.Fatalf("Curator group holds %s (convention %s)", p.Node, info.Convention)
		}
	}
	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	cur.send("leave p2")
	cur.expect("left p2", step)
	hw.await("herald group empty", step, func(c elect.Change) bool { return c.Kind == elect.OwnerChanged && c.Owner == nil })
	cw.await("Curator group empty", step, func(c elect.Change) bool { return c.Kind == elect.OwnerChanged && c.Owner == nil })
}
