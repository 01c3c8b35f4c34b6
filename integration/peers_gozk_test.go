package integration_test

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestGoZookeeperLockPeers observes go-zookeeper's zk.Lock: three clients,
// each with its own session, one of them writing no data.
func TestGoZookeeperLockPeers(t *testing.T) {
	zkc := zktest.Shared(t)
	s := session(t, zkc.Addrs())
	g := groupPath(t, "lock")
	w := observe(t, s, g)
	conns := []*zk.Conn{rawConn(t, zkc.Addrs(), 4*time.Second), rawConn(t, zkc.Addrs(), 4*time.Second), rawConn(t, zkc.Addrs(), 4*time.Second)}
	locks := make([]*zk.Lock, 3)
	for i := range locks {
		locks[i] = zk.NewLock(conns[i], g, zk.WorldACL(zk.PermAll))
	}
	if err := locks[0].LockWithData([]byte("ga")); err != nil {
		t.Fatal(err)
	}
	c := w.await("owner ga", step, func(c elect.Change) bool { return c.Owner != nil && c.Owner.ID == "ga" })
	if c.Recipe != elect.RecipeLock || c.Owner.Session != conns[0].SessionID() {
		t.Fatalf("go-zookeeper lock: %s; want recipe lock, session 0x%x", describe(c), conns[0].SessionID())
	}
	if info, _ := elect.ParseName(c.Owner.Node); info.Convention != "go-zookeeper" {
		t.Fatalf("node %s read as %q; want go-zookeeper", c.Owner.Node, info.Convention)
	}
	a := c.Owner.Node
	got := make(chan error, 2)
	go func() { got <- locks[1].LockWithData([]byte("gb")) }()
	b := w.await("gb queued", step, func(c elect.Change) bool { return c.Kind == elect.Joined }).Candidate.Node
	go func() { got <- locks[2].Lock() }() // no data: the id comes from the name
	cNode := w.await("third waiter", step, func(c elect.Change) bool { return c.Kind == elect.Joined }).Candidate.Node

	if err := locks[0].Unlock(); err != nil {
		t.Fatal(err)
	}
	c = w.owner(b, step)
	if c.Owner.ID != "gb" || c.Previous == nil || c.Previous.Node != a {
		t.Fatalf("after unlock: %s; want ga -> gb", describe(c))
	}
	if err := <-got; err != nil {
		t.Fatalf("second go-zookeeper lock: %v", err)
	}
	conns[1].Close() // the holder's session closes: its node goes at once
	c = w.owner(cNode, step)
	if c.Owner.Session != conns[2].SessionID() || c.Owner.ID == "" || c.Previous == nil || c.Previous.ID != "gb" {
		t.Fatalf("after the holder's session closed: %s; want the third client (session 0x%x)", describe(c), conns[2].SessionID())
	}
	if err := <-got; err != nil {
		t.Fatalf("third go-zookeeper lock: %v", err)
	}
}

// TestSeedNamePeers observes groups whose nodes were made by hand with the
// seeds' names: "candidate-<sessionID>_", "lock-" and "n_", SEQUENCE|
// EPHEMERAL, with and without data.
func TestSeedNamePeers(t *testing.T) {
	zkc := zktest.Shared(t)
	s := session(t, zkc.Addrs())
	conns := []*zk.Conn{rawConn(t, zkc.Addrs(), 4*time.Second), rawConn(t, zkc.Addrs(), 4*time.Second), rawConn(t, zkc.Addrs(), 4*time.Second)}
	create := func(c *zk.Conn, group, name string, data string) string {
		t.Helper()
		p, err := c.Create(group+"/"+name, []byte(data), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		return path.Base(p)
	}

	t.Run("candidate-session", func(t *testing.T) {
		g := groupPath(t, "election")
		mkdirs(t, conns[0], g)
		w := observe(t, s, g)
		w.await("empty snapshot", step, func(c elect.Change) bool { return c.Kind == elect.Snapshot && c.Owner == nil })
		var nodes []string
		for i, c := range conns {
			name := fmt.Sprintf("candidate-%d_", c.SessionID()) // decimal, as one seed writes it
			if i == 1 {
				name = fmt.Sprintf("candidate-0x%x_", c.SessionID()) // hex, as another does
			}
			nodes = append(nodes, create(c, g, name, ""))
		}
		c := w.owner(nodes[0], step)
		if c.Recipe != elect.RecipeElection || c.Owner.Session != conns[0].SessionID() {
			t.Fatalf("seed election: %s; want election owned by session 0x%x", describe(c), conns[0].SessionID())
		}
		// The name's session is what the seed's parser reads (ParseName);
		// events carry only what ephemeralOwner proves, and the observer
		// reads no waiting candidate's stat.
		for i := 1; i < 3; i++ {
			j := w.candidate(elect.Joined, nodes[i], step)
			if info, _ := elect.ParseName(nodes[i]); info.Session != conns[i].SessionID() || j.Candidate.Session != 0 {
				t.Fatalf("candidate %s: name says session 0x%x, event 0x%x; want 0x%x from the name and none claimed in the event",
					nodes[i], info.Session, j.Candidate.Session, conns[i].SessionID())
			}
		}
		if err := conns[0].Delete(g+"/"+nodes[0], -1); err != nil {
			t.Fatal(err)
		}
		w.owner(nodes[1], step)
		conns[1].Close()
		c = w.owner(nodes[2], step)
		if c.Previous == nil || c.Previous.Node != nodes[1] || len(c.Queue) != 1 {
			t.Fatalf("after the leader's session closed: %s", describe(c))
		}
	})

	t.Run("lock-", func(t *testing.T) {
		g := groupPath(t, "mutex")
		mkdirs(t, conns[0], g)
		w := observe(t, s, g)
		first := create(conns[0], g, "lock-", "L1")
		second := create(conns[2], g, "lock-", "")
		c := w.owner(first, step)
		if c.Recipe != elect.RecipeLock || c.Owner.ID != "L1" {
			t.Fatalf("seed lock: %s; want lock owned by L1", describe(c))
		}
		if err := conns[0].Delete(g+"/"+first, -1); err != nil {
			t.Fatal(err)
		}
		if c := w.owner(second, step); c.Previous == nil || c.Previous.ID != "L1" {
			t.Fatalf("after L1 released: %s", describe(c))
		}
	})

	t.Run("n_", func(t *testing.T) {
		g := groupPath(t, "n")
		mkdirs(t, conns[0], g)
		guessed, given := observe(t, s, g), observe(t, s, g, elect.AsRecipe(elect.RecipeLock))
		first := create(conns[0], g, "n_", "N1")
		for _, w := range []*watcher{guessed, given} {
			c := w.owner(first, step)
			want := elect.RecipeElection
			if w == given {
				want = elect.RecipeLock
			}
			if c.Recipe != want || c.Owner.ID != "N1" {
				t.Fatalf("n_ group: %s; want recipe %s, owner N1", describe(c), want)
			}
		}
		if err := conns[0].Delete(g+"/"+first, -1); err != nil {
			t.Fatal(err)
		}
		guessed.await("no owner", step, func(c elect.Change) bool { return c.Kind == elect.OwnerChanged && c.Owner == nil })
	})
}
