package elect_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// runnerOpts are the options of a herald runner's lock on g: session
// nodes under g-sessions that say it waits for its predecessor's stop.
func runnerOpts(g string) []elect.Option {
	return []elect.Option{elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(g + "-sessions"),
		elect.WatchForHazards(), elect.WaitsForPredecessor()}
}

// queueLock joins lock g with opts on a session of its own and waits to
// own it in the background until ctx ends: a waiter the test never uses.
func queueLock(ctx context.Context, t *testing.T, addrs []string, g string, opts ...elect.Option) {
	t.Helper()
	l, err := elect.NewLock(session(t, addrs), g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = l.Acquire(ctx) }()
}

// heldOnWaitsLooks holds h's guard on each read of a waits word until
// unblock, which also ends the hold; held is told of the first read.
func heldOnWaitsLooks(h *elect.Handle) (held <-chan struct{}, unblock func()) {
	first, block := make(chan struct{}, 1), make(chan struct{})
	restore := elect.OnWaitsLook(func(owner, _ string) {
		if owner == h.NodePath() {
			select {
			case first <- struct{}{}:
			default:
			}
			<-block
		}
	})
	return first, func() { close(block); restore() }
}

// guardHeldByARunner makes h, on session s, a runner owning g with
// another runner queued behind it until ctx ends (cancel), and returns
// once h's guard is held on its read of that runner's waits word, until
// unblock: what joins now, the guard has not listed.
func guardHeldByARunner(t *testing.T, addrs []string, g string) (s *elect.Session, h *elect.Handle, ctx context.Context, unblock, cancel func()) {
	t.Helper()
	runner := runnerOpts(g)
	s = session(t, addrs)
	h = lockedIn(t, s, g, runner...)
	held, unblock := heldOnWaitsLooks(h)
	ctx, cancel = context.WithCancel(context.Background())
	queueLock(ctx, t, addrs, g, runner...)
	<-held
	return s, h, ctx, unblock, cancel
}

// countedOnceHeard lets h's guard go on (unblock) once the watches fired,
// waits for h to end, ends the test's waiters (cancel), and fails unless
// h lost its node and counted a participant that owns at once (what).
func countedOnceHeard(t *testing.T, h *elect.Handle, unblock, cancel func(), what string) {
	t.Helper()
	time.Sleep(200 * time.Millisecond) // the watches fire
	unblock()
	<-h.Done()
	cancel()
	if h.Reason() != elect.ReasonDeleted || !h.ForeignInGroup() {
		t.Fatalf("%s (%s), and did not count it", what, h.Reason())
	}
}

// acquiring queues n locks on g with opts, each on a session of its own,
// and hands over each as it owns; they stop waiting as the test ends.
func acquiring(t *testing.T, addrs []string, g string, n int, opts ...elect.Option) <-chan *elect.Handle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	got := make(chan *elect.Handle, n)
	for range n {
		l, err := elect.NewLock(session(t, addrs), g, opts...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if h, err := l.Acquire(ctx); err == nil {
				got <- h
			}
		}()
	}
	return got
}

// ownsNext releases first and is the waiter of got that owns after it,
// within 10 s.
func ownsNext(t *testing.T, first *elect.Handle, got <-chan *elect.Handle) *elect.Handle {
	t.Helper()
	if err := first.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case next := <-got:
		return next
	case <-time.After(10 * time.Second):
		t.Fatal("no runner owned after the release")
		return nil
	}
}

