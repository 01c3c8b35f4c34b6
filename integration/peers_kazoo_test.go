package integration_test

import (
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

const kazooSession = 3 * time.Second

// TestKazooPeers observes groups written by Kazoo 2.8 in a Python process:
// an Election (whose nodes look like a lock's, so the observer is told the
// recipe with AsRecipe) and a Lock, then the process killed.
func TestKazooPeers(t *testing.T) {
	zkc := zktest.Shared(t)
	kz := startKazoo(t, zkc.ConnectString(), kazooSession)
	s := session(t, zkc.Addrs())
	survivor := rawConn(t, zkc.Addrs(), 4*time.Second)
	eg, lg := groupPath(t, "election"), groupPath(t, "lock")
	ew := observe(t, s, eg, elect.AsRecipe(elect.RecipeElection))
	lw := observe(t, s, lg)
	// Kazoo sorts any "__lock__<sequence>" name with its own, so a node made
	// by hand with that name queues behind Kazoo's and survives the kill.
	queueSurvivor := func(t *testing.T, w *watcher, group string) string {
		created, err := survivor.Create(group+"/survivor__lock__", []byte("survivor"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		w.candidate(elect.Joined, path.Base(created), step)
		return path.Base(created)
	}
	var electionSurvivor, lockSurvivor string

	t.Run("Election", func(t *testing.T) {
		ew.t = t
		nodes := map[string]string{}
		for _, id := range []string{"a", "b", "c"} {
			kz.send("join " + eg + " " + id)
			nodes[id] = kz.expect("joined "+id, step)[0]
		}
		kz.expect("leader a", step)
		c := ew.owner(nodes["a"], step)
		if c.Owner.ID != "a" || c.Recipe != elect.RecipeElection || c.Owner.Czxid == 0 {
			t.Fatalf("owner of a Kazoo election: %s; want id a (Kazoo's identifier), recipe election as given", describe(c))
		}
		if info, _ := elect.ParseName(nodes["a"]); info.Convention != "kazoo" {
			t.Fatalf("node %s read as convention %q; want kazoo", nodes["a"], info.Convention)
		}
		ew.candidate(elect.Joined, nodes["c"], step)

		kz.send("leave c")
		kz.expect("left c", step)
		ew.candidate(elect.Left, nodes["c"], step)

		kz.send("leave a")
		kz.expect("left a", step)
		c = ew.owner(nodes["b"], step)
		if c.Kind != elect.OwnerChanged || c.Owner.ID != "b" || c.Previous == nil || c.Previous.Node != nodes["a"] {
			t.Fatalf("after a left: %s; want a -> b", describe(c))
		}
		kz.expect("leader b", step) // Kazoo agrees with the observer
		electionSurvivor = queueSurvivor(t, ew, eg)
	})

	t.Run("Lock", func(t *testing.T) {
		lw.t = t
		kz.send("lock " + lg + " x")
		x := kz.expect("joined x", step)[0]
		kz.expect("locked x", step)
		c := lw.owner(x, step)
		if c.Owner.ID != "x" || c.Recipe != elect.RecipeLock {
			t.Fatalf("owner of a Kazoo lock: %s; want x, recipe lock (guessed)", describe(c))
		}
		kz.send("lock " + lg + " y")
		y := kz.expect("joined y", step)[0]
		lw.candidate(elect.Joined, y, step)
		lockSurvivor = queueSurvivor(t, lw, lg)

		kz.send("unlock x")
		kz.expect("unlocked x", step)
		kz.expect("locked y", step)
		c = lw.owner(y, step)
		if c.Owner.ID != "y" || c.Previous == nil || c.Previous.Node != x {
			t.Fatalf("after x unlocked: %s; want x -> y", describe(c))
		}
		v, err := elect.ReadGroup(ctxFor(t, step), s, lg)
		if err != nil {
			t.Fatal(err)
		}
		if v.Recipe != elect.RecipeLock || v.Owner == nil || v.Owner.ID != "y" || len(v.Queue) != 2 || v.Queue[1].Node != lockSurvivor {
			t.Fatalf("ReadGroup(%s) = %s %v %v; want lock, y, then the survivor", lg, v.Recipe, v.Owner, v.Queue)
		}
	})

	t.Run("ProcessKilled", func(t *testing.T) {
		ew.t, lw.t = t, t
		kz.kill()
		for _, g := range []struct {
			w    *watcher
			node string
			prev string
		}{{ew, electionSurvivor, "b"}, {lw, lockSurvivor, "y"}} {
			c := g.w.owner(g.node, step+kazooSession)
			if c.Owner.ID != "survivor" || c.Previous == nil || c.Previous.ID != g.prev {
				t.Fatalf("%s after Kazoo died: %s; want survivor after %s", g.w.group, describe(c), g.prev)
			}
		}
	})
}
