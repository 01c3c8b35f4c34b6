package elect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
)

// TestLastReleaseNotVouchedByAWithdrawal: `who` says since when a group has
// had no owner from the release on its mark, only while that release was
// the queue's last change. A waiter that gives up now writes the mark as
// it leaves (naming itself withdrawn), which makes the write the last
// change again: after an owner that went without a release (its node
// deleted by hand, its session ended) the release is then older than that
// owner, and must not be shown. It is shown when every node made after it
// withdrew.
func TestLastReleaseNotVouchedByAWithdrawal(t *testing.T) {
	addrs := sharedAddrs(t)
	c := session(t, addrs).Conn()
	for _, tc := range []struct {
		name      string
		withdrawn string
		shown     bool
	}{
		{"one node after the release never said it withdrew", "[2]", false},
		{"every node after the release withdrew", "[1,2]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupPath(t)
			mkdirs(t, c, g)
			var names []string
			for range 3 {
				n, err := c.Create(g+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, n)
			}
			for _, n := range names {
				if err := c.Delete(n, -1); err != nil {
					t.Fatal(err)
				}
			}
			mark := fmt.Sprintf(`{"herald":1,"recipe":"lock","released":{"node":"lock-0000000000","id":"a","term":1,"reason":"released","time":%q},"withdrawn":%s}`,
				time.Now().UTC().Format(time.RFC3339Nano), tc.withdrawn)
			if _, err := c.Set(g, []byte(mark), -1); err != nil {
				t.Fatal(err)
			}
			v, err := elect.ReadGroup(ctxT(t, 10*time.Second), session(t, addrs), g)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.LastRelease != nil; got != tc.shown {
				t.Errorf("LastRelease %+v: shown %v, want %v", v.LastRelease, got, tc.shown)
			}
		})
	}
}

// TestALostCreateGivenUpIsNotedWithdrawn: a waiter's create lands on the
// server, but its reply is lost with the connection, and the waiter gives
// up before it is back. Its node, found by the sweep once the connection
// is, must go as any waiter's that gives up does: noted withdrawn on the
// group node, or the next `herald lock` copy waits as for an owner deleted
// by hand. (It went with no note, and TestSettleFinishesAGiveUpsNote failed
// whenever the cut came before the create's reply.)
func TestALostCreateGivenUpIsNotedWithdrawn(t *testing.T) {
	addrs := sharedAddrs(t)
	path, p, holder := groupPath(t), proxyTo(t, addrs[0]), session(t, addrs)
	waiter := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	ctx := ctxT(t, 30*time.Second)
	hl, _ := elect.NewLock(holder, path, elect.CreateParents())
	h, err := hl.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Release(context.Background()) })

	p.Refuse(true)
	p.DropReplyTo(faultproxy.OpCreate, faultproxy.OpCreate2)
	wl, _ := elect.NewLock(waiter, path)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := wl.Acquire(wctx); done <- err }()
	eventually(t, 5*time.Second, "the create's reply dropped", func() bool { return p.Dropped() == 1 })
	var node string
	eventually(t, 5*time.Second, "the waiter's node on the server", func() bool {
		c, _, _ := holder.Conn().Children(path)
		for _, n := range c {
			if n != h.Node() {
				node = n
			}
		}
		return node != ""
	})
	seq, _ := elect.ParseSequence(node)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter returned %v", err)
	}
	p.Refuse(false)
	if err := waiter.Settle(ctxT(t, 15*time.Second)); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if ok, _, err := holder.Conn().Exists(path + "/" + node); err != nil || ok {
		t.Fatalf("the waiter's node %s is still there (%v) after Settle", node, err)
	}
	if b, ok := notedWithdrawn(t, holder, path, seq); !ok {
		t.Fatalf("group node %s does not name the waiter's node %s (%d) withdrawn", b, node, seq)
	}
}