// TestForeignInGroupTellsRunnersFromLibraryPrograms: for an owner that
// waits for its predecessor's stop, as herald's runners do, a herald
// waiter whose session says the same, and a node named like Curator's
// that no session holds (left over), are no participant that owns at
// once; a program using Lock without that word is, though its node is
// named as a runner's.
func TestForeignInGroupTellsRunnersFromLibraryPrograms(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	runner := runnerOpts(g)
	s := session(t, addrs)
	h := lockedIn(t, s, g, runner...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	queueLock(ctx, t, addrs, g, runner...)
	if _, err := s.Conn().Create(g+"/_c_11111111-2222-3333-4444-555555555555-lock-0000000099", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the runner queued", func() bool { c, _, _ := s.Conn().Children(g); return len(c) == 3 })
	time.Sleep(500 * time.Millisecond) // the guard lists the group at each join
	if h.ForeignInGroup() {
		t.Fatal("a waiting runner and a node no session holds counted as a participant that owns at once")
	}
	queueLock(ctx, t, addrs, g)
	eventually(t, 10*time.Second, "the library's waiter counted as one that owns at once", h.ForeignInGroup)
}

// TestASessionSaysItWaitsForAllItsRecipesOrNone: the waits word is on the
// session node, which a session's recipes share under one session root.
// A program that waits in one group (WaitsForPredecessor) and not in
// another made its session node say it waits in both, and a runner
// deposed in the second took its node for a runner's: the command got
// its grace beside an owner that owned at once. Such a mix is refused.
func TestASessionSaysItWaitsForAllItsRecipesOrNone(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	runner := runnerOpts(g)
	h := lockedIn(t, session(t, addrs), g, runner...)
	lib := session(t, addrs)
	lockedIn(t, lib, g+"-waits", runner...) // its session node now says it waits
	l, err := elect.NewLock(lib, g, elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(g+"-sessions"))
	if err == nil {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() { _, _ = l.Acquire(ctx) }()
		eventually(t, 10*time.Second, "the program queued", func() bool { c, _, _ := lib.Conn().Children(g); return len(c) == 2 })
		time.Sleep(time.Second) // the guard lists the group at each join
		if !h.ForeignInGroup() {
			t.Fatal("a Lock that does not wait, on a session whose other Lock does, was taken for a runner next in line: a deposed runner's command would get its grace beside it")
		}
		return
	}
	if !strings.Contains(err.Error(), "WaitsForPredecessor") {
		t.Fatalf("the mix refused without naming WaitsForPredecessor: %v", err)
	}
	other := session(t, addrs)
	if _, err := elect.NewLock(other, g+"-b", elect.ProveSessionEnd()); err != nil {
		t.Fatal(err)
	}
	if _, err := elect.NewElection(other, g+"-c", elect.ProveSessionEnd(), elect.WaitsForPredecessor()); err == nil {
		t.Fatal("a session that does not wait in one group was let say it waits in another")
	}
}

// TestGuardedBeforeTheWaitsReads: a runner starts its command once its
// guard has listed the group (Guarded). Reading the waits word of every
// herald session queued behind it came first, one round trip each, so
// every handoff to a runner with runners queued behind it started its
// command that much later. The reads now come after: they matter only
// when the owner's node goes, which the monitor hears of after them.
func TestGuardedBeforeTheWaitsReads(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	runner := runnerOpts(g)
	first := lockedIn(t, session(t, addrs), g, runner...)
	block := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(block) }) }
	t.Cleanup(unblock)
	restore := elect.OnWaitsLook(func(owner, _ string) {
		if owner != first.NodePath() {
			<-block // the next owner's reads hang until the test ends
		}
	})
	t.Cleanup(restore)
	got := acquiring(t, addrs, g, 2, runner...)
	eventually(t, 10*time.Second, "both runners queued", func() bool { c, _, _ := first.Session().Conn().Children(g); return len(c) == 3 })
	next := ownsNext(t, first, got)
	select {
	case <-next.Guarded():
	case <-time.After(5 * time.Second):
		t.Fatal("the next owner's guard waited for the waits word of the runner behind it before it let the command start")
	}
	unblock()
}

// TestAJoinHeardWithTheDeletionCounts: a program using Lock that joins
// just before the owner's node is deleted by hand owns at once. Its join
// fires the guard's watch as the deletion fires the node's, and the
// monitor, taking the deletion first (Go picks either at random), never
// listed it: the owner said none was there, and a runner gave its command
// the grace beside the program's tenure. Here the guard is held on a
// read until both have fired, a few times over.
func TestAJoinHeardWithTheDeletionCounts(t *testing.T) {
	addrs := sharedAddrs(t)
	for i := range 6 {
		g := groupPath(t) + fmt.Sprint("-", i)
		s, h, ctx, unblock, cancel := guardHeldByARunner(t, addrs, g)
		queueLock(ctx, t, addrs, g, elect.CreateParents()) // the program joins
		eventually(t, 10*time.Second, "the program queued", func() bool { c, _, _ := s.Conn().Children(g); return len(c) == 3 })
		if err := s.Conn().Delete(h.NodePath(), -1); err != nil {
			t.Fatal(err)
		}
		countedOnceHeard(t, h, unblock, cancel, fmt.Sprintf("run %d: the owner lost its node with a program that owns at once behind it", i))
	}
}

