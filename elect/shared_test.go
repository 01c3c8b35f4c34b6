package elect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// foreign creates a queue node as another client would: base is the name
// before the sequence (its client's dialect), on a raw session of its own.
func foreign(t *testing.T, group, base string) (string, *zk.Conn) {
	t.Helper()
	s := session(t, sharedAddrs(t))
	makeGroup(t, s.Conn(), group)
	p, err := s.Conn().Create(group+"/"+base, []byte("foreign"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	return path.Base(p), s.Conn()
}

// makeGroup creates group (a groupPath) and its parent as plain persistent
// nodes, as a client other than herald would; either may exist already.
func makeGroup(t *testing.T, c *zk.Conn, group string) {
	t.Helper()
	for _, p := range []string{path.Dir(group), group} {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}

// queued returns the herald node of session s in group, once it is there.
func queued(t *testing.T, look *elect.Session, group string, s *elect.Session) string {
	t.Helper()
	var node string
	eventually(t, 5*time.Second, "the herald node", func() bool {
		children, _, err := look.Conn().Children(group)
		if err != nil {
			return false
		}
		for _, c := range children {
			if info, ok := elect.ParseName(c); ok && info.Convention == "herald" && info.Session == s.ID() {
				node = c
				return true
			}
		}
		return false
	})
	return node
}

// A herald waiter joining a group writes its node in the dialect of the
// foreign clients there, so they order it by sequence.
func TestJoinInTheGroupsDialect(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	look := session(t, sharedAddrs(t))
	for _, c := range []struct {
		foreign, suffix string
		election        bool
	}{
		{"4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__", "__lock__", false},      // Kazoo Lock
		{"4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__", "__lock__", true},       // Kazoo Election
		{"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-latch-", "-latch-", false}, // Curator LeaderLatch
		{"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-", "-lock-", true},    // Curator LeaderSelector
		{"_c_0123456789abcdef0123456789abcdef-lock-", "-lock-", false},       // go-zookeeper
		{"n_", "-latch-", true},    // classic: the default
		{"lock-", "-lock-", false}, // classic: the default
	} {
		group := groupPath(t)
		holder, _ := foreign(t, group, c.foreign)
		s := session(t, sharedAddrs(t))
		var take func() (*elect.Handle, error)
		if c.election {
			e, _ := elect.NewElection(s, group)
			take = func() (*elect.Handle, error) { return e.Campaign(ctx, "h") }
		} else {
			l, _ := elect.NewLock(s, group)
			take = func() (*elect.Handle, error) { return l.Acquire(ctx) }
		}
		_, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := take()
			done <- err
		}()
		// The first create may be in the default dialect: the listing
		// right after it moves the node before it could own.
		var node string
		deadline := time.Now().Add(5 * time.Second)
		for node = queued(t, look, group, s); !strings.HasSuffix(node, c.suffix+node[len(node)-10:]) && time.Now().Before(deadline); node = queued(t, look, group, s) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.HasSuffix(node, c.suffix+node[len(node)-10:]) {
			t.Errorf("beside %s (election %v) herald wrote %s; want a name ending %s<seq>", holder, c.election, node, c.suffix)
		}
		select {
		case err := <-done:
			t.Fatalf("herald owns beside %s, which holds: %v", holder, err)
		case <-time.After(100 * time.Millisecond):
		}
		cancel()
		_ = s.Close()
	}
}

// A group whose foreign clients cannot order each other's names is
// refused at once, and herald leaves no node behind.
func TestUnsafeMixIsRefused(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	foreign(t, group, "4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__")
	foreign(t, group, "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-")
	s := session(t, sharedAddrs(t))
	l, _ := elect.NewLock(s, group)
	_, err := l.Acquire(ctx)
	if !errors.Is(err, elect.ErrUnsafeGroup) || !strings.Contains(err.Error(), "Kazoo") || !strings.Contains(err.Error(), "Curator") {
		t.Fatalf("Acquire in a Kazoo+Curator group: %v; want ErrUnsafeGroup naming both", err)
	}
	eventually(t, 5*time.Second, "herald's node removed", func() bool {
		children, _, err := s.Conn().Children(group)
		return err == nil && len(children) == 2
	})
	// Forcing a dialect is the user's word that the others can read it.
	f, _ := elect.NewLock(s, group, elect.WithDialect(elect.DialectKazoo))
	if _, err := f.TryAcquire(ctx); !errors.Is(err, elect.ErrLocked) {
		t.Fatalf("TryAcquire with a forced dialect: %v; want ErrLocked (it queued, and others hold)", err)
	}

	// Only clients make a group unsafe: beside a Curator mutex node, a
	// node with Kazoo's name that no session holds is no Kazoo client.
	junk := groupPath(t)
	_, kc := foreign(t, junk, "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-lock-")
	if _, err := kc.Create(junk+"/4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	j, _ := elect.NewLock(s, junk)
	if _, err := j.TryAcquire(ctx); !errors.Is(err, elect.ErrLocked) {
		t.Fatalf("TryAcquire beside a Curator node and a persistent Kazoo-named one: %v; want ErrLocked (it queued behind the Curator node)", err)
	}
}

// A foreign client that joins while a herald waiter waits, and needs
// another dialect, makes the waiter replace its node at its next listing:
// the foreign client cannot see the old one in its place.
func TestWaiterMovesToTheDialectOfLaterClients(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	look := session(t, addrs)
	a, x, b := session(t, addrs), session(t, addrs), session(t, addrs)
	la, _ := elect.NewLock(a, group, elect.CreateParents())
	ha, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	xctx, giveUp := context.WithCancel(ctx)
	lx, _ := elect.NewLock(x, group)
	go func() { _, _ = lx.Acquire(xctx) }()
	queued(t, look, group, x)
	got := make(chan *elect.Handle, 1)
	lb, _ := elect.NewLock(b, group)
	go func() {
		h, err := lb.Acquire(ctx)
		if err != nil {
			t.Errorf("b: %v", err)
		}
		got <- h
	}()
	before := queued(t, look, group, b)
	kz, kconn := foreign(t, group, "4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__")
	giveUp() // b's predecessor goes: b lists and sees the Kazoo node
	eventually(t, 5*time.Second, "b's node in Kazoo's dialect", func() bool {
		n := queued(t, look, group, b)
		return n != before && strings.Contains(n, "__lock__")
	})
	// The old node never owned, and says so, or a `herald lock` copy made
	// later would wait as for an owner deleted by hand.
	oldSeq, _ := elect.ParseSequence(before)
	eventually(t, 5*time.Second, "b's old node noted withdrawn", func() bool {
		_, ok := notedWithdrawn(t, look, group, oldSeq)
		return ok
	})
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		t.Fatalf("b owns %v while the Kazoo node %s is ahead of its new node", h, kz)
	case <-time.After(200 * time.Millisecond):
	}
	if err := kconn.Delete(group+"/"+kz, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		if h == nil || !strings.Contains(h.Node(), "__lock__") {
			t.Fatalf("b owns with %v", h)
		}
	case <-ctx.Done():
		t.Fatal("b never owned after the Kazoo node went")
	}
}

// A third session writing the holder's node (an operator's set, Curator's
// Revoker) or a waiting predecessor's node is no release: nobody else owns.
func TestWritesToQueueNodesAreNoRelease(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, b, c := session(t, addrs), session(t, addrs), session(t, addrs)
	third := session(t, addrs)
	la, _ := elect.NewLock(a, group, elect.CreateParents())
	ha, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	var nb string
	for _, s := range []*elect.Session{b, c} {
		l, _ := elect.NewLock(s, group)
		go func() {
			if h, err := l.Acquire(ctx); err == nil {
				got <- h.Node()
			}
		}()
		if n := queued(t, third, group, s); nb == "" {
			nb = n
		}
	}
	for _, n := range []string{ha.Node(), nb, ha.Node()} {
		if _, err := third.Conn().Set(group+"/"+n, []byte("__REVOKE__"), -1); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case n := <-got:
		t.Fatalf("%s took the lock after a write to a queue node, while %s holds", n, ha.Node())
	case <-time.After(500 * time.Millisecond):
	}
	if !ha.Held() {
		t.Fatalf("the holder lost the lock to a data write: %v", ha.Err())
	}
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != nb {
			t.Fatalf("%s owns after the release; want %s, next in line", n, nb)
		}
	case <-ctx.Done():
		t.Fatal("nobody owned after the release")
	}
}

// A waiter that acts on NodeDeleted only, as the classic recipe and
// Curator's LeaderLatch do, wakes when a herald owner lets go.
func TestDeletedOnlyWaiterWakesBehindHerald(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	for _, election := range []bool{false, true} {
		group := groupPath(t)
		s := session(t, sharedAddrs(t))
		var h *elect.Handle
		var err error
		if election {
			e, _ := elect.NewElection(s, group, elect.CreateParents())
			h, err = e.Campaign(ctx, "h")
		} else {
			l, _ := elect.NewLock(s, group, elect.CreateParents())
			h, err = l.Acquire(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		node, conn := foreign(t, group, "n_")
		children, _, _ := conn.Children(group)
		if len(children) < 2 {
			t.Fatalf("children %v", children)
		}
		ok, _, ch, err := conn.ExistsW(group + "/" + h.Node())
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDeleted {
				t.Fatalf("the waiter %s behind herald's %s saw %s; the classic recipe acts on NodeDeleted only", node, h.Node(), ev.Type)
			}
		case <-ctx.Done():
			t.Fatal("no event after the herald owner let go")
		}
	}
}

// Once a later term has written the checkpoint, an older owner's write is
// refused even while its node still exists: the fence orders terms, not
// just existence.
func TestFenceRefusesOlderTermAfterNewerWrote(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group, ha, b, w := fencedOwner(ctx, t)
	old := ha.Fence()
	if err := old.Checkpoint(ctx, w, []byte("a-1")); err != nil {
		t.Fatal(err)
	}
	// A second node in the same group, with a later czxid, writes as if
	// it owned (two owners, as a foreign client that cannot see herald's
	// nodes would make): the fence must still refuse the older term.
	newer := secondOwner(t, b, group)
	// Through a fence it cannot: its node is not the lowest, not the owner.
	if err := newer.Checkpoint(ctx, w, []byte("b-0")); !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("a node that is not the lowest wrote through a fence: %v; want ErrNotLeader", err)
	}
	// A writer that does not go through one (a tool, an older herald).
	cpData, _ := json.Marshal(elect.Checkpoint{Term: newer.Term, Node: newer.Node, ID: "b", Time: time.Now(), Data: []byte("b-1")})
	if _, err := w.Conn().Set(group+"/"+elect.CheckpointNode, cpData, -1); err != nil {
		t.Fatal(err)
	}
	err := old.Checkpoint(ctx, w, []byte("a-2"))
	if !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("older term's checkpoint after a newer one: %v; want ErrNotLeader", err)
	}
	if err := ha.Checkpoint(ctx, []byte("a-3")); !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("older handle's checkpoint: %v; want ErrNotLeader", err)
	}
	cp, err := elect.ReadCheckpoint(ctx, w, group)
	if err != nil || string(cp.Data) != "b-1" || cp.Term != newer.Term {
		t.Fatalf("checkpoint %+v, %v; want b-1 at term %d", cp, err, newer.Term)
	}
	// Nor may it take office now: a later term saved a checkpoint.
	if err := ha.Acknowledge(ctx, "a"); !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("older handle's acknowledgment after a newer term's checkpoint: %v; want ErrNotLeader", err)
	}
}