// notedWithdrawn reports whether herald's mark on group names seq
// withdrawn, and returns the group node's data.
func notedWithdrawn(t *testing.T, s *elect.Session, group string, seq int32) ([]byte, bool) {
	t.Helper()
	b, _, err := s.Conn().Get(group)
	if err != nil {
		t.Fatal(err)
	}
	var mark struct {
		Withdrawn []int32 `json:"withdrawn"`
	}
	if err := json.Unmarshal(b, &mark); err != nil {
		t.Fatalf("group node %q: %v", b, err)
	}
	return b, slices.Contains(mark.Withdrawn, seq)
}

// TestSettleFinishesAGiveUpsNote: a waiter that gives up while cut off
// from the servers leaves its node and its note (see TestLockAfterAGiveUpStartsAtOnce)
// to the background. Settle, called before Close, lets that work finish
// once the connection is back; Close alone would end it where it stands,
// and the next copy would wait as for an owner deleted by hand.
func TestSettleFinishesAGiveUpsNote(t *testing.T) {
	w := waiterBehindAHolder(t)
	p, waiter, node := w.proxy, w.waits, w.node
	seq, _ := elect.ParseSequence(node)

	p.Refuse(true)
	p.Cut()
	eventually(t, 5*time.Second, "the waiter cut off", func() bool {
		st, _ := waiter.State()
		return st != elect.StateConnected
	})
	w.cancel()
	if err := <-w.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter returned %v", err)
	}
	p.Refuse(false)
	if err := waiter.Settle(ctxT(t, 15*time.Second)); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	_ = waiter.Close()

	if ok, _, err := w.holder.Conn().Exists(w.path + "/" + node); err != nil || ok {
		t.Fatalf("the waiter's node %s is still there (%v) after Settle and Close", node, err)
	}
	if b, ok := notedWithdrawn(t, w.holder, w.path, seq); !ok {
		t.Fatalf("group node %s does not name the waiter's node %s (%d) withdrawn", b, node, seq)
	}
}

// TestBriefReleaseKeepsAWithdrawalNotedBeforeItsListing: an owner that
// held under a second writes its release mark over the version its last
// listing showed, without reading what is there. A waiter behind it that
// gave up, and noted so on the group node before that listing, is in the
// data at that version: writing over it dropped the note, and the next
// lock taken in the empty group waited as for an owner deleted by hand
// (PredecessorReleased false), though every node before its own was
// accounted for. The owner now writes without a read only when its
// listing shows every node made after its own still there.
func TestBriefReleaseKeepsAWithdrawalNotedBeforeItsListing(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 30*time.Second)
	path := groupPath(t)
	look := session(t, addrs)
	lock := func() *elect.Lock {
		l, err := elect.NewLock(session(t, addrs), path, elect.CreateParents())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	queued := func(n int) {
		t.Helper()
		eventually(t, 10*time.Second, fmt.Sprintf("%d nodes queued", n), func() bool {
			c, _, _ := look.Conn().Children(path)
			return len(c) == n
		})
	}
	// z owns; y, a and b wait, in that order.
	z, err := lock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	handles := make(chan *elect.Handle, 2)
	errs := make(chan error, 3)
	for i, l := range []*elect.Lock{lock(), lock()} {
		go func() {
			h, err := l.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			handles <- h
		}()
		queued(2 + i)
	}
	bctx, cancelB := context.WithCancel(ctx)
	go func() { _, err := lock().Acquire(bctx); errs <- err }()
	queued(4)
	c, _, err := look.Conn().Children(path)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int32
	for _, n := range c {
		s, _ := elect.ParseSequence(n)
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	bSeq := seqs[3]

	cancelB() // b gives up, noting it on the group node
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("b's Acquire returned %v", err)
	}
	eventually(t, 10*time.Second, "b's withdrawal noted", func() bool { _, ok := notedWithdrawn(t, look, path, bSeq); return ok })

	// z goes: a, two behind it, lists now, the note in what it sees.
	if err := z.Release(ctx); err != nil {
		t.Fatal(err)
	}
	y := <-handles
	if err := y.Release(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-handles
	if err := a.Release(ctx); err != nil { // held for far less than a second
		t.Fatal(err)
	}
	if b, ok := notedWithdrawn(t, look, path, bSeq); !ok {
		t.Errorf("after a's brief tenure the group node %s no longer names b (%d) withdrawn", b, bSeq)
	}
	next, err := lock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = next.Release(context.Background()) }()
	if ok, err := next.PredecessorReleased(ctx); err != nil || !ok {
		t.Errorf("the next lock in the empty group: PredecessorReleased = %v (%v); want true: a's release and b's withdrawal account for every node before it", ok, err)
	}
}

