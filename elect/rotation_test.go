package elect_test

import (
	"context"
	"fmt"
	"path"
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
	elect.NoLeaderSyncs(s) // counted
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
	return requestsSent(r.ctx, r.t, r.cluster.Member(0), s)
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
// below its own and, when there is one, the node two below.
func (r *rotation) enqueue(m *member) {
	r.t.Helper()
	r.acquire(m)
	r.settled(m)
}

// settled waits until m watches the node just below its own and, in a
// queue deeper than two, the node two below: the watches a waiter holds
// right after it queued.
func (r *rotation) settled(m *member) {
	r.t.Helper()
	eventually(r.t, 5*time.Second, "the waiter's watches", func() bool {
		want, ok := r.below(m, 2)
		slices.Sort(want)
		return ok && slices.Equal(r.watching(m.s), want)
	})
}

// below lists up to n paths of the nodes just below m's own, lowest
// first; false while m has no node in the group.
func (r *rotation) below(m *member, n int) ([]string, bool) {
	r.t.Helper()
	children, _, err := r.look.Conn().Children(r.path)
	if err != nil {
		return nil, false
	}
	type node struct {
		seq  int32
		path string
	}
	var nodes []node
	for _, c := range children {
		if seq, ok := elect.ParseSequence(c); ok {
			nodes = append(nodes, node{seq, r.path + "/" + c})
		}
	}
	slices.SortFunc(nodes, func(a, b node) int { return int(a.seq) - int(b.seq) })
	idx := slices.IndexFunc(nodes, func(x node) bool { return sessionOf(x.path) == m.s.ID() })
	if idx < 0 {
		return nil, false
	}
	var out []string
	for _, x := range nodes[max(0, idx-n):idx] {
		out = append(out, x.path)
	}
	return out, true
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

// guessing sets up a rotation of n clients that has turned 2n times: the
// first holds the lock, the others wait in order, and the last, on its
// third wait, has guessed the two nodes below its own.
func guessing(t *testing.T, n int) (*rotation, []*member) {
	r := newRotation(t)
	ms := make([]*member, n)
	for i := range ms {
		ms[i] = r.member()
	}
	r.start(ms[0])
	for _, m := range ms[1:] {
		r.enqueue(m)
	}
	r.rotate(2*n, ms...)
	r.spentIs(ms[n-1], 4, "create, the watch on its own node, watches on the two guessed nodes")
	return r, ms
}

// guessingThree is guessing with three clients: a holds, b waits behind
// it, and c has guessed b's node and a's.
func guessingThree(t *testing.T) (r *rotation, a, b, c *member) {
	r, ms := guessing(t, 3)
	return r, ms[0], ms[1], ms[2]
}

// spends waits until m has sent want requests since it last started to
// acquire: a waiter woken by a deletion lists in its own time.
func (r *rotation) spends(m *member, want int64, why string) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := r.spent(m)
		if got == want {
			return
		}
		if got > want || time.Now().After(deadline) {
			r.t.Fatalf("sent %d requests since acquiring, want %d (%s)", got, want, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nodeOf is the path of m's node, which m waits with.
func (r *rotation) nodeOf(m *member) string {
	r.t.Helper()
	var p string
	eventually(r.t, 5*time.Second, "the waiter's node", func() bool {
		children, _, err := r.look.Conn().Children(r.path)
		if err != nil {
			return false
		}
		for _, c := range children {
			if sessionOf(c) == m.s.ID() {
				p = r.path + "/" + c
				return true
			}
		}
		return false
	})
	return p
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

// watching lists the paths in the group that s holds a watch on,
// sorted.
func (r *rotation) watching(s *elect.Session) []string {
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
		case in && strings.HasPrefix(strings.TrimSpace(line), r.path+"/") && sessionOf(strings.TrimSpace(line)) != s.ID():
			// Its watch on its own node (a waiter's from its first wait,
			// then its handle's) is left out: these are the watches on
			// the nodes it waits behind.
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	slices.Sort(paths)
	return paths
}

// watchesOnly waits until m watches exactly the nodes at the paths want,
// and fails if it never does.
func (r *rotation) watchesOnly(m *member, want ...string) {
	r.t.Helper()
	slices.Sort(want)
	eventually(r.t, 5*time.Second, fmt.Sprintf("watches on %v", want), func() bool { return slices.Equal(r.watching(m.s), want) })
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

// Three clients taking a lock in turn: each waiter watches the node just
// below its own and the one two below. The node two below is the holder
// when the waiter queues; when it goes, the waiter lists while the node
// just below owns, finds that node alone below it, and owns the moment
// it is deleted. After two listings a waiter knows both nodes' next
// names and watches them without listing first. A cycle costs seven
// requests when it lists first (create, listing, two watches, the
// listing after the holder went, watch on its own node, release) and six
// when it guesses. c's first release also reads the group node once, to
// see that the data on it is herald's mark before writing the release
// there.
func TestRotationWatchesTwoBelowWithoutListing(t *testing.T) {
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
	if want := []int64{8, 7, 6, 6}; !slices.Equal(c.costs, want) {
		t.Fatalf("c's requests per cycle %v, want %v (the first two list, then c guesses)", c.costs, want)
	}
	r.handOver(a, b)
	r.release(b)
	r.noneMissing()
}

// The proof is ready before the release: once the holder's node (two
// below) is gone, the waiter has listed and watches only the new holder,
// and it owns on that holder's release without another request.
func TestNextInLineProvesBeforeTheRelease(t *testing.T) {
	r, a, b, c := guessingThree(t)
	r.handOver(a, b)
	r.spends(c, 5, "create, the watch on its own node, two guessed watches, the listing after a went")
	r.watchesOnly(c, b.h.NodePath())
	r.waits(c)
	r.release(b)
	r.take(c)
	r.spentIs(c, 5, "no request between b's release and c owning, nor after: the handle keeps the watch on its own node")
	r.release(c)
	r.noneMissing()
}

// In a rotation of three, the guessed node just below is itself waiting.
// When it gives up while the holder, two below, still holds, the waiter
// does not take the lock: it lists, finds the holder alone below it, and
// waits on the watch it already holds on the holder's node.
func TestGuessedWaiterGivingUpDoesNotHandOver(t *testing.T) {
	r, a, b, c := guessingThree(t)
	b.cancel()
	if _, ok := <-b.got; ok {
		t.Fatal("b took the lock after giving up")
	}
	r.spends(c, 5, "create, own watch, two guessed watches, listing; the watch on a is kept")
	r.watchesOnly(c, a.h.NodePath())
	r.waits(c)
	if !a.h.Held() {
		t.Fatalf("a lost the lock: %v", a.h.Err())
	}
	r.release(a)
	r.take(c)
	r.release(c)
	r.noneMissing()
}

// In a rotation of four, the guessed node two below is a waiter. When it
// gives up, its deletion proves nothing: the waiter lists, keeps its watch
// on the node just below and watches the holder, now two below.
func TestGuessedTwoBelowGivingUp(t *testing.T) {
	r, ms := guessing(t, 4)
	a, b, c, d := ms[0], ms[1], ms[2], ms[3]
	cNode := r.nodeOf(c)
	b.cancel()
	if _, ok := <-b.got; ok {
		t.Fatal("b took the lock after giving up")
	}
	r.spends(d, 6, "create, own watch, two guessed watches, listing, watch on the holder")
	r.watchesOnly(d, cNode, a.h.NodePath())
	r.waits(c)
	r.waits(d)
	r.release(a)
	r.take(c)
	r.spends(d, 7, "the listing after a went, which shows c alone below")
	r.waits(d)
	r.release(c)
	r.take(d)
	r.release(d)
	r.noneMissing()
}

// Both guessed nodes go at once, while the holder below them holds. The
// waiter lists on whichever event it reads first; the other one, on a
// node the listing no longer shows, is stale and must not move it: it
// waits behind the holder alone.
func TestStaleWatchAfterListingIsIgnored(t *testing.T) {
	r, ms := guessing(t, 4)
	a, b, c, d := ms[0], ms[1], ms[2], ms[3]
	if _, err := r.look.Conn().Multi(
		&zk.DeleteRequest{Path: r.nodeOf(b), Version: -1},
		&zk.DeleteRequest{Path: r.nodeOf(c), Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	b.cancel()
	c.cancel()
	for _, m := range []*member{b, c} {
		if _, ok := <-m.got; ok {
			t.Fatal("a waiter whose node was deleted took the lock")
		}
	}
	r.spends(d, 6, "create, own watch, two guessed watches, one listing, watch on the holder")
	r.watchesOnly(d, a.h.NodePath())
	time.Sleep(100 * time.Millisecond) // give a stale event the time to do harm
	r.waits(d)
	r.spentIs(d, 6, "nothing after the stale event")
	r.release(a)
	r.take(d)
	r.release(d)
	r.noneMissing()
}

// Someone writing a queue node releases nothing: a data change on the node
// just below or two below only makes the waiter set that watch again.
func TestWritesToWatchedNodesAreNoRelease(t *testing.T) {
	r, a, b, c := guessingThree(t)
	write := func(p string) {
		t.Helper()
		if _, err := r.look.Conn().Set(p, []byte("someone else"), -1); err != nil {
			t.Fatal(err)
		}
	}
	write(a.h.NodePath()) // two below c, the holder
	r.spends(c, 5, "create, own watch, two guessed watches, the watch on a set again")
	write(r.nodeOf(b)) // just below c, a waiter
	r.spends(c, 6, "the watch on b set again")
	r.watchesOnly(c, a.h.NodePath(), r.nodeOf(b))
	r.waits(b)
	r.waits(c)
	r.handOver(a, b)
	r.spends(c, 7, "the listing after a went")
	write(b.h.NodePath()) // just below c and alone: c's proof once deleted
	r.spends(c, 8, "the watch on b set again")
	r.watchesOnly(c, b.h.NodePath())
	r.waits(c)
	r.release(b)
	r.take(c)
	r.release(c)
	r.noneMissing()
}

// When the rotation breaks (another client queued in between), the guess
// of the node just below misses: two requests more (the guess two below
// went out with it), no watch left on the missing name; the waiter lists
// and watches its real two predecessors.
func TestWrongGuessFallsBackToListing(t *testing.T) {
	r, a, b, c := guessingThree(t)
	r.turn(a, b)
	// c holds; d queues before b does.
	d := r.member()
	r.handOver(b, c)
	r.enqueue(d)
	r.enqueue(b)
	r.spentIs(b, 7, "create, own watch and both guesses at once (the one below missed), listing, two watches")
	r.watchesOnly(b, r.nodeOf(a), r.nodeOf(d))
	r.noneMissing()
	r.release(c)
	r.take(a)
	r.release(a)
	r.take(d)
	r.waits(b)
	r.release(d)
	r.take(b)
	r.release(b)
	r.noneMissing()
}

// When only the node two below changed (another client took the place of
// the one that queued there before), the guess two below misses: one
// request more and no watch on the missing name. The waiter lists, keeps
// the watch on the node just below and watches the real node two below.
func TestMissedGuessTwoBelowKeepsWatchBelow(t *testing.T) {
	r, a, b, c := guessingThree(t)
	// a and b leave without queueing again; d queues, then a, then b.
	d := r.member()
	r.handOver(a, b)
	r.handOver(b, c)
	r.enqueue(d)
	r.enqueue(a)
	r.enqueue(b)
	r.spentIs(b, 6, "create, own watch and both guesses at once (the one two below missed), listing, watch two below")
	r.watchesOnly(b, r.nodeOf(a), r.nodeOf(d))
	r.noneMissing()
	r.release(c)
	r.take(d)
	r.release(d)
	r.take(a)
	r.waits(b)
	r.release(a)
	r.take(b)
	r.release(b)
	r.noneMissing()
}

// swapped sets up a rotation of a, b, c in which c guesses, then makes c
// and b swap places, as two clients racing to queue again do: c's guess
// misses and it lists, and so does b's. It returns with a holding the
// lock and c, then b, waiting: the rotation is now a, c, b.
func swapped(t *testing.T) (r *rotation, a, b, c *member) {
	r, a, b, c = guessingThree(t)
	r.turn(a, b)
	// b holds; it queues again only after c has.
	r.handOver(b, c)
	r.handOver(c, a)
	r.enqueueCosts(c, 6, "create, own watch and both guesses at once (the one below missed), listing, watch")
	r.enqueueCosts(b, 7, "create, own watch and both guesses at once (the one below missed), listing, two watches")
	return r, a, b, c
}

// After the swap the rotation stays trusted: a wait whose listing showed
// both nodes below guesses from them at once and hits. c's wait after its
// miss was behind one node only, so its next wait lists first.
func TestSwappedRotationKeepsGuessing(t *testing.T) {
	r, a, b, c := swapped(t)
	r.turn(a, c)
	r.handOver(c, b)
	r.enqueueCosts(c, 5, "create, listing, own watch, two watches: its last wait saw one node below")
	r.handOver(b, a)
	r.enqueueCosts(b, 4, "create, own watch, watches on the two guessed nodes, on trust")
	r.handOver(a, c)
	r.handOver(c, b)
	r.release(b)
	r.noneMissing()
}

// A guess made on trust alone that misses ends the trust: the next wait
// lists, until two waits agree again.
func TestMissOnTrustAloneStopsGuessing(t *testing.T) {
	r, a, b, c := swapped(t)
	r.handOver(a, c)
	r.handOver(c, b)
	r.enqueue(c)
	r.enqueue(a)
	r.handOver(b, c)
	// Now c, a: b guesses on trust c's next node just below, but a's is.
	r.enqueueCosts(b, 7, "create, own watch and both guesses on trust alone at once (missed), listing, two watches")
	r.turn(c, a)
	r.turn(a, b)
	r.handOver(b, c)
	r.enqueueCosts(b, 5, "create, listing, own watch, two watches: no guess, the trust ended")
	r.turn(c, a)
	r.turn(a, b)
	r.handOver(b, c)
	r.enqueueCosts(b, 4, "create, own watch, watches on the two guessed nodes: two waits agree again")
	r.handOver(c, a)
	r.handOver(a, b)
	r.release(b)
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

// A group whose ACL lets a participant create and delete its node but not
// list the group: the waiter, the one-shot read and the single-node read
// say which node refused what, and the waiter's node is removed.
func TestUnlistableGroupIsAnError(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	addrs := sharedAddrs(t)
	group := groupPath(t)
	admin, s := session(t, addrs), session(t, addrs)
	if err := admin.Conn().AddAuth("digest", []byte("admin:pw")); err != nil {
		t.Fatal(err)
	}
	makeGroup(t, admin.Conn(), path.Dir(group))
	acl := append(zk.DigestACL(zk.PermAll, "admin", "pw"), zk.ACL{Perms: zk.PermCreate | zk.PermDelete, Scheme: "world", ID: "anyone"})
	if _, err := admin.Conn().Create(group, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	l, err := elect.NewLock(s, group)
	if err != nil {
		t.Fatal(err)
	}
	want := "may not list " + group
	if _, err := l.Acquire(ctx); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "READ") {
		t.Fatalf("acquire in a group it may not list: %v; want %q and READ", err, want)
	}
	eventually(t, 5*time.Second, "the refused waiter's node removed", func() bool {
		c, _, err := admin.Conn().Children(group)
		return err == nil && len(c) == 0
	})
	if _, err := elect.ReadGroup(ctx, s, group); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ReadGroup of a group it may not list: %v; want %q", err, want)
	}
	if _, err := elect.ReadSingle(ctx, s, group, elect.SingleNodeFor(group)); err == nil || !strings.Contains(err.Error(), "may not read "+group) {
		t.Fatalf("ReadSingle of a node it may not read: %v; want it named", err)
	}
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