// TestTheWaitsReadsHoldTheMonitorOneRoundTrip: a new owner reads the
// waits word of every runner behind it; one read after another, its
// monitor heard nothing for that many round trips, a deletion of its node
// included. Here each read takes 700 ms, four runners wait behind the new
// owner, and its node is deleted as its command may start.
func TestTheWaitsReadsHoldTheMonitorOneRoundTrip(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	runner := runnerOpts(g)
	first := lockedIn(t, session(t, addrs), g, runner...)
	restore := elect.OnWaitsLook(func(owner, _ string) {
		if owner != first.NodePath() {
			time.Sleep(700 * time.Millisecond)
		}
	})
	t.Cleanup(restore)
	got := acquiring(t, addrs, g, 5, runner...)
	c := first.Session().Conn()
	eventually(t, 10*time.Second, "five runners queued", func() bool { k, _, _ := c.Children(g); return len(k) == 6 })
	next := ownsNext(t, first, got)
	<-next.Guarded()
	deleted := time.Now()
	if err := c.Delete(next.NodePath(), -1); err != nil {
		t.Fatal(err)
	}
	<-next.Done()
	if took := time.Since(deleted); took > 1600*time.Millisecond {
		t.Fatalf("the owner heard of its node's deletion %v after it, behind its reads of four waits words (700 ms each)", took.Round(time.Millisecond))
	}
}

// TestAJoinHeardWithADeleteallCounts: a client that owns at once (here a
// node named as Curator's mutex names its own) joins just before an
// operator's deleteall takes the group, the owner's node and its own.
// Curator makes both again at once and owns. Its join reached the owner
// with the deletion, and the last look, finding the group gone, counted
// nobody: a runner gave its command the grace beside Curator's tenure.
// The guard is held on a read until the deleteall is done, a few times.
func TestAJoinHeardWithADeleteallCounts(t *testing.T) {
	addrs := sharedAddrs(t)
	for i := range 3 {
		g := groupPath(t) + fmt.Sprint("-", i)
		s, h, _, unblock, cancel := guardHeldByARunner(t, addrs, g) // the client joins next
		name := g + "/_c_0f4c1a52-7b0e-4d3c-9a55-2f0d6a1e9c3b-lock-"
		if _, err := session(t, addrs).Conn().Create(name, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		kids, _, err := s.Conn().Children(g)
		if err != nil {
			t.Fatal(err)
		}
		var ops []any
		for _, k := range kids {
			ops = append(ops, &zk.DeleteRequest{Path: g + "/" + k, Version: -1})
		}
		if _, err := s.Conn().Multi(append(ops, &zk.DeleteRequest{Path: g, Version: -1})...); err != nil {
			t.Fatal(err)
		}
		countedOnceHeard(t, h, unblock, cancel, fmt.Sprintf("run %d: the owner lost its node to a deleteall with a client that owns at once joined just before", i))
	}
}

// TestASlowLastLookIsCutShort: the last look an owner takes at its group
// as its node is found gone comes before its word that ownership is
// lost, and so before its runner's command gets any signal. A server
// that answers nothing meanwhile (here stopped with SIGSTOP) held that
// word until the client gave the connection up (2.7 s of a 6 s timeout,
// 3 runs of 3 without the bound), while a client next in line on another member
// could own at once; the grace the look spares is a sixth. The look is
// cut short within a twelfth, and counts, cut short, as such a client.
func TestASlowLastLookIsCutShort(t *testing.T) {
	const timeout = 6 * time.Second
	c := zktest.ForTest(t, zkserver.Config{})
	addrs := c.Addrs()
	g := "/slow-last-look"
	s := session(t, addrs, elect.WithSessionTimeout(timeout))
	h := lockedIn(t, s, g, elect.CreateParents(), elect.WatchForHazards())
	looked := make(chan time.Time, 1)
	restore := elect.OnLastLook(func(owner string) {
		if owner == h.NodePath() {
			if err := c.Member(0).Pause(); err != nil {
				t.Error(err)
			}
			looked <- time.Now()
		}
	})
	t.Cleanup(restore)
	t.Cleanup(func() { _ = c.Member(0).Resume() })
	time.Sleep(300 * time.Millisecond) // the guard lists the group
	// Its answer may never come: the owner hears of the deletion first.
	go func(c *zk.Conn) { _ = c.Delete(h.NodePath(), -1) }(session(t, addrs).Conn())
	var at time.Time
	select {
	case at = <-looked:
	case <-time.After(10 * time.Second):
		t.Fatal("the owner took no last look at its group")
	}
	<-h.Done()
	took := time.Since(at)
	_ = c.Member(0).Resume()
	if took > timeout/4 || h.Reason() != elect.ReasonDeleted || !h.ForeignInGroup() {
		t.Fatalf("the owner said it lost its node (%s, ForeignInGroup %v) %v after its last look began, on a server that answered nothing (within %v expected, counted as a client next in line)",
			h.Reason(), h.ForeignInGroup(), took.Round(time.Millisecond), timeout/4)
	}
}
