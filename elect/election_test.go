package elect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
)

func TestCampaignResignHandsOver(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	a, b := session(t, addrs), session(t, addrs)
	ea, err := elect.NewElection(a, path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := elect.NewElection(b, path, elect.CreateParents())
	ctx := ctxT(t, 20*time.Second)
	la, err := ea.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatalf("first campaign: %v", err)
	}
	if la.Term() == 0 {
		t.Fatal("leader has no term")
	}
	got := make(chan *elect.Handle, 1)
	errc := make(chan error, 1)
	go func() {
		h, err := eb.Campaign(ctx, "beta")
		if err != nil {
			errc <- err
			return
		}
		got <- h
	}()
	// beta must be queued, not leading, while alpha leads.
	eventually(t, 5*time.Second, "beta queued", func() bool {
		ps, err := ea.Participants(ctx)
		return err == nil && len(ps) == 2
	})
	ps, _ := ea.Participants(ctx)
	if ps[1].ID != "beta" || ps[1].Session != b.ID() || ps[1].Czxid == 0 {
		t.Fatalf("queued candidate read as %+v; want id beta, its session and czxid", ps[1])
	}
	leader, err := ea.Leader(ctx)
	if err != nil || leader.ID != "alpha" || leader.Czxid != la.Term() {
		t.Fatalf("leader = %+v, %v; want alpha with term %d", leader, err, la.Term())
	}
	select {
	case <-got:
		t.Fatal("beta leads while alpha still does")
	default:
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	if la.Held() || la.Reason() != elect.ReasonResigned || la.Err() != nil {
		t.Fatalf("after resign: held=%v reason=%q err=%v", la.Held(), la.Reason(), la.Err())
	}
	var lb *elect.Handle
	select {
	case lb = <-got:
	case err := <-errc:
		t.Fatalf("beta campaign: %v", err)
	case <-ctx.Done():
		t.Fatal("beta never became leader after alpha resigned")
	}
	if lb.Term() <= la.Term() {
		t.Fatalf("terms must grow: alpha %d, beta %d", la.Term(), lb.Term())
	}
	// A resign deletes alpha's node (nothing ever writes a queue node, so
	// every recipe's watch fires NodeDeleted) and records why on the group
	// node in the same transaction, for observers; no office is made.
	data, _, err := a.Conn().Get(path)
	var mark struct {
		Released *elect.Release `json:"released"`
	}
	if err != nil || json.Unmarshal(data, &mark) != nil || mark.Released == nil || mark.Released.Node != la.Node() ||
		mark.Released.Reason != elect.ReasonResigned || mark.Released.Term != la.Term() {
		t.Fatalf("group node after resign = %s, %v; want alpha's release record, reason resigned, term %d", data, err, la.Term())
	}
	if _, ok, err := elect.ReadOffice(ctx, a, path); err != nil || ok {
		t.Fatalf("a resign made an office node (%v, %v)", ok, err)
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ea.Leader(ctx); !errors.Is(err, elect.ErrNoLeader) {
		t.Fatalf("leader of an empty election: %v, want ErrNoLeader", err)
	}
}

func TestMutualExclusion20Sessions(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	const n, rounds = 20, 3
	var holders, maxHolders, acquired atomic.Int64
	var lastTerm atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 3*n*rounds) // room for every check to fail without blocking
	ctx := ctxT(t, 60*time.Second)
	for i := 0; i < n; i++ {
		s := session(t, addrs)
		l, err := elect.NewLock(s, path, elect.CreateParents(), elect.WithID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				h, err := l.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				now := holders.Add(1)
				if now > maxHolders.Load() {
					maxHolders.Store(now)
				}
				if prev := lastTerm.Swap(h.Term()); prev >= h.Term() {
					errs <- fmt.Errorf("term went from %d to %d", prev, h.Term())
				}
				// The term is the node's czxid, under contention too.
				if ok, st, err := s.Conn().Exists(h.NodePath()); err != nil || !ok || st.Czxid != h.Term() {
					errs <- fmt.Errorf("term %d, node %s czxid %v (exists %v, %v)", h.Term(), h.Node(), st, ok, err)
				}
				acquired.Add(1)
				time.Sleep(time.Millisecond) // hold it for a moment
				holders.Add(-1)
				if err := h.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if maxHolders.Load() != 1 {
		t.Fatalf("%d holders at once", maxHolders.Load())
	}
	if acquired.Load() != n*rounds {
		t.Fatalf("acquired %d times, want %d", acquired.Load(), n*rounds)
	}
}

func TestTryAcquireAndTimeout(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	a, b := session(t, addrs), session(t, addrs)
	la, _ := elect.NewLock(a, path, elect.CreateParents())
	lb, _ := elect.NewLock(b, path, elect.CreateParents())
	ctx := ctxT(t, 20*time.Second)
	h, err := la.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("try on a free lock: %v", err)
	}
	if _, err := lb.TryAcquire(ctx); !errors.Is(err, elect.ErrLocked) {
		t.Fatalf("try on a held lock: %v, want ErrLocked", err)
	}
	start := time.Now()
	if _, err := lb.AcquireTimeout(ctx, 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire with timeout: %v, want deadline exceeded", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("timeout took %v", time.Since(start))
	}
	// Neither the failed try nor the timed-out wait may leave a node.
	eventually(t, 5*time.Second, "waiters' nodes removed", func() bool {
		children, _, err := a.Conn().Children(path)
		return err == nil && len(children) == 1 && children[0] == h.Node()
	})
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatalf("second release: %v", err)
	}
}

// duel is a fresh election in which a leads (id "a") and b is ready to
// campaign.
type duel struct {
	ctx    context.Context
	path   string
	b      *elect.Session
	ea, eb *elect.Election
	la     *elect.Handle
}

func aLeads(t *testing.T) duel {
	t.Helper()
	addrs := sharedAddrs(t)
	d := duel{ctx: ctxT(t, 20*time.Second), path: groupPath(t)}
	a := session(t, addrs)
	d.b = session(t, addrs)
	d.ea, _ = elect.NewElection(a, d.path, elect.CreateParents())
	d.eb, _ = elect.NewElection(d.b, d.path, elect.CreateParents())
	var err error
	if d.la, err = d.ea.Campaign(d.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCancelledWaiterRemovesNode(t *testing.T) {
	d := aLeads(t)
	ctx, ea, eb, la := d.ctx, d.ea, d.eb, d.la
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := eb.Campaign(wctx, "b"); done <- err }()
	eventually(t, 5*time.Second, "b queued", func() bool {
		ps, _ := ea.Participants(ctx)
		return len(ps) == 2
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled campaign returned %v", err)
	}
	eventually(t, 5*time.Second, "b's node removed", func() bool {
		ps, _ := ea.Participants(ctx)
		return len(ps) == 1 && ps[0].Node == la.Node()
	})
}

// TestTermCostsNoRequest: taking a free lock, learning its term and giving
// it back costs four requests: the create, one listing, the watch every
// handle sets on its own node (whose reply carries the term) and the
// release. The term is the node's czxid as another client reads it.
func TestTermCostsNoRequest(t *testing.T) {
	cluster := sharedCluster(t)
	path := groupPath(t)
	ctx := ctxT(t, 20*time.Second)
	s := session(t, cluster.Addrs(), elect.WithSessionTimeout(30*time.Second))
	elect.NoLeaderSyncs(s) // counted
	l, _ := elect.NewLock(s, path, elect.CreateParents())
	// The first round creates the parents; count the second.
	h, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	sent := func() int64 { return requestsSent(ctx, t, cluster.Member(0), s) }
	before := sent()
	h, err = l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	term := h.Term()
	other := session(t, cluster.Addrs())
	_, st, err := other.Conn().Exists(h.NodePath())
	if err != nil {
		t.Fatal(err)
	}
	if term != st.Czxid || h.Participant().Czxid != st.Czxid {
		t.Fatalf("term %d, participant czxid %d; the node's czxid is %d", term, h.Participant().Czxid, st.Czxid)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sent() - before; got != 4 {
		t.Fatalf("acquire, term and release took %d requests, want 4 (create, list, own watch, release)", got)
	}
	if h.Term() != term {
		t.Fatalf("term after release %d, want %d", h.Term(), term)
	}
}

func TestWatchesAndWakeupsPerHandoff(t *testing.T) {
	cluster := sharedCluster(t)
	addrs := cluster.Addrs()
	path := groupPath(t)
	ctx := ctxT(t, 60*time.Second)
	const waiters = 20
	// Count only the watches on this group's nodes (wchp lists watches by
	// path), so other tests' sessions cannot disturb the count.
	watches := func() int {
		out, err := cluster.Member(0).FourLetter(ctx, "wchp")
		if err != nil {
			t.Fatal(err)
		}
		n, in := 0, false
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(line, "/"):
				in = strings.HasPrefix(line, path+"/")
			case in && strings.TrimSpace(line) != "":
				n++
			}
		}
		return n
	}
	holder := session(t, addrs, elect.WithSessionTimeout(30*time.Second))
	elect.NoLeaderSyncs(holder) // counted, as every waiter's
	hl, _ := elect.NewLock(holder, path, elect.CreateParents())
	h, err := hl.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := 1 // the holder watches its own node, to learn if it is deleted
	eventually(t, 5*time.Second, "holder watching its node", func() bool { return watches() == base })
	got := make(chan *elect.Handle, waiters)
	for i := 0; i < waiters; i++ {
		s := session(t, addrs, elect.WithSessionTimeout(30*time.Second))
		elect.NoLeaderSyncs(s)
		l, _ := elect.NewLock(s, path)
		go func() {
			if h, err := l.Acquire(ctx); err == nil {
				got <- h
			}
		}()
	}
	// Each waiter watches its own node (to learn if someone deletes it
	// while it waits), the node just below its own and the one two below,
	// so that it lists while the node just below owns, not after its
	// release; the first waiter, with one node below, watches one of them.
	want := 3*waiters - 1
	eventually(t, 10*time.Second, "all waiters watching", func() bool { return watches()-base >= want })
	if w := watches(); w-base != want {
		t.Fatalf("%d waiters set %d watches; want %d: their own and two below each, one below for the first", waiters, w-base, want)
	}
	// Hand the lock down the line and count the server's packets per
	// handoff. Reading mntr is itself a packet: measure that and subtract it.
	m0, _ := cluster.Member(0).PacketsReceived(ctx)
	m1, _ := cluster.Member(0).PacketsReceived(ctx)
	probe := m1 - m0
	prev := h
	var packets int64
	const handoffs = 10
	for i := 0; i < handoffs; i++ {
		before, _ := cluster.Member(0).PacketsReceived(ctx)
		if err := prev.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case prev = <-got:
		case <-ctx.Done():
			t.Fatal("no waiter took the lock")
		}
		select {
		case extra := <-got:
			t.Fatalf("two waiters woke up holding the lock: %s and %s", prev.Node(), extra.Node())
		default:
		}
		after, _ := cluster.Member(0).PacketsReceived(ctx)
		packets += after - before - probe
	}
	per := float64(packets) / handoffs
	t.Logf("packets per handoff with %d waiters: %.1f (mntr's own %d subtracted)", waiters, per, probe)
	// A handoff is the release (a delete), one listing (by the waiter two
	// behind the releasing owner: the node two below it is gone, so it
	// lists while its predecessor owns, and finds that predecessor alone
	// below it; the new owner needs none, having listed at the previous
	// handoff), the new owner's watch on its own node, and here, where
	// every waiter is a fresh Lock that releases once, its one read of the
	// group node before writing the release mark there: 4. A herd would
	// be one listing per waiter.
	if per > 4.5 {
		t.Fatalf("%.1f packets per handoff with %d waiters: a herd is woken", per, waiters)
	}
	_ = prev.Release(ctx)
}

func TestFencedWritesRejectDeposedLeader(t *testing.T) {
	d := aLeads(t)
	ctx, path, b, eb, la := d.ctx, d.path, d.b, d.eb, d.la
	if err := la.Acknowledge(ctx, "pid 1"); err != nil {
		t.Fatalf("acknowledge: %v", err)
	}
	if err := la.Checkpoint(ctx, []byte("step 1")); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if err := la.Checkpoint(ctx, []byte("step 2")); err != nil {
		t.Fatalf("second checkpoint: %v", err)
	}
	// Someone deletes a's node (an operator, or the session's expiry): a is
	// deposed, b takes over; a's next write must fail although a's
	// session is fine.
	if err := b.Conn().Delete(la.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	lb, err := eb.Campaign(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Done():
	case <-ctx.Done():
		t.Fatal("a was not told its node was deleted")
	}
	if la.Reason() != elect.ReasonDeleted || !errors.Is(la.Err(), elect.ErrNodeDeleted) {
		t.Fatalf("a's end: %q %v", la.Reason(), la.Err())
	}
	if err := la.Checkpoint(ctx, []byte("stale")); !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("deposed checkpoint: %v, want ErrNotLeader", err)
	}
	cp, err := elect.ReadCheckpoint(ctx, b, path)
	if err != nil || string(cp.Data) != "step 2" || cp.Term != la.Term() || cp.ID != "a" {
		t.Fatalf("checkpoint = %+v, %v; want a's step 2", cp, err)
	}
	if err := lb.Checkpoint(ctx, []byte("step 3")); err != nil {
		t.Fatal(err)
	}
	cp, _ = elect.ReadCheckpoint(ctx, b, path)
	if string(cp.Data) != "step 3" || cp.Term != lb.Term() {
		t.Fatalf("checkpoint after b = %+v", cp)
	}
}

// TestFencedWriteRacesDeletion shows the fence is the server's, not the
// handle's: with the local check bypassed by timing, the multi still fails.
func TestFenceIsCheckedByServer(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	a := session(t, addrs)
	ea, _ := elect.NewElection(a, path, elect.CreateParents(), elect.WithLossPolicy(elect.LoseOnExpiry))
	ctx := ctxT(t, 20*time.Second)
	la, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Delete and write at once, so the write races the monitor.
	if _, err := a.Conn().Multi(&zk.DeleteRequest{Path: la.NodePath(), Version: -1}); err != nil {
		t.Fatal(err)
	}
	err = la.Checkpoint(ctx, []byte("x"))
	if !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("write after node deletion: %v, want ErrNotLeader", err)
	}
	if _, err := elect.ReadCheckpoint(ctx, a, path); !errors.Is(err, elect.ErrNoCheckpoint) {
		t.Fatalf("a checkpoint was stored by a deposed leader: %v", err)
	}
}