// TestStormOfGiveUpsIsAccountedFor: more waiters give up, one after
// another, behind a held lock than the mark lists one by one (a fleet's
// `herald lock --timeout` from cron). Their notes join into one run, and
// the lock taken after the holder's release starts at once
// (PredecessorReleased); with the latest 32 alone it waited as for an
// owner deleted by hand.
func TestStormOfGiveUpsIsAccountedFor(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 60*time.Second)
	path := groupPath(t)
	holder, err := elect.NewLock(session(t, addrs), path, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tries, err := elect.NewLock(session(t, addrs), path)
	if err != nil {
		t.Fatal(err)
	}
	const storm = 45
	for range storm {
		if _, err := tries.TryAcquire(ctx); !errors.Is(err, elect.ErrLocked) {
			t.Fatalf("a try while the lock is held: %v", err)
		}
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ns := session(t, addrs)
	next, err := elect.NewLock(ns, path)
	if err != nil {
		t.Fatal(err)
	}
	nh, err := next.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = nh.Release(context.Background()) }()
	if seq := nh.Sequence(); seq != storm+1 {
		t.Fatalf("the next lock's node has sequence %d; want %d (the holder's, then the tries')", seq, storm+1)
	}
	if ok, err := nh.PredecessorReleased(ctx); err != nil || !ok {
		b, _, _ := ns.Conn().Get(path)
		t.Errorf("after %d give-ups the next lock: PredecessorReleased = %v (%v); want true; group node %s", storm, ok, err, b)
	}
}

// TestOfficeNumberIsAccountedFor: herald's office, made at an election's
// first acknowledgment, takes a sequence number no queue node has. A
// candidate that later found the election empty (every copy of a
// deployment restarted after its first generation) found that number
// unaccounted for and waited as for an owner deleted by hand. The owner
// that made the office, or one after it that saw it, now names the number
// on its release's mark, and the mark written twice makes a successor
// that expects one write read it and keep it.
func TestOfficeNumberIsAccountedFor(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 30*time.Second)
	look := session(t, addrs)
	campaign := func(path, id string) *elect.Handle {
		t.Helper()
		e, err := elect.NewElection(session(t, addrs), path, elect.CreateParents())
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.Campaign(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	fresh := func(path string) {
		t.Helper()
		h := campaign(path, "fresh")
		defer func() { _ = h.Resign(context.Background()) }()
		if ok, err := h.PredecessorReleased(ctx); err != nil || !ok {
			b, _, _ := look.Conn().Get(path)
			t.Errorf("%s: a candidate that found the election empty: PredecessorReleased = %v (%v); want true; group node %s", path, ok, err, b)
		}
	}

	// One copy: it makes the office, and resigns at once.
	one := groupPath(t)
	a := campaign(one, "a")
	if err := a.Acknowledge(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	fresh(one)

	// Two copies: the first makes the office and resigns; the second,
	// which listed before the office was made, holds briefly and resigns.
	two := groupPath(t)
	a = campaign(two, "a")
	e, err := elect.NewElection(session(t, addrs), two)
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan *elect.Handle, 1)
	go func() {
		h, err := e.Campaign(ctx, "b")
		if err != nil {
			t.Error(err)
		}
		next <- h
	}()
	eventually(t, 10*time.Second, "b queued", func() bool {
		c, _, _ := look.Conn().Children(two)
		return len(c) == 2
	})
	if err := a.Acknowledge(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	b := <-next
	if b == nil {
		t.FailNow()
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	fresh(two)
}
