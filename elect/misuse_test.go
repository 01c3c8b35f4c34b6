package elect_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// A waiter whose node someone deletes while it waits does not come to own
// when the node below it goes later: its own node's deletion came first in
// the reply stream, and its wait ends with ErrNodeDeleted. Only the waiter
// behind it owns.
func TestWaiterWhoseNodeWasDeletedNeverOwns(t *testing.T) {
	addrs, g, ctx := sharedAddrs(t), groupPath(t), ctxT(t, 30*time.Second)
	op := session(t, addrs)
	la, _ := elect.NewLock(session(t, addrs), g, elect.CreateParents())
	ha, err := la.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		h   *elect.Handle
		err error
	}
	queue := func(name string) (<-chan string, <-chan result) {
		q, r := make(chan string, 1), make(chan result, 1)
		l, _ := elect.NewLock(session(t, addrs), g, elect.OnQueued(func(n string) { q <- n }))
		go func() {
			h, err := l.Acquire(ctx)
			r <- result{h, err}
		}()
		return q, r
	}
	bq, br := queue("b")
	bnode := <-bq
	cq, cr := queue("c")
	<-cq
	time.Sleep(200 * time.Millisecond) // both watch the node below theirs
	if err := op.Conn().Delete(g+"/"+bnode, -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // long before the owner lets go
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-cr
	if c.err != nil {
		t.Fatalf("the waiter behind the deleted node: %v; want the lock", c.err)
	}
	select {
	case b := <-br:
		if b.err == nil {
			t.Fatalf("the waiter whose node was deleted got a handle (held %v) while another holds the lock", b.h.Held())
		}
		if !errors.Is(b.err, elect.ErrNodeDeleted) {
			t.Errorf("the waiter whose node was deleted: %v; want ErrNodeDeleted", b.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter whose node was deleted still waits")
	}
	_ = c.h.Release(context.Background())
}

// cancelAtOnce is a context cancelled the moment its Done is first asked
// for: an Acquire given up just as it sends its create.
type cancelAtOnce struct {
	context.Context
	once sync.Once
	mu   sync.Mutex
	ch   chan struct{}
	err  error
}

func (c *cancelAtOnce) Done() <-chan struct{} {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = context.Canceled
		close(c.ch)
		c.mu.Unlock()
	})
	return c.ch
}

func (c *cancelAtOnce) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// An Acquire given up while its create is on its way leaves no node
// behind: a node left there, held by a live session, would block every
// later participant for that session's life.
func TestAcquireGivenUpAtItsCreateLeavesNoNode(t *testing.T) {
	addrs, g := sharedAddrs(t), groupPath(t)
	ol, _ := elect.NewLock(session(t, addrs), g, elect.CreateParents())
	oh, err := ol.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, addrs)
	l, _ := elect.NewLock(s, g)
	for range 200 {
		if h, err := l.Acquire(&cancelAtOnce{Context: context.Background(), ch: make(chan struct{})}); err == nil {
			t.Fatalf("an Acquire cancelled at once got %s", h.Node())
		}
	}
	eventually(t, 10*time.Second, "no node of the session that gave up", func() bool {
		kids, _, err := s.Conn().Children(g)
		if err != nil {
			return false
		}
		for _, k := range kids {
			if _, st, err := s.Conn().Get(g + "/" + k); err == nil && st.EphemeralOwner == s.ID() {
				return false
			}
		}
		return true
	})
	if err := oh.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	l3, _ := elect.NewLock(session(t, addrs), g)
	h3, err := l3.AcquireTimeout(context.Background(), 5*time.Second)
	if err != nil {
		t.Fatalf("the next participant after the owner released: %v", err)
	}
	_ = h3.Release(context.Background())
}

// A fence made from a waiter's node (its node exists, and its term is later
// than the owner's) writes nothing: only the owner's node passes. The real
// owner's checkpoint is then not refused as older.
func TestFenceOfAWaiterWritesNothing(t *testing.T) {
	addrs, g, ctx := sharedAddrs(t), groupPath(t), ctxT(t, 20*time.Second)
	leader, waiter := session(t, addrs), session(t, addrs)
	le, _ := elect.NewElection(leader, g, elect.CreateParents())
	lh, err := le.Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	we, _ := elect.NewElection(waiter, g)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _, _ = we.Campaign(wctx, "waiter") }()
	var me elect.Participant
	eventually(t, 5*time.Second, "the waiter queued", func() bool {
		ps, err := we.Participants(ctx)
		if err != nil || len(ps) != 2 {
			return false
		}
		me = ps[1]
		return true
	})
	f := elect.Fence{Group: g, Node: me.Node, ID: me.ID, Term: me.Czxid}
	if err := f.Checkpoint(ctx, waiter, []byte("waiter")); !errors.Is(err, elect.ErrNotLeader) {
		t.Fatalf("a waiter's fence wrote the checkpoint: %v; want ErrNotLeader", err)
	}
	if err := lh.Checkpoint(ctx, []byte("leader")); err != nil {
		t.Fatalf("the owner's checkpoint after a waiter's fence tried: %v", err)
	}
	if err := (elect.Fence{Group: g, Node: lh.Node(), Term: 0}).Checkpoint(ctx, leader, nil); !errors.Is(err, elect.ErrNotLeader) {
		t.Errorf("a fence with term 0 (a handle that ended before its term was known): %v; want ErrNotLeader", err)
	}
}

