package elect_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// lockedIn is a handle on lock g, acquired with opts within 10 s.
func lockedIn(t *testing.T, s *elect.Session, g string, opts ...elect.Option) *elect.Handle {
	t.Helper()
	l, err := elect.NewLock(s, g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// campaignedIn is a handle on election g, campaigned for as id with opts
// within 10 s.
func campaignedIn(t *testing.T, s *elect.Session, g, id string, opts ...elect.Option) *elect.Handle {
	t.Helper()
	e, err := elect.NewElection(s, g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctxT(t, 10*time.Second), id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// runNoteGroup is a lock group whose first owner (a runner, under
// ProveSessionEnd, its work noted by MarkRunning) lost its node with the
// whole group (a deleteall); s2 is another runner's session, and lock a
// way to join the group anew with opts.
func runNoteGroup(t *testing.T) (owner *elect.Handle, s2 *elect.Session, lock func(s *elect.Session, opts ...elect.Option) *elect.Handle, root string) {
	t.Helper()
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root = g + "-sessions"
	opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(root)}
	lock = func(s *elect.Session, more ...elect.Option) *elect.Handle {
		t.Helper()
		return lockedIn(t, s, g, append(append([]elect.Option{}, opts...), more...)...)
	}
	s1 := session(t, addrs)
	owner = lock(s1)
	if err := owner.MarkRunning(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	c := s1.Conn()
	for _, p := range []string{owner.NodePath(), g} {
		if err := c.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-owner.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the owner never heard that its node went")
	}
	return owner, session(t, addrs), lock, root
}

// TestRunNoteKeepsTheFirstOwnerOfAGroupMadeAnewWaiting: after a deleteall
// of its group, the first node of the group made anew has nobody before
// it in the group, but the deposed owner's command may still run: the
// run note, outside the group, says so, until the deposed runner records
// that its command stopped (or its session ends).
func TestRunNoteKeepsTheFirstOwnerOfAGroupMadeAnewWaiting(t *testing.T) {
	owner, s2, lock, _ := runNoteGroup(t)
	next := lock(s2)
	released, ch, err := next.PredecessorReleasedW(ctxT(t, 10*time.Second))
	if err != nil || released || ch == nil || !next.RunsBeside() {
		t.Fatalf("the group's first node after a deleteall, its deposed owner's work noted: PredecessorReleasedW = %v, watch %v, %v, RunsBeside %v; want false with a watch on the note",
			released, ch != nil, err, next.RunsBeside())
	}
	if err := owner.RecordStopped(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the deposed runner's record of its stop fired no watch")
	}
	if got, err := next.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || !got || !next.PredecessorVouched() || next.RunsBeside() {
		t.Fatalf("after the deposed runner recorded its stop: PredecessorReleased = %v, %v, vouched %v, RunsBeside %v; want true, vouched", got, err, next.PredecessorVouched(), next.RunsBeside())
	}
}

// TestRunNoteKeepsTheOwnerAfterAFirstLibraryOwnerWaiting: after the same
// deleteall, a library owner (no runner) is the group's first node and
// releases; the runner behind it has a predecessor before which nobody
// owned in the group made anew, but the deposed owner's note still counts.
func TestRunNoteKeepsTheOwnerAfterAFirstLibraryOwnerWaiting(t *testing.T) {
	owner, s2, lock, _ := runNoteGroup(t)
	lib := lock(session(t, sharedAddrs(t)))
	queued := make(chan struct{})
	got := make(chan *elect.Handle, 1)
	go func() { got <- lock(s2, elect.OnQueued(func(string) { close(queued) })) }()
	select {
	case <-queued:
	case <-time.After(10 * time.Second):
		t.Fatal("the runner never queued behind the library owner")
	}
	if err := lib.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	next := <-got
	if seq, ok := elect.ParseSequence(next.Predecessor()); !ok || seq != 0 {
		t.Fatalf("the runner's predecessor is %q, not the group's first node: the test no longer holds what it means to", next.Predecessor())
	}
	if released, err := next.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || released || !next.RunsBeside() {
		t.Fatalf("behind a first library owner's release, the deposed owner's work noted: PredecessorReleased = %v, %v, RunsBeside %v; want false", released, err, next.RunsBeside())
	}
	owner.Session().Close() // its session's end removes the note
	eventually(t, 10*time.Second, "the runner to find the release once the note went with the deposed owner's session", func() bool {
		r, err := next.PredecessorReleased(ctxT(t, 10*time.Second))
		return err == nil && r
	})
}

// TestReleaseRemovesTheRunNote: an owner whose work stopped and who
// released leaves no note, so the first owner of the group made anew
// later starts at once.
func TestReleaseRemovesTheRunNote(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root := g + "-sessions"
	s := session(t, addrs)
	h := runningLock(t, s, g, root)
	if n := runNotes(t, s.Conn(), root); n != 1 {
		t.Fatalf("%d run notes under %s while the work runs, want 1", n, root)
	}
	if err := h.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := runNotes(t, s.Conn(), root); n != 0 {
		t.Fatalf("%d run notes under %s after the release, want none", n, root)
	}
}

// TestALateDeletionOfANoteSparesTheNextTenures: a release whose note
// could not be deleted (here the session root refuses DELETE for a while)
// deletes it in the background. The same session's next tenure in the
// group, noted meanwhile, keeps its own note once that deletion lands:
// under one shared name the late deletion took it, and a copy joining the
// group after a deleteall would not have waited for that tenure's command.
func TestALateDeletionOfANoteSparesTheNextTenures(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root := g + "-sessions"
	s := session(t, addrs)
	first := runningLock(t, s, g, root)
	admin := s.Conn()
	noDelete := zk.WorldACL(zk.PermAll &^ zk.PermDelete)
	if _, err := admin.SetACL(root, noDelete, -1); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	runningLock(t, s, g, root) // the next tenure, its work noted
	if _, err := admin.SetACL(root, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("the first tenure's note was never deleted: %v", err)
	}
	if n := runNotes(t, s.Conn(), root); n != 1 {
		t.Fatalf("%d run notes under %s once the first tenure's late deletion landed, want 1: the next tenure's, whose work still runs", n, root)
	}
}

// runningLock takes the lock g on s, as a runner does (its session
// nodes under root, more options with opts), and notes its work running.
func runningLock(t *testing.T, s *elect.Session, g, root string, opts ...elect.Option) *elect.Handle {
	t.Helper()
	l, err := elect.NewLock(s, g, append([]elect.Option{elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(root)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.MarkRunning(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	return h
}

// runNotes counts the run notes under root.
func runNotes(t *testing.T, c *zk.Conn, root string) int {
	t.Helper()
	names, _, err := c.Children(root)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, "run-") && strings.HasSuffix(name, "-cmd") {
			n++
		}
	}
	return n
}