// TestFenceRefusesOlderTermAfterNewerTookOffice: beside an owner whose
// node still exists, a second owner with a later term (a client that
// cannot see herald's nodes) wrote the office or the checkpoint. The older
// term's acknowledgment was refused once the later one acknowledged, but
// its checkpoint was taken, replacing the later term's state, when the
// later term had only acknowledged, or when its checkpoint had since been
// deleted or overwritten by hand (found by a review). Each record now
// deposes the older term for both writes.
func TestFenceRefusesOlderTermAfterNewerTookOffice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(ctx context.Context, t *testing.T, w *elect.Session, group string)
	}{
		{"acknowledged only", func(context.Context, *testing.T, *elect.Session, string) {}},
		{"its checkpoint deleted", func(ctx context.Context, t *testing.T, w *elect.Session, group string) {
			if err := w.Conn().Delete(group+"/"+elect.CheckpointNode, -1); err != nil {
				t.Fatal(err)
			}
		}},
		{"its checkpoint overwritten", func(ctx context.Context, t *testing.T, w *elect.Session, group string) {
			if _, err := w.Conn().Set(group+"/"+elect.CheckpointNode, []byte("not herald's"), -1); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 30*time.Second)
			group, ha, b, w := fencedOwner(ctx, t)
			if err := ha.Acknowledge(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if err := ha.Checkpoint(ctx, []byte("a-1")); err != nil {
				t.Fatal(err)
			}
			newer := secondOwner(t, b, group)
			if err := newerAck(ctx, t, w, group, newer); err != nil {
				t.Fatal(err)
			}
			if tc.name != "acknowledged only" {
				cpData, _ := json.Marshal(elect.Checkpoint{Term: newer.Term, Node: newer.Node, ID: "b", Time: time.Now(), Data: []byte("b-1")})
				if _, err := w.Conn().Set(group+"/"+elect.CheckpointNode, cpData, -1); err != nil {
					t.Fatal(err)
				}
			}
			tc.after(ctx, t, w, group)
			before, _, _ := w.Conn().Get(group + "/" + elect.CheckpointNode)
			if err := ha.Checkpoint(ctx, []byte("a-2")); !errors.Is(err, elect.ErrNotLeader) {
				t.Fatalf("older term's checkpoint: %v; want ErrNotLeader", err)
			}
			if err := ha.Fence().Checkpoint(ctx, w, []byte("a-3")); !errors.Is(err, elect.ErrNotLeader) {
				t.Fatalf("older term's checkpoint through its fence: %v; want ErrNotLeader", err)
			}
			if after, _, _ := w.Conn().Get(group + "/" + elect.CheckpointNode); string(after) != string(before) {
				t.Fatalf("the checkpoint changed: %q, was %q", after, before)
			}
			if err := ha.Acknowledge(ctx, "a again"); !errors.Is(err, elect.ErrNotLeader) {
				t.Fatalf("older handle's acknowledgment after a newer one: %v; want ErrNotLeader", err)
			}
		})
	}
}