// A nil session or a nil option is an error, not a panic (a panic inside
// a request's goroutine no recover of the caller's can catch).
func TestNilSessionAndNilOptionAreErrors(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	s := session(t, sharedAddrs(t))
	g := groupPath(t)
	checks := map[string]func() error{
		"ReadGroup":        func() error { _, err := elect.ReadGroup(ctx, nil, g); return err },
		"ReadCheckpoint":   func() error { _, err := elect.ReadCheckpoint(ctx, nil, g); return err },
		"ReadOffice":       func() error { _, _, err := elect.ReadOffice(ctx, nil, g); return err },
		"Fence.Checkpoint": func() error { return elect.Fence{Group: g, Node: "n_0000000001", Term: 5}.Checkpoint(ctx, nil, nil) },
		"NewLock":          func() error { _, err := elect.NewLock(s, g, nil); return err },
		"NewElection":      func() error { _, err := elect.NewElection(s, g, nil); return err },
		"NewSession":       func() error { _, err := elect.NewSession(ctx, sharedAddrs(t), nil); return err },
		"Observe":          func() error { _, err := elect.Observe(ctx, s, g, nil); return err },
		"ObserveMany":      func() error { _, err := elect.ObserveMany(ctx, s, nil); return err },
	}
	for name, f := range checks {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s panicked: %v", name, r)
				}
			}()
			if err := f(); err == nil || !strings.Contains(err.Error(), "nil") {
				t.Errorf("%s with a nil session or option: %v; want an error saying so", name, err)
			}
		}()
	}
}

// CreateParents makes no node inside a herald group: named like a queue
// node (job-0000000000), held by no session, it would block the group's
// queue for good. Outside groups such names are fine.
func TestCreateParentsMakesNothingInAQueue(t *testing.T) {
	ctx, s, g := ctxT(t, 20*time.Second), session(t, sharedAddrs(t)), groupPath(t)
	outer, _ := elect.NewLock(s, g, elect.CreateParents())
	h, err := outer.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{g + "/job-0000000000", g + "/sub", g + "/sub/job-0000000001"} {
		l, _ := elect.NewLock(s, p, elect.CreateParents())
		if ih, err := l.Acquire(ctx); err == nil {
			_ = ih.Release(ctx)
			t.Errorf("a lock at %s was made", p)
		} else if !strings.Contains(err.Error(), "will not create") {
			t.Errorf("a lock at %s: %v; want it refused, saying why", p, err)
		}
	}
	h2, err := outer.AcquireTimeout(ctx, 5*time.Second)
	if err != nil {
		t.Fatalf("the outer lock afterwards: %v", err)
	}
	_ = h2.Release(ctx)
	dated, _ := elect.NewLock(s, groupPath(t)+"/job-0000000001", elect.CreateParents())
	dh, err := dated.Acquire(ctx)
	if err != nil {
		t.Fatalf("a group named with digits, outside any group: %v", err)
	}
	_ = dh.Release(ctx)
}

// WithPrefix names classic nodes: with another dialect forced, in either
// order, it is an error, not the last option quietly winning.
func TestPrefixWithAnotherDialectIsRefused(t *testing.T) {
	s := session(t, sharedAddrs(t))
	g := groupPath(t)
	for _, opts := range [][]elect.Option{
		{elect.WithPrefix("job-"), elect.WithDialect(elect.DialectKazoo)},
		{elect.WithDialect(elect.DialectKazoo), elect.WithPrefix("job-")},
	} {
		if _, err := elect.NewLock(s, g, opts...); err == nil || !strings.Contains(err.Error(), "give one or the other") {
			t.Errorf("a prefix with the Kazoo dialect: %v; want it refused", err)
		}
	}
	if _, err := elect.NewLock(s, g, elect.WithDialect(elect.DialectClassic), elect.WithPrefix("job-")); err != nil {
		t.Errorf("a prefix with the classic dialect: %v", err)
	}
}

// TestReadsOnAClosedSessionSaySo: a one-shot read on a session the caller
// closed said "ZooKeeper unreachable ... try again", which no retry can
// mend; it now says the session is closed, as Acquire does.
func TestReadsOnAClosedSessionSaySo(t *testing.T) {
	addrs, g, ctx := sharedAddrs(t), groupPath(t), ctxT(t, 30*time.Second)
	s := session(t, addrs)
	l, err := elect.NewLock(s, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	if h, err := l.Acquire(ctx); err != nil {
		t.Fatal(err)
	} else if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reads := map[string]func() error{
		"Holder":         func() error { _, err := l.Holder(ctx); return err },
		"ReadGroup":      func() error { _, err := elect.ReadGroup(ctx, s, g); return err },
		"ReadCheckpoint": func() error { _, err := elect.ReadCheckpoint(ctx, s, g); return err },
	}
	for name, read := range reads {
		err := read()
		if !errors.Is(err, elect.ErrSessionClosed) || errors.Is(err, elect.ErrUnreachable) {
			t.Errorf("%s on a closed session: %v; want %v", name, err, elect.ErrSessionClosed)
		}
	}
}
