package elect_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// rotation drives clients that take one lock in turn, each enqueueing while
// another holds it, and counts the requests each session sends.
type rotation struct {
	t       *testing.T
	ctx     context.Context
	cluster *zkserverCluster
	path    string
	look    *elect.Session // lists the group without touching the counts
}

func newRotation(t *testing.T) *rotation {
	cluster := sharedCluster(t)
	r := &rotation{t: t, ctx: ctxT(t, 60*time.Second), cluster: cluster, path: groupPath(t)}
	r.look = session(t, cluster.Addrs())
	return r
}

// member is one client of the rotation, with its own session.
type member struct {
	s      *elect.Session
	l      *elect.Lock
	got    <-chan *elect.Handle
	cancel context.CancelFunc
	h      *elect.Handle
	before int64
	costs  []int64 // requests per cycle, from enqueue to release
}

func (r *rotation) member(opts ...elect.Option) *member {
	s := session(r.t, r.cluster.Addrs(), elect.WithSessionTimeout(30*time.Second))
	l, err := elect.NewLock(s, r.path, append([]elect.Option{elect.CreateParents()}, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	return &member{s: s, l: l}
}

// requests is how many requests the server has received from s.
// nodes is the number of queue nodes in the group.
func (r *rotation) nodes() int {
	r.t.Helper()
	var n int
	eventually(r.t, 5*time.Second, "the group readable", func() bool {
		children, _, err := r.look.Conn().Children(r.path)
		if err != nil {
			return false
		}
		n = 0
		for _, c := range children {
			if _, ok := elect.ParseSequence(c); ok {
				n++
			}
		}
		return true
	})
	return n
}

func (r *rotation) requests(s *elect.Session) int64 {
	r.t.Helper()
	m, err := r.cluster.Member(0).SessionPackets(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	n, ok := m[s.ID()]
	if !ok {
		r.t.Fatalf("session 0x%x missing from cons", s.ID())
	}
	return n
}

// spent is how many requests m has sent since it last started to acquire.
func (r *rotation) spent(m *member) int64 {
	r.t.Helper()
	return r.requests(m.s) - m.before
}

// start makes m take the free lock.
func (r *rotation) start(m *member) {
	r.t.Helper()
	r.acquire(m)
	r.take(m)
}

func (r *rotation) acquire(m *member) {
	m.before = r.requests(m.s)
	ctx, cancel := context.WithCancel(r.ctx)
	got := make(chan *elect.Handle, 1)
	go func() {
		h, err := m.l.Acquire(ctx)
		if err != nil {
			close(got)
			return
		}
		got <- h
	}()
	m.got, m.cancel = got, cancel
}

// enqueue starts m's Acquire and returns once m waits, watching the node
// below its own.
func (r *rotation) enqueue(m *member) {
	r.t.Helper()
	r.acquire(m)
	eventually(r.t, 5*time.Second, "the waiter's watch", func() bool { return r.watching(m.s) != "" })
}

// take waits for m's Acquire and for the term: the handle's watch on its
// own node is then counted, whatever the goroutines' timing.
func (r *rotation) take(m *member) {
	r.t.Helper()
	select {
	case h, ok := <-m.got:
		if !ok {
			r.t.Fatal("acquire failed")
		}
		if h.Term() == 0 {
			r.t.Fatal("no term")
		}
		m.h = h
	case <-r.ctx.Done():
		r.t.Fatal("the lock never came")
	}
}

func (r *rotation) release(m *member) {
	r.t.Helper()
	if err := m.h.Release(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	m.h = nil
	m.cancel()
	m.costs = append(m.costs, r.spent(m))
}

// turn: the holder releases, next takes the lock, the holder queues again.
func (r *rotation) turn(holder, next *member) {
	r.t.Helper()
	r.handOver(holder, next)
	r.enqueue(holder)
}

// handOver: the holder releases and next, first in line, takes the lock.
func (r *rotation) handOver(holder, next *member) {
	r.t.Helper()
	r.release(holder)
	r.take(next)
}

// enqueueCosts enqueues m and checks the requests it sent before waiting.
func (r *rotation) enqueueCosts(m *member, want int64, why string) {
	r.t.Helper()
	r.enqueue(m)
	r.spentIs(m, want, why)
}

// spentIs checks the requests m has sent since it last started to acquire.
func (r *rotation) spentIs(m *member, want int64, why string) {
	r.t.Helper()
	if got := r.spent(m); got != want {
		r.t.Fatalf("sent %d requests since acquiring, want %d (%s)", got, want, why)
	}
}

// guessingThree sets up a rotation of a, b, c that has turned six times:
// a holds the lock, b waits behind it, and c, on its third wait, has
// guessed b's node.
func guessingThree(t *testing.T) (r *rotation, a, b, c *member) {
	r = newRotation(t)
	a, b, c = r.member(), r.member(), r.member()
	r.start(a)
	r.enqueue(b)
	r.enqueue(c)
	r.rotate(6, a, b, c)
	r.spentIs(c, 2, "create, watch on the guessed node")
	return r, a, b, c
}

// rotate makes steps turns, the lock going round ms in order from ms[0],
// which holds it.
func (r *rotation) rotate(steps int, ms ...*member) {
	r.t.Helper()
	for i := range steps {
		r.turn(ms[i%len(ms)], ms[(i+1)%len(ms)])
	}
}

// sessionOf is the session a herald node's name carries.
func sessionOf(p string) int64 {
	info, _ := elect.ParseName(p[strings.LastIndexByte(p, '/')+1:])
	return info.Session
}

// waits reports that m is still waiting.
func (r *rotation) waits(m *member) {
	r.t.Helper()
	select {
	case h, ok := <-m.got:
		if ok {
			r.t.Fatalf("took the lock (%s) while it is held", h.Node())
		}
		r.t.Fatal("acquire failed")
	default:
	}
}

// watching is the path s holds a watch on in the group ("" for none; the
// test fails on more than one).
func (r *rotation) watching(s *elect.Session) string {
	r.t.Helper()
	out, err := r.cluster.Member(0).FourLetter(r.ctx, "wchc")
	if err != nil {
		r.t.Fatal(err)
	}
	var paths []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "0x"):
			in = strings.EqualFold(line, fmt.Sprintf("0x%x", s.ID()))
		case in && strings.HasPrefix(strings.TrimSpace(line), r.path+"/"):
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	if len(paths) > 1 {
		r.t.Fatalf("session 0x%x watches %v; want one node at most", s.ID(), paths)
	}
	if len(paths) == 0 {
		return ""
	}
	return paths[0]
}

// watchedMissing lists the paths under the group that the server holds a
// watch on but that do not exist: a watch that can only fire if a node of
// that name is created again, which a sequential name never is.
func (r *rotation) watchedMissing() []string {
	r.t.Helper()
	out, err := r.cluster.Member(0).FourLetter(r.ctx, "wchp")
	if err != nil {
		r.t.Fatal(err)
	}
	var missing []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, r.path+"/") {
			continue
		}
		ok, _, err := r.look.Conn().Exists(line)
		if err != nil {
			r.t.Fatal(err)
		}
		if !ok {
			missing = append(missing, line)
		}
	}
	return missing
}

// noneMissing fails if a watch was left on a node that no longer exists.
func (r *rotation) noneMissing() {
	r.t.Helper()
	if m := r.watchedMissing(); len(m) > 0 {
		r.t.Fatalf("watches left on missing nodes: %v", m)
	}
}

// Three clients taking a lock in turn: after two listings a waiter knows
// its predecessor's next name and watches it without listing first. That
// predecessor is itself waiting when the waiter queues, so its deletion
// proves nothing about the nodes below it: the waiter lists then, and owns
// only when the listing shows it lowest. A cycle costs six requests when
// it lists first (create, listing, watch, listing, watch on its own node,
// release) and five when it guesses.
func TestRotationWatchesPredecessorWithoutListing(t *testing.T) {
	r := newRotation(t)
	a, b, c := r.member(), r.member(), r.member()
	r.start(a)
	r.enqueue(b)
	r.enqueue(c)
	for i := range 12 {
		ms := []*member{a, b, c}
		r.turn(ms[i%3], ms[(i+1)%3])
		r.waits(ms[(i+2)%3])
	}
	// c's first release also reads the group node once, to see that the
	// data on it is herald's mark before writing the release there.
	if want := []int64{7, 6, 5, 5}; !slices.Equal(c.costs, want) {
		t.Fatalf("c's requests per cycle %v, want %v (the first two list, then c guesses)", c.costs, want)
	}
	r.handOver(a, b)
	r.release(b)
	r.noneMissing()
}

// In a rotation of three, the guessed predecessor is itself waiting. When
// it gives up (its node goes without the release mark), the waiter does not
// take the lock: it lists and waits behind the holder.
func TestGuessedWaiterGivingUpDoesNotHandOver(t *testing.T) {
	r, a, b, c := guessingThree(t)
	b.cancel()
	if _, ok := <-b.got; ok {
		t.Fatal("b took the lock after giving up")
	}
	eventually(t, 5*time.Second, "c watching the holder", func() bool { return r.watching(c.s) == a.h.NodePath() })
	r.spentIs(c, 4, "create, guessed watch, listing, watch on the holder")
	r.waits(c)
	if !a.h.Held() {
		t.Fatalf("a lost the lock: %v", a.h.Err())
	}
	r.release(a)
	r.take(c)
	r.release(c)
	r.noneMissing()
}

// When the rotation breaks (another client queued in between), the guess
// misses: one request more, no watch left on the missing name, and the
// waiter lists and waits behind its real predecessor.
func TestWrongGuessFallsBackToListing(t *testing.T) {
	r := newRotation(t)
	a, b, d := r.member(), r.member(), r.member()
	r.start(a)
	r.enqueue(b)
	r.rotate(3, a, b)
	// b would guess a's next node, but d queues in between.
	r.release(b)
	r.take(a)
	r.enqueue(d)
	r.enqueue(b)
	if w := r.watching(b.s); w == "" || sessionOf(w) != d.s.ID() {
		t.Fatalf("b watches %q, want d's node", w)
	}
	r.spentIs(b, 4, "create, missed guess, listing, watch")
	r.noneMissing()
	r.release(a)
	r.take(d)
	r.waits(b)
	r.release(d)
	r.take(b)
	r.release(b)
	r.noneMissing()
}

// swapped sets up a rotation of a, b, c in which c guesses, then makes c
// and b swap places, as two clients racing to queue again do: c's guess
// misses and it lists. It returns with a holding the lock and c, then b,
// waiting: the rotation is now a, c, b.
func swapped(t *testing.T) (r *rotation, a, b, c *member) {
	r, a, b, c = guessingThree(t)
	r.turn(a, b)
	// b holds; it queues again only after c has.
	r.handOver(b, c)
	r.handOver(c, a)
	r.enqueueCosts(c, 4, "create, missed guess, listing, watch")
	r.enqueue(b)
	return r, a, b, c
}

// After the swap, c's next wait guesses from the one predecessor its
// listing showed, and hits: the rotation stays cheap.
func TestSwappedRotationKeepsGuessing(t *testing.T) {
	r, a, b, c := swapped(t)
	r.turn(a, c)
	r.handOver(c, b)
	r.enqueueCosts(c, 2, "create, watch on the guessed node")
	r.handOver(b, a)
	r.handOver(a, c)
	r.release(c)
	r.noneMissing()
}

// A guess made on one predecessor alone that misses ends the trust: the
// next wait lists, until two waits agree again.
func TestMissOnTrustAloneStopsGuessing(t *testing.T) {
	r, a, b, c := swapped(t)
	r.handOver(a, c)
	r.handOver(c, b)
	r.enqueueCosts(c, 4, "create, guess from one predecessor missed, listing, watch")
	r.enqueue(a)
	r.turn(b, c)
	r.handOver(c, a)
	r.enqueueCosts(c, 3, "create, listing, watch: no guess")
	r.handOver(a, b)
	r.handOver(b, c)
	r.release(c)
	r.noneMissing()
}

// A waiter that may not read the node it waits behind would never be woken
// (ZooKeeper sends watch events only to sessions that may read the node):
// it fails at once with an error that says so, and removes its node.
func TestUnreadablePredecessorIsAnError(t *testing.T) {
	r := newRotation(t)
	// Each participant may read only its own nodes.
	digest := func(user string) elect.Option {
		return elect.WithACL(append(zk.DigestACL(zk.PermAll, user, "pw"), zk.ACL{Perms: zk.PermAll &^ zk.PermRead, Scheme: "world", ID: "anyone"}))
	}
	a, b := r.member(digest("a")), r.member(digest("b"))
	for u, m := range map[string]*member{"a": a, "b": b} {
		if err := m.s.Conn().AddAuth("digest", []byte(u+":pw")); err != nil {
			t.Fatal(err)
		}
	}
	r.start(a)
	_, err := b.l.Acquire(r.ctx)
	if err == nil || !strings.Contains(err.Error(), "grant READ") || !strings.Contains(err.Error(), a.h.NodePath()) {
		t.Fatalf("acquire behind an unreadable node: %v; want an error naming the node and READ", err)
	}
	eventually(t, 5*time.Second, "the refused waiter's node removed", func() bool { return r.nodes() == 1 })
	r.release(a)
	r.noneMissing()
}

func TestACLWithoutReadIsRefused(t *testing.T) {
	s := session(t, sharedAddrs(t))
	_, err := elect.NewLock(s, groupPath(t), elect.WithACL([]zk.ACL{{Perms: zk.PermAll &^ zk.PermRead, Scheme: "world", ID: "anyone"}}))
	if err == nil || !strings.Contains(err.Error(), "grant READ") {
		t.Fatalf("NewLock with an ACL nobody may read: %v; want an error that asks for READ", err)
	}
}

// A holder whose node someone else writes and then deletes loses the lock,
// and its watch on its own node leaves nothing behind on the missing name.
func TestOwnNodeWrittenThenDeletedLeavesNoWatch(t *testing.T) {
	r := newRotation(t)
	a := r.member()
	r.start(a)
	p := a.h.NodePath()
	// Written first, the node fires the holder's watch as a data change;
	// deleted before the holder can watch it again.
	if _, err := r.look.Conn().Multi(
		&zk.SetDataRequest{Path: p, Data: []byte("someone else"), Version: -1},
		&zk.DeleteRequest{Path: p, Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.h.Done():
	case <-r.ctx.Done():
		t.Fatal("the holder never learned its node was gone")
	}
	if a.h.Reason() != elect.ReasonDeleted {
		t.Fatalf("reason %q, want %q", a.h.Reason(), elect.ReasonDeleted)
	}
	r.noneMissing()
}