// A path that names an ephemeral node (a single-node leader such as
// Kafka's /controller) cannot hold a queue: joining says so, and what to
// give instead.
func TestQueueUnderAnEphemeralNode(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	s := session(t, addrs)
	makeGroup(t, s.Conn(), path)
	leader := path + "/controller"
	if _, err := s.Conn().Create(leader, []byte(`{"brokerid":1}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	l, err := elect.NewLock(session(t, addrs), leader)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctxT(t, 10*time.Second))
	if !errors.Is(err, zk.ErrNoChildrenForEphemerals) || !strings.Contains(err.Error(), "is an ephemeral node") || !strings.Contains(err.Error(), "persistent node") {
		t.Fatalf("Acquire under an ephemeral node: %v; want a clear error", err)
	}
}

// A group further below an ephemeral node cannot be made either: the
// error names the ephemeral node that stops it (not only the parent herald
// was making), says what to give instead, and nothing is left behind.
func TestQueueBelowAnEphemeralNode(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	s := session(t, addrs)
	makeGroup(t, s.Conn(), path)
	leader := path + "/controller"
	if _, err := s.Conn().Create(leader, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	l, err := elect.NewLock(session(t, addrs), leader+"/jobs/nightly", elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctxT(t, 10*time.Second))
	if !errors.Is(err, zk.ErrNoChildrenForEphemerals) || !strings.Contains(err.Error(), leader+" is an ephemeral node") || !strings.Contains(err.Error(), "persistent") {
		t.Fatalf("Acquire below an ephemeral node: %v; want an error naming %s and what to give", err, leader)
	}
	if kids, _, err := s.Conn().Children(leader); err != nil || len(kids) != 0 {
		t.Fatalf("children of %s after the refusal: %v, %v", leader, kids, err)
	}
}

// Server lists herald's client cannot use are refused before dialling,
// saying what to give instead: none, an empty entry, a chroot suffix (as
// in Kafka's zookeeper.connect, which would make every path miss).
func TestNewSessionRefusesBadServerLists(t *testing.T) {
	for _, c := range []struct {
		servers []string
		want    string
	}{
		{nil, "no ZooKeeper servers given"},
		{[]string{"127.0.0.1:2181", ""}, "empty ZooKeeper server address"},
		{[]string{"zk1:2181", "zk2:2181/kafka"}, `ends in a chroot (/kafka), which herald's client does not take: give "zk2:2181"`},
	} {
		s, err := elect.NewSession(ctxT(t, 5*time.Second), c.servers)
		if err == nil {
			s.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewSession(%q): %v; want an error saying %q", c.servers, err, c.want)
		}
	}
}

// A checkpoint node holding something else than a herald checkpoint (JSON
// an operator or a tool wrote, even with a "term" larger than any) is not
// passed off as progress, and does not depose the leader: its checkpoint
// replaces it.
func TestForeignCheckpointIsNotAHeraldOne(t *testing.T) {
	addrs := sharedAddrs(t)
	a := session(t, addrs)
	ctx := ctxT(t, 20*time.Second)
	for i, data := range []string{`{"term": 9223372036854775807, "note": "written by a tool"}`, `{"offset": 1200}`, `null`,
		`{"term": 5, "node": "n_0000000001", "id": "x", "data": "c3RlcA=="}`} {
		path := fmt.Sprintf("%s-%d", groupPath(t), i)
		e, _ := elect.NewElection(a, path, elect.CreateParents())
		h, err := e.Campaign(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Conn().Create(path+"/"+elect.CheckpointNode, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if cp, err := elect.ReadCheckpoint(ctx, a, path); !errors.Is(err, elect.ErrBadCheckpoint) || !strings.Contains(err.Error(), "not a herald checkpoint") {
			t.Errorf("%s: ReadCheckpoint = %+v, %v; want ErrBadCheckpoint", data, cp, err)
		}
		if err := h.Checkpoint(ctx, []byte("mine")); err != nil {
			t.Errorf("%s: the leader's checkpoint over it: %v", data, err)
		}
		if cp, err := elect.ReadCheckpoint(ctx, a, path); err != nil || string(cp.Data) != "mine" {
			t.Errorf("%s: after the leader's checkpoint: %+v, %v", data, cp, err)
		}
		_ = h.Resign(ctx)
	}
}

// An office record someone else wrote with herald's marker but a term no
// herald owner can have (not older than the write that stored it) does not
// depose the leader: its acknowledgment replaces it.
func TestForgedOfficeDoesNotDeposeTheLeader(t *testing.T) {
	addrs := sharedAddrs(t)
	a := session(t, addrs)
	ctx := ctxT(t, 20*time.Second)
	path := groupPath(t)
	e, _ := elect.NewElection(a, path, elect.CreateParents())
	h, err := e.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	forged := `{"herald":1,"ack":{"node":"n_0000000099","id":"ghost","term":999999999}}`
	if _, err := a.Conn().Create(path+"/"+elect.OfficeNode, []byte(forged), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := h.Acknowledge(ctx, "pid 1"); err != nil {
		t.Fatalf("acknowledging over a forged office: %v", err)
	}
	o, ok, err := elect.ReadOffice(ctx, a, path)
	if err != nil || !ok || o.Ack == nil || o.Ack.Node != h.Node() {
		t.Fatalf("office after the acknowledgment: %+v %v %v", o, ok, err)
	}
}

// herald's own side nodes are no groups: a lock or an election on one is
// refused, naming the group to give instead.
func TestSideNodeIsNoGroup(t *testing.T) {
	s := session(t, sharedAddrs(t))
	for _, side := range []string{elect.OfficeNode, elect.CheckpointNode} {
		p := "/jobs/n1/" + side
		if _, err := elect.NewLock(s, p); err == nil || !strings.Contains(err.Error(), "give the group's path (/jobs/n1)") {
			t.Errorf("NewLock(%s): %v; want a refusal naming /jobs/n1", p, err)
		}
		if _, err := elect.NewElection(s, p); err == nil || !strings.Contains(err.Error(), "not a group") {
			t.Errorf("NewElection(%s): %v; want a refusal", p, err)
		}
	}
}

// A handle whose session is closed says so: its reason is the session's
// closing, as its error is, not an expiry.
func TestHandleOfAClosedSessionSaysClosed(t *testing.T) {
	s, err := elect.NewSession(ctxT(t, 20*time.Second), sharedAddrs(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := elect.NewLock(s, groupPath(t), elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	select {
	case <-h.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the handle still holds after its session was closed")
	}
	if h.Reason() != elect.ReasonSessionClosed || !errors.Is(h.Err(), elect.ErrSessionClosed) {
		t.Fatalf("reason %q, err %v; want %q and ErrSessionClosed", h.Reason(), h.Err(), elect.ReasonSessionClosed)
	}
}

// ReadGroup's LastRelease says when a group became ownerless only while
// herald's release was its last change: an owner after it whose session
// ended (no release written) leaves that time unknown, not the earlier
// release's.
func TestLastReleaseOnlyWhenItWasTheLastChange(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	s1 := session(t, addrs)
	s2, err := elect.NewSession(ctxT(t, 20*time.Second), addrs)
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := elect.NewLock(s1, g, elect.CreateParents())
	l2, _ := elect.NewLock(s2, g, elect.CreateParents())
	ctx := ctxT(t, 20*time.Second)
	h1, err := l1.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := elect.ReadGroup(ctx, s1, g)
	if err != nil || v.Owner != nil || v.LastRelease == nil {
		t.Fatalf("after a release: owner %v, last release %v (%v); want none and the release", v.Owner, v.LastRelease, err)
	}
	if _, err := l2.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s2.Close() // its owner goes with no release written
	v, err = elect.ReadGroup(ctx, s1, g)
	if err != nil || v.Owner != nil {
		t.Fatalf("after the second owner's session closed: owner %v (%v), want none", v.Owner, err)
	}
	if v.LastRelease != nil {
		t.Fatalf("last release %+v: the first owner's release is taken for when the group became ownerless, though an owner came after it", *v.LastRelease)
	}
}

// TestLeaderReadsOnlyTheOwner: Election.Leader and Lock.Holder read the
// owner, not every waiter: herald run asks it at each start, and read the
// data and stat of every node in the queue, n requests beside n waiters.
func TestLeaderReadsOnlyTheOwner(t *testing.T) {
	cluster := sharedCluster(t)
	path := groupPath(t)
	ctx := ctxT(t, 20*time.Second)
	s, other := session(t, cluster.Addrs()), session(t, cluster.Addrs())
	mkdirs(t, other.Conn(), path)
	for range 20 {
		if _, err := other.Conn().Create(path+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, openACL); err != nil {
			t.Fatal(err)
		}
	}
	sent := func() int64 { return requestsSent(ctx, t, cluster.Member(0), s) }
	l, err := elect.NewLock(s, path)
	if err != nil {
		t.Fatal(err)
	}
	before := sent()
	p, err := l.Holder(ctx)
	if err != nil || p.Node != "lock-0000000000" || p.Session != other.ID() {
		t.Fatalf("Holder of %s = %+v, %v; want lock-0000000000 of session 0x%x", path, p, err, other.ID())
	}
	if n := sent() - before; n > 8 {
		t.Errorf("Holder sent %d requests beside 20 waiters; want a few (the sync, the listing, the owner's reads), not one a waiter", n)
	}
}

// requestsSent is how many requests session s has sent to server srv, as
// its cons tells; s must be connected there.
func requestsSent(ctx context.Context, t testing.TB, srv *zkserver.Server, s *elect.Session) int64 {
	t.Helper()
	m, err := srv.SessionPackets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := m[s.ID()]
	if !ok {
		t.Fatalf("session 0x%x missing from cons", s.ID())
	}
	return n
}