// newerAck writes an office record as a later term would.
// fencedOwner makes a new group whose owner, "a", is ha, and two more
// sessions: b, for a second owner's node (secondOwner), and w, a writer.
func fencedOwner(ctx context.Context, t *testing.T) (group string, ha *elect.Handle, b, w *elect.Session) {
	t.Helper()
	group = groupPath(t)
	addrs := sharedAddrs(t)
	a := session(t, addrs)
	b, w = session(t, addrs), session(t, addrs)
	ea, _ := elect.NewElection(a, group, elect.CreateParents())
	ha, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	return group, ha, b, w
}

// secondOwner makes, on s, a node in group after the owner's, and returns
// a fence naming it with its term (its czxid): a second owner's, as a
// client that cannot see herald's nodes would make.
func secondOwner(t *testing.T, s *elect.Session, group string) elect.Fence {
	t.Helper()
	p, err := s.Conn().Create(group+"/n_", []byte("b"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := s.Conn().Get(p)
	if err != nil {
		t.Fatal(err)
	}
	return elect.Fence{Group: group, Node: path.Base(p), ID: "b", Term: st.Czxid}
}

func newerAck(ctx context.Context, t *testing.T, s *elect.Session, group string, f elect.Fence) error {
	t.Helper()
	b, _ := json.Marshal(elect.Office{Herald: 1, Ack: &elect.Ack{Node: f.Node, ID: f.ID, Term: f.Term, Time: time.Now()}})
	_, err := s.Conn().Set(group+"/"+elect.OfficeNode, b, -1)
	return err
}

// A group's recipe comes from herald's names (they carry it), from the
// mark herald puts on a group node it creates (so an empty lock is still a
// lock to an observer that starts late), or by the documented rule for
// foreign names, unless the observer is told.
func TestObservedRecipe(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	addrs := sharedAddrs(t)
	s, obs := session(t, addrs), session(t, addrs)
	snapshot := func(group string, opts ...elect.ObserveOption) elect.Change {
		t.Helper()
		return expect(t, observe(t, obs, group, opts...), elect.Snapshot, nil)
	}

	emptied := groupPath(t)
	l, _ := elect.NewLock(s, emptied, elect.CreateParents())
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if c := snapshot(emptied); c.Recipe != elect.RecipeLock || c.Owner != nil {
		t.Errorf("an emptied herald lock reads as %s (owner %v); want lock", c.Recipe, c.Owner)
	}

	selector := groupPath(t)
	e, _ := elect.NewElection(s, selector, elect.CreateParents(), elect.WithDialect(elect.DialectCuratorLock))
	if _, err := e.Campaign(ctx, "leader"); err != nil {
		t.Fatal(err)
	}
	if c := snapshot(selector); c.Recipe != elect.RecipeElection || c.Owner == nil || c.Owner.ID != "leader" {
		t.Errorf("a herald election in Curator's lock names reads as %s, owner %v; want election (herald's names carry it)", c.Recipe, c.Owner)
	}

	kazoo := groupPath(t)
	foreign(t, kazoo, "4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__")
	if c := snapshot(kazoo); c.Recipe != elect.RecipeLock {
		t.Errorf("Kazoo names read as %s; want lock by the rule", c.Recipe)
	}
	if c := snapshot(kazoo, elect.AsRecipe(elect.RecipeElection)); c.Recipe != elect.RecipeElection {
		t.Errorf("Kazoo names with AsRecipe(election) read as %s", c.Recipe)
	}

	// Only a group that tells nothing reads as an election by the rule,
	// and the view says it guessed.
	bare := groupPath(t)
	makeGroup(t, obs.Conn(), bare)
	for _, g := range []struct {
		group   string
		recipe  elect.Recipe
		guessed bool
	}{{bare, elect.RecipeElection, true}, {emptied, elect.RecipeLock, false}, {kazoo, elect.RecipeLock, false}, {selector, elect.RecipeElection, false}} {
		v, err := elect.ReadGroup(ctx, obs, g.group)
		if err != nil || v.Recipe != g.recipe || v.RecipeGuessed() != g.guessed {
			t.Errorf("ReadGroup(%s) = %s, guessed %v (%v); want %s, guessed %v", g.group, v.Recipe, v.RecipeGuessed(), err, g.recipe, g.guessed)
		}
	}
}

// A lock taken and released in an election's group leaves the group an
// election: the release writes back the recipe the group's mark names, not
// the lock's own, so an observer that later finds the group empty still
// reports what the group was made for.
func TestReleaseKeepsTheGroupsRecipe(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	addrs := sharedAddrs(t)
	s, obs := session(t, addrs), session(t, addrs)
	group := groupPath(t)
	e, _ := elect.NewElection(s, group, elect.CreateParents())
	h, err := e.Campaign(ctx, "runner")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l, _ := elect.NewLock(session(t, addrs), group)
	lh, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	data, _, err := obs.Conn().Get(group)
	if err != nil {
		t.Fatal(err)
	}
	var mark struct {
		Recipe   elect.Recipe    `json:"recipe"`
		Released json.RawMessage `json:"released"`
	}
	if err := json.Unmarshal(data, &mark); err != nil || mark.Recipe != elect.RecipeElection || len(mark.Released) == 0 {
		t.Fatalf("group mark after a lock's release in an election's group: %s (%v); want recipe election with the release", data, err)
	}
	if c := expect(t, observe(t, obs, group), elect.Snapshot, nil); c.Recipe != elect.RecipeElection {
		t.Errorf("the emptied election's group reads as %s; want election", c.Recipe)
	}
}

// Someone writing the owner's node changes nothing an observer reports:
// the next change it sees is the real release.
func TestObserverIgnoresWritesToTheOwner(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, third, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	e, _ := elect.NewElection(a, group, elect.CreateParents())
	h, err := e.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	o := observe(t, obs, group)
	expect(t, o, elect.Snapshot, ownerIs("alpha"))
	if _, err := third.Conn().Set(h.NodePath(), []byte("operator was here"), -1); err != nil {
		t.Fatal(err)
	}
	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.OwnerChanged, nil)
	if c.Owner != nil || c.Previous == nil || c.Previous.ID != "alpha" || c.Reason != elect.ReasonResigned {
		t.Fatalf("after the write and the resignation: %+v; want alpha resigned, no owner", c)
	}
}

// A node nobody's session holds, or one that appears below the owner,
// cannot be what its name says: the observer flags it and never reports it
// as the owner. The real owner keeps owning, and its fenced writes pass.
func TestSuspectNodesNeverOwn(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, third, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	e, _ := elect.NewElection(a, group, elect.CreateParents())
	h, err := e.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	o := observe(t, obs, group)
	expect(t, o, elect.Snapshot, ownerIs("alpha"))
	// A persistent node with a forged herald name that sorts first.
	forged := "_c_ffffffff-ffff-ffff-0000-000168726c65-latch-" + elect.FormatSequence(h.Sequence()-1)
	if h.Sequence() == 0 {
		forged = "n_-000000001"
	}
	if _, err := third.Conn().Create(group+"/"+forged, []byte("impostor"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.Joined, nil)
	if c.Candidate == nil || c.Candidate.Node != forged || c.Candidate.Suspect == "" || c.Owner == nil || c.Owner.ID != "alpha" {
		t.Fatalf("after the impostor appeared: %+v; want it joined as suspect, alpha still owner", c)
	}
	if c.Candidate.Session != 0 {
		t.Fatalf("the impostor's session %x was taken from its name", c.Candidate.Session)
	}
	v, err := elect.ReadGroup(ctx, obs, group)
	if err != nil || v.Owner == nil || v.Owner.ID != "alpha" || v.Queue[0].Node != forged || !strings.Contains(v.Queue[0].Suspect, "not ephemeral") {
		t.Fatalf("ReadGroup: %+v, %v; want alpha owning, the impostor first and flagged", v, err)
	}
	if err := h.Checkpoint(ctx, []byte("still here")); err != nil {
		t.Fatalf("the real leader's fenced write: %v", err)
	}
	// An ephemeral node created under a chosen name below the owner.
	below := "n_" + elect.FormatSequence(h.Sequence()-2)
	if h.Sequence() < 2 {
		below = "n_-000000002"
	}
	if _, err := third.Conn().Create(group+"/"+below, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c = expect(t, o, elect.Joined, nil)
	if c.Candidate == nil || c.Candidate.Node != below || !strings.Contains(c.Candidate.Suspect, "appeared below the owner") || c.Owner.ID != "alpha" {
		t.Fatalf("after an ephemeral node appeared below the owner: %+v", c)
	}
	// The impostors leave; the owner never changed, so nothing more than
	// their leaving is reported.
	for _, n := range []string{forged, below} {
		if err := third.Conn().Delete(group+"/"+n, -1); err != nil {
			t.Fatal(err)
		}
		if c := expect(t, o, elect.Left, nil); c.Candidate == nil || c.Candidate.Node != n || c.Owner.ID != "alpha" {
			t.Fatalf("after %s left: %+v", n, c)
		}
	}
}

// A node nobody's session holds that was in the queue before a waiter
// joined holds that waiter up: its listing showed the node below it, and it
// waits for its deletion like every recipe. The observer reports no owner
// (the node that would own is waiting, not owning) and names the node that
// blocks the queue; once someone deletes it, the waiter owns.
func TestOlderSuspectNodeBlocksTheQueue(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, third, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	makeGroup(t, third.Conn(), group)
	left, err := third.Conn().Create(group+"/lock-", []byte("left over"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	l, err := elect.NewLock(a, group, elect.WithID("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *elect.Handle, 1)
	go func() {
		h, err := l.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	waitQueueLen(t, obs, group, 2)
	o := observe(t, obs, group)
	blocked := func(v elect.View, err error) error {
		switch {
		case err != nil:
			return err
		case v.Owner != nil:
			return fmt.Errorf("owner %v, want none: alpha waits behind %s", v.Owner, path.Base(left))
		case v.Blocked == nil || v.Blocked.Node != path.Base(left) || !strings.Contains(v.Blocked.Suspect, "not ephemeral"):
			return fmt.Errorf("blocked by %+v, want %s flagged not ephemeral", v.Blocked, path.Base(left))
		case len(v.Queue) != 2 || v.Queue[1].ID != "alpha":
			return fmt.Errorf("queue %+v, want the left-over node, then alpha", v.Queue)
		}
		return nil
	}
	if err := blocked(elect.ReadGroup(ctx, obs, group)); err != nil {
		t.Fatalf("ReadGroup: %v", err)
	}
	expect(t, o, elect.Snapshot, func(c elect.Change) error {
		if c.Owner != nil {
			return fmt.Errorf("owner %v, want none", c.Owner)
		}
		return nil
	})
	select {
	case h := <-got:
		t.Fatalf("alpha acquired (%v) with a node below its own", h)
	case <-time.After(300 * time.Millisecond):
	}
	if err := third.Conn().Delete(left, -1); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h == nil {
		t.FailNow()
	}
	expect(t, o, elect.Left, func(c elect.Change) error {
		if c.Candidate == nil || c.Candidate.Node != path.Base(left) {
			return fmt.Errorf("left: %v, want %s", c.Candidate, path.Base(left))
		}
		return nil
	})
	// The node that left never owned: nobody came and went unseen.
	c := expect(t, o, elect.OwnerChanged, ownerIs("alpha"))
	if c.Owner.Node != h.Node() || c.Gap || c.Previous != nil {
		t.Fatalf("owner %s (gap %v, previous %v), want alpha's node %s after no owner, no gap", c.Owner.Node, c.Gap, c.Previous, h.Node())
	}
}

// A node no session holds, named like a client that cannot read the others
// (Kazoo's), is no client: observers report no hazard for it. A real Kazoo
// client joining afterwards is one.
func TestNoHazardFromANodeNoSessionHolds(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, third, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	l, err := elect.NewLock(a, group, elect.CreateParents(), elect.WithID("alpha"), elect.NoHazardCheck())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	o := observe(t, obs, group)
	expect(t, o, elect.Snapshot, ownerIs("alpha"))
	kazooBase := "9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__"
	made, err := third.Conn().Create(group+"/"+kazooBase, nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.Joined, ownerIs("alpha"))
	if c.Hazard != "" {
		t.Fatalf("a persistent node with Kazoo's name made a hazard: %s", c.Hazard)
	}
	v, err := elect.ReadGroup(ctx, obs, group)
	if err != nil || v.Hazard != "" || len(v.Queue) != 2 || v.Queue[1].Node != path.Base(made) || !strings.Contains(v.Queue[1].Suspect, "not ephemeral") {
		t.Fatalf("ReadGroup: %+v, %v; want no hazard and the persistent node flagged", v, err)
	}
	kz, _ := foreign(t, group, kazooBase)
	c = expect(t, o, elect.Joined, ownerIs("alpha"))
	if c.Candidate == nil || c.Candidate.Node != kz || !strings.Contains(c.Hazard, "Kazoo") {
		t.Fatalf("after a Kazoo client joined: %+v; want a hazard naming Kazoo", c)
	}
}

// An observation continued with Since measures its first snapshot against
// the last view of the one before: a tenure that passed between them is a
// gap, an owner that held throughout is not.
func TestSinceMeasuresTheStretchBetweenObservers(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, b, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	ea, _ := elect.NewElection(a, group, elect.CreateParents())
	ha, err := ea.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	octx, stop := context.WithCancel(ctx)
	o1, err := elect.Observe(octx, obs, group)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, o1, elect.Snapshot, ownerIs("alpha"))
	stop()
	o1.Wait()
	last, ok := o1.Last()
	if !ok || last.Owner == nil || last.Owner.ID != "alpha" {
		t.Fatalf("Last() = %+v, %v", last, ok)
	}
	if c := expect(t, observe(t, obs, group, elect.Since(last)), elect.Snapshot, ownerIs("alpha")); c.Gap {
		t.Fatalf("alpha held throughout, yet: %+v", c)
	}
	// beta leads briefly, then gamma: beta's tenure is between observers.
	eb, _ := elect.NewElection(b, group)
	got := make(chan *elect.Handle, 1)
	go func() {
		h, _ := eb.Campaign(ctx, "beta")
		got <- h
	}()
	waitQueue(t, eb, 2)
	if err := ha.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	hb := <-got
	if hb == nil {
		t.Fatal("beta never led")
	}
	gamma := make(chan *elect.Handle, 1)
	go func() {
		h, _ := ea.Campaign(ctx, "gamma")
		gamma <- h
	}()
	waitQueue(t, eb, 2)
	if err := hb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if h := <-gamma; h == nil {
		t.Fatal("gamma never led")
	}
	if c := expect(t, observe(t, obs, group, elect.Since(last)), elect.Snapshot, ownerIs("gamma")); !c.Gap {
		t.Fatalf("beta's tenure passed between the observers, yet: %+v", c)
	}
}

// An owner whose ACL hides it from the observer is still the owner: named
// by its node, and seen to go by the children watch.
func TestObserveUnreadableOwner(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, obs := session(t, addrs), session(t, addrs)
	if err := a.Conn().AddAuth("digest", []byte("owner:pw")); err != nil {
		t.Fatal(err)
	}
	makeGroup(t, a.Conn(), group) // the group itself is readable
	l, _ := elect.NewLock(a, group, elect.WithID("hidden"),
		elect.WithACL(append(zk.DigestACL(zk.PermAll, "owner", "pw"), zk.ACL{Perms: zk.PermRead, Scheme: "digest", ID: "nobody:x"})))
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := observe(t, obs, group)
	c := expect(t, o, elect.Snapshot, nil)
	if c.Owner == nil || c.Owner.Node != h.Node() || c.Owner.Suspect != "" {
		t.Fatalf("snapshot of an unreadable owner: %+v; want its node as owner, not suspect", c)
	}
	if c.Owner.Session != a.ID() || c.Owner.Czxid != h.Term() {
		t.Errorf("unreadable owner's session %#x and term %d; want %#x and %d (its stat needs no READ)", c.Owner.Session, c.Owner.Czxid, a.ID(), h.Term())
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if c := expect(t, o, elect.OwnerChanged, nil); c.Owner != nil || c.Previous == nil || c.Previous.Node != h.Node() {
		t.Fatalf("after the unreadable owner went: %+v", c)
	}
}

// A node someone created under a chosen name below the owner, seen with
// no earlier read to compare with (a one-shot read, a first snapshot), is
// told by its czxid: younger than the node that sorts after it, which a
// sequential create cannot make. It is suspect, and that node owns.
func TestYoungerNodeBelowTheOwnerIsSuspectAtFirstSight(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, b, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	makeGroup(t, a.Conn(), group)
	for range 3 { // the group's counter moves past 0
		p, err := a.Conn().Create(group+"/tmp", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Conn().Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	owner, err := a.Conn().Create(group+"/n_", []byte("owner"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Conn().Create(group+"/n_0000000000", []byte("sneaky"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	check := func(what string, o *elect.Participant, q []elect.Participant) {
		t.Helper()
		if o == nil || o.Node != path.Base(owner) {
			t.Errorf("%s: owner %v; want %s", what, o, path.Base(owner))
		}
		if len(q) != 2 || q[0].Node != "n_0000000000" || !strings.Contains(q[0].Suspect, "younger than "+path.Base(owner)) {
			t.Errorf("%s: queue %+v; want n_0000000000 suspect, younger than %s", what, q, path.Base(owner))
		}
	}
	v, err := elect.ReadGroup(ctx, obs, group)
	if err != nil {
		t.Fatal(err)
	}
	check("one-shot read", v.Owner, v.Queue)
	c := expect(t, observe(t, obs, group), elect.Snapshot, nil)
	check("first snapshot", c.Owner, c.Queue)
}

// A leftover node no session holds, named with a sequence the group's
// counter has not reached (made by hand, or what a restore re-created),
// sorts after the nodes sequential creates make later. The client whose
// node sorts first owns, as every recipe reads it; herald called it
// suspect, "younger than" the leftover, said nobody owned and advised
// deleting the holder's node.
func TestHolderBelowALeftoverIsNoSuspect(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, obs := session(t, addrs), session(t, addrs)
	makeGroup(t, a.Conn(), group)
	if _, err := a.Conn().Create(group+"/lock-0000000005", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	holder, err := a.Conn().Create(group+"/lock-", []byte("holder"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, o *elect.Participant, q []elect.Participant) {
		t.Helper()
		if o == nil || o.Node != path.Base(holder) {
			t.Errorf("%s: owner %v; want %s", what, o, path.Base(holder))
		}
		for _, p := range q {
			if p.Node == path.Base(holder) && p.Suspect != "" {
				t.Errorf("%s: the holder is suspect: %s", what, p.Suspect)
			}
		}
	}
	v, err := elect.ReadGroup(ctx, obs, group)
	if err != nil {
		t.Fatal(err)
	}
	check("one-shot read", v.Owner, v.Queue)
	c := expect(t, observe(t, obs, group), elect.Snapshot, nil)
	check("first snapshot", c.Owner, c.Queue)
}

// A node no session holds is suspect, never the owner, also when its ACL
// hides its data: its stat says it is not ephemeral.
func TestUnreadableLeftoverNodeIsSuspect(t *testing.T) {
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, obs := session(t, addrs), session(t, addrs)
	makeGroup(t, a.Conn(), group)
	noRead := zk.WorldACL(zk.PermWrite | zk.PermCreate | zk.PermDelete | zk.PermAdmin)
	if _, err := a.Conn().Create(group+"/lock-", []byte("FAKE"), zk.FlagSequence, noRead); err != nil {
		t.Fatal(err)
	}
	c := expect(t, observe(t, obs, group), elect.Snapshot, nil)
	if c.Owner != nil || len(c.Queue) != 1 || c.Queue[0].Suspect == "" {
		t.Fatalf("snapshot of an unreadable node no session holds: %+v; want no owner, the node suspect", c)
	}
}

// In a group go-zookeeper's Lock may share (a lock, or an election named
// for Curator's mutex), herald creates no side node: that Lock fails on any
// child without a sequence and leaves its own node behind.
func TestNoSideNodesWhereGoZookeeperQueues(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, g := session(t, addrs), session(t, addrs)
	e, _ := elect.NewElection(a, group, elect.CreateParents(), elect.WithDialect(elect.DialectCuratorLock))
	h, err := e.Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Acknowledge(ctx, "pid 1"); !errors.Is(err, elect.ErrNoSideNodes) {
		t.Fatalf("Acknowledge: %v; want ErrNoSideNodes", err)
	}
	if err := h.Checkpoint(ctx, []byte("x")); !errors.Is(err, elect.ErrNoSideNodes) {
		t.Fatalf("Checkpoint: %v; want ErrNoSideNodes", err)
	}
	gl := zk.NewLock(g.Conn(), group, zk.WorldACL(zk.PermAll))
	locked := make(chan error, 1)
	go func() { locked <- gl.Lock() }()
	eventually(t, 5*time.Second, "go-zookeeper queued", func() bool {
		c, _, _ := g.Conn().Children(group)
		return len(c) == 2
	})
	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-locked:
		if err != nil {
			t.Fatalf("go-zookeeper's Lock behind a herald election: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("go-zookeeper's Lock never got the lock")
	}
	children, _, _ := g.Conn().Children(group)
	for _, c := range children {
		if _, ok := elect.ParseSequence(c); !ok {
			t.Fatalf("herald left %s in a group go-zookeeper shares: %v", c, children)
		}
	}
	_ = gl.Unlock()
}

// Solr's election nodes ("<session>-<id>-n_<seq>") are ordered by
// sequence, then name (joinAtHead reuses a sequence), and read as an
// election; Mesos' masters ("json.info_<seq>") are named by the id in
// their MasterInfo JSON.
func TestSolrAndMesosQueues(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	addrs := sharedAddrs(t)
	obs := session(t, addrs)
	solr := groupPath(t)
	a, ac := foreign(t, solr, "72057738101588070-10.0.0.1:8983_solr-n_")
	// joinAtHead: a plain ephemeral node with the second's sequence.
	dup := "72057738101588071-10.0.0.2:8983_solr-n_" + a[len(a)-10:]
	if _, err := ac.Create(solr+"/"+dup, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	v, err := elect.ReadGroup(ctx, obs, solr)
	if err != nil || v.Recipe != elect.RecipeElection || len(v.Queue) != 2 || v.Queue[0].Node != a || v.Queue[1].Node != dup {
		t.Fatalf("Solr group: %+v, %v; want an election, %s then %s (same sequence, by name)", v, err, a, dup)
	}
	mesos := groupPath(t)
	s := session(t, addrs)
	for _, p := range []string{path.Dir(mesos), mesos} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	info := `{"id":"20261124-master-1","ip":16777343,"port":5050,"pid":"master@127.0.0.1:5050","hostname":"m1","version":"1.11.0"}`
	if _, err := s.Conn().Create(mesos+"/json.info_", []byte(info), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c := expect(t, observe(t, obs, mesos), elect.Snapshot, nil)
	if c.Owner == nil || c.Owner.ID != "20261124-master-1" {
		t.Fatalf("Mesos master: %+v; want its MasterInfo id", c.Owner)
	}
}

// A group deleted together with its owner's node (one transaction) is
// reported as losing its owner and gone; created again, it is observed
// again.
func TestGroupDeletedWithItsOwner(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, obs := session(t, addrs), session(t, addrs)
	e, _ := elect.NewElection(a, group, elect.CreateParents())
	h, err := e.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	o := observe(t, obs, group)
	expect(t, o, elect.Snapshot, ownerIs("alpha"))
	if _, err := a.Conn().Multi(&zk.DeleteRequest{Path: h.NodePath(), Version: -1}, &zk.DeleteRequest{Path: group, Version: -1}); err != nil {
		t.Fatal(err)
	}
	c := expect(t, o, elect.OwnerChanged, nil)
	if c.Owner != nil || c.Previous == nil || c.Previous.ID != "alpha" {
		t.Fatalf("after the group went with its owner: %+v", c)
	}
	select {
	case <-h.Done():
	case <-ctx.Done():
		t.Fatal("the deposed handle was not told")
	}
	e2, _ := elect.NewElection(a, group, elect.CreateParents())
	if _, err := e2.Campaign(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	expect(t, o, elect.OwnerChanged, ownerIs("beta"))
}

// An owner that resigns and queues again at once races the observer's
// read: the listing may show a child change after the release's. The
// observer still reports the resignation (releaseBase.onlyRelease, tested
// on its own in observe_internal_test.go, tells it without a read).
func TestObserverTellsARequeuedResignation(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, b, obs := session(t, addrs), session(t, addrs), session(t, addrs)
	ea, _ := elect.NewElection(a, group, elect.CreateParents())
	eb, _ := elect.NewElection(b, group, elect.CreateParents())
	ha, err := ea.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *elect.Handle, 1)
	go func() {
		h, _ := eb.Campaign(ctx, "beta")
		got <- h
	}()
	waitQueue(t, eb, 2)
	o := observe(t, obs, group)
	expect(t, o, elect.Snapshot, ownerIs("alpha"))
	if err := ha.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = ea.Campaign(ctx, "alpha") }() // queue again at once
	<-got
	var c elect.Change
	for c = next(t, o); c.Kind != elect.OwnerChanged; c = next(t, o) {
	}
	if c.Owner == nil || c.Owner.ID != "beta" || c.Reason != elect.ReasonResigned {
		t.Fatalf("handover: %+v; want beta after alpha resigned", c)
	}
}

// With digest credentials, herald's nodes let their identity do anything
// and everyone read: a session without them (or with a wrong password)
// may watch and observe, but cannot delete or write herald's nodes.
func TestDigestAuthProtectsHeraldsNodes(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a := session(t, addrs, elect.WithDigestAuth("herald:s3cret"))
	l, _ := elect.NewLock(a, group, elect.CreateParents())
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acl, _, err := a.Conn().GetACL(h.NodePath())
	if err != nil || len(acl) != 2 || acl[0].Scheme != "digest" || acl[0].Perms != zk.PermAll || acl[1].Scheme != "world" || acl[1].Perms != zk.PermRead {
		t.Fatalf("ACL of herald's node: %+v, %v; want the digest identity all, world read", acl, err)
	}
	for name, s := range map[string]*elect.Session{
		"no credentials":   session(t, addrs),
		"a wrong password": session(t, addrs, elect.WithDigestAuth("herald:wrong")),
	} {
		if err := s.Conn().Delete(h.NodePath(), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s: delete of herald's node: %v; want ErrNoAuth", name, err)
		}
		if _, err := s.Conn().Set(h.NodePath(), []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s: set of herald's node: %v; want ErrNoAuth", name, err)
		}
		if v, err := elect.ReadGroup(ctx, s, group); err != nil || v.Owner == nil || v.Owner.Node != h.Node() {
			t.Errorf("%s: reading the group: %+v, %v; everyone may read", name, v.Owner, err)
		}
	}
	// The group herald made lets its identity in, and only it: another
	// session with the same credentials takes the lock after herald;
	// another identity is told it may not join, naming the ACL.
	same := session(t, addrs, elect.WithDigestAuth("herald:s3cret"))
	ls, _ := elect.NewLock(same, group)
	got := make(chan error, 1)
	go func() {
		h2, err := ls.Acquire(ctx)
		if err != nil {
			got <- fmt.Errorf("acquire: %w", err)
			return
		}
		got <- h2.Release(ctx)
	}()
	waitQueueLen(t, same, group, 2)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the same identity behind herald: %v", err)
	}
	other := session(t, addrs, elect.WithDigestAuth("other:pw"))
	lo, _ := elect.NewLock(other, group)
	if _, err := lo.TryAcquire(ctx); !errors.Is(err, zk.ErrNoAuth) || !strings.Contains(err.Error(), "ACL") {
		t.Fatalf("another identity joining herald's protected group: %v; want an error naming the ACL", err)
	}
	for _, bad := range []string{"", "user", ":pw", "user:"} {
		if _, err := elect.NewSession(ctx, addrs, elect.WithDigestAuth(bad)); err == nil {
			t.Errorf("WithDigestAuth(%q) accepted", bad)
		}
	}
}

// waitQueueLen waits until group holds n queue nodes.
func waitQueueLen(t *testing.T, s *elect.Session, group string, n int) {
	t.Helper()
	eventually(t, 5*time.Second, "the queue to fill", func() bool {
		c, _, err := s.Conn().Children(group)
		k := 0
		for _, x := range c {
			if _, ok := elect.ParseSequence(x); ok {
				k++
			}
		}
		return err == nil && k == n
	})
}

// An ephemeral node (a single-node leader such as Kafka's /controller)
// observed as a group is refused, saying how to observe it, rather than
// read as a group with no owner while its leader holds.
func TestAnEphemeralNodeIsNotAGroup(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	group := groupPath(t)
	addrs := sharedAddrs(t)
	a, obs := session(t, addrs), session(t, addrs)
	makeGroup(t, a.Conn(), path.Dir(group)+"/x")
	if _, err := a.Conn().Create(group, []byte(`{"brokerid":3}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := elect.ReadGroup(ctx, obs, group); !errors.Is(err, elect.ErrNotAGroup) || !strings.Contains(err.Error(), "--leader "+group) {
		t.Errorf("ReadGroup of an ephemeral node: %v; want ErrNotAGroup saying to observe it as a leader", err)
	}
	o, err := elect.Observe(ctx, obs, group)
	if err != nil {
		t.Fatal(err)
	}
	for c := range o.Changes() {
		t.Errorf("observing an ephemeral node as a group reported %+v", c)
	}
	if !errors.Is(o.Err(), elect.ErrNotAGroup) {
		t.Errorf("observer ended with %v; want ErrNotAGroup", o.Err())
	}
}
