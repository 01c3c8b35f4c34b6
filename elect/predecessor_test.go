package elect_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestPredecessorDeletedBeforeTheFirstLook: the owner's node is deleted
// by hand after the next candidate's node was made but before its first
// listing, which then shows it lowest with no owner before it. Its
// command would have started at once, beside the deposed owner's, which
// its runner stops only within a sixth of the session timeout of hearing
// of the deletion: PredecessorReleased said true, as for a group with
// nobody before. It says false now, unless the change was a release.
//
// With ProveSessionEnd (see sessionProofCases) the office, made with the
// group's first herald node, takes a sequence number too: the first
// node's is then 1, not 0.
func TestPredecessorDeletedBeforeTheFirstLook(t *testing.T) {
	for _, v := range sessionProofCases {
		t.Run(v.name, func(t *testing.T) { predecessorDeletedBeforeTheFirstLook(t, v.first, v.next) })
	}
}

// sessionProofCases: the options of the candidates before ours (first)
// and ours (next): none; ProveSessionEnd for all; for ours alone, whose
// node then comes right after the office it made.
var sessionProofCases = []struct {
	name        string
	first, next []elect.Option
}{
	{"plain", nil, nil},
	{"session nodes", []elect.Option{elect.ProveSessionEnd()}, []elect.Option{elect.ProveSessionEnd()}},
	{"our session node alone", nil, []elect.Option{elect.ProveSessionEnd()}},
}

func predecessorDeletedBeforeTheFirstLook(t *testing.T, first, next []elect.Option) {
	addrs := sharedAddrs(t)
	for _, tc := range []struct {
		name     string
		released bool
	}{{"deleted by hand", false}, {"resigned", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupPath(t)
			s1, s2 := session(t, addrs), session(t, addrs)
			e1, err := elect.NewElection(s1, g, append([]elect.Option{elect.CreateParents()}, first...)...)
			if err != nil {
				t.Fatal(err)
			}
			h1, err := e1.Campaign(ctxT(t, 10*time.Second), "first")
			if err != nil {
				t.Fatal(err)
			}
			e2, err := elect.NewElection(s2, g, append([]elect.Option{elect.OnQueued(func(string) {
				if tc.released {
					if err := h1.Resign(ctxT(t, 10*time.Second)); err != nil {
						t.Error(err)
					}
					return
				}
				if err := s2.Conn().Delete(h1.NodePath(), -1); err != nil {
					t.Error(err)
				}
			})}, next...)...)
			if err != nil {
				t.Fatal(err)
			}
			h2, err := e2.Campaign(ctxT(t, 10*time.Second), "second")
			if err != nil {
				t.Fatal(err)
			}
			got, err := h2.PredecessorReleased(ctxT(t, 10*time.Second))
			if err != nil || got != tc.released {
				t.Errorf("PredecessorReleased = %v, %v; want %v", got, err, tc.released)
			}
		})
	}
	// The first candidate of a new group had nobody before it.
	g := groupPath(t)
	e, err := elect.NewElection(session(t, addrs), g, append([]elect.Option{elect.CreateParents()}, next...)...)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctxT(t, 10*time.Second), "alone")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || !got {
		t.Errorf("the first owner of a new group: PredecessorReleased = %v, %v; want true", got, err)
	}
}

// TestOwnerDeletedBeforeOurNodeWasMade: with no node in the group but
// ours, PredecessorReleased took "nobody before us" for granted. An owner
// deleted by hand just before our node was made left no trace in our
// listing, so a runner started its command beside the deposed one's. It
// is false now unless the group's history proves that nobody owned between
// the last recorded release and our node.
func TestOwnerDeletedBeforeOurNodeWasMade(t *testing.T) {
	for _, v := range sessionProofCases {
		t.Run(v.name, func(t *testing.T) { ownerDeletedBeforeOurNodeWasMade(t, v.first, v.next) })
	}
}

func ownerDeletedBeforeOurNodeWasMade(t *testing.T, first, next []elect.Option) {
	addrs := sharedAddrs(t)
	campaignWith := func(g, id string, opts []elect.Option) *elect.Handle {
		t.Helper()
		return campaignedIn(t, session(t, addrs), g, id, append([]elect.Option{elect.CreateParents()}, opts...)...)
	}
	campaign := func(g, id string) *elect.Handle { return campaignWith(g, id, first) }
	resign := func(h *elect.Handle) {
		t.Helper()
		if err := h.Resign(ctxT(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// campaignBehind queues candidate id behind the owner of g, and
	// returns a wait for it to own.
	campaignBehind := func(g, id string) func() *elect.Handle {
		t.Helper()
		e, err := elect.NewElection(session(t, addrs), g, first...)
		if err != nil {
			t.Fatal(err)
		}
		type res struct {
			h   *elect.Handle
			err error
		}
		got := make(chan res, 1)
		go func() {
			h, err := e.Campaign(ctxT(t, 10*time.Second), id)
			got <- res{h, err}
		}()
		if err := waitChildren(t, g, 2); err != nil {
			t.Fatal(err)
		}
		return func() *elect.Handle {
			r := <-got
			if r.err != nil {
				t.Fatalf("%s never owned: %v", id, r.err)
			}
			return r.h
		}
	}
	giveUp := func(g string, opts []elect.Option, left int) {
		t.Helper()
		e, err := elect.NewElection(session(t, addrs), g, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := e.Campaign(ctxT(t, 300*time.Millisecond), "quitter"); err == nil {
			t.Fatalf("the quitter owned %s beside its owner", h.NodePath())
		}
		if err := waitChildren(t, g, left); err != nil { // its node gone, the others' left
			t.Fatal(err)
		}
		// The note follows the deletion.
		look := session(t, addrs).Conn()
		eventually(t, 10*time.Second, "the group node to note the quitter's withdrawal", func() bool {
			b, _, err := look.Get(g)
			if err != nil {
				t.Fatal(err)
			}
			return strings.Contains(string(b), `"withdrawn"`)
		})
	}
	for _, tc := range []struct {
		name     string
		before   func(g string)
		released bool
	}{
		{"owner deleted by hand", func(g string) {
			h := campaign(g, "first")
			if err := session(t, addrs).Conn().Delete(h.NodePath(), -1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"owner deleted by hand after a release", func(g string) {
			resign(campaign(g, "first"))
			h := campaign(g, "second")
			if err := session(t, addrs).Conn().Delete(h.NodePath(), -1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"owner resigned", func(g string) { resign(campaign(g, "first")) }, true},
		// A waiter that gave up while the owner held, its node made and
		// gone between the release and ours: it never owned, and it
		// says so on the group node. Before, it cost the next copy the
		// wait kept for an owner deleted by hand.
		{"a waiter gave up while the owner held, then the owner resigned", func(g string) {
			h := campaign(g, "first")
			giveUp(g, first, 1)
			resign(h)
		}, true},
		{"a waiter gave up, then the owner after the release was deleted by hand", func(g string) {
			h := campaign(g, "first")
			giveUp(g, first, 1)
			resign(h)
			h2 := campaign(g, "second")
			if err := session(t, addrs).Conn().Delete(h2.NodePath(), -1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a waiter gave up behind an owner later deleted by hand", func(g string) {
			h := campaign(g, "first")
			second := campaignBehind(g, "second")
			giveUp(g, first, 2) // the last node made before the next one's
			resign(h)
			if err := session(t, addrs).Conn().Delete(second().NodePath(), -1); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"two owners in turn, both resigned", func(g string) {
			h1 := campaign(g, "first")
			second := campaignBehind(g, "second")
			resign(h1)
			resign(second())
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupPath(t)
			tc.before(g)
			h := campaignWith(g, "next", next)
			if p := h.Predecessor(); p != "" {
				t.Fatalf("the next candidate saw %q before it; want nobody", p)
			}
			got, err := h.PredecessorReleased(ctxT(t, 10*time.Second))
			if err != nil || got != tc.released {
				t.Errorf("PredecessorReleased = %v, %v; want %v", got, err, tc.released)
			}
		})
	}
}

// waitChildren waits until g has n children besides herald's office and
// checkpoint.
func waitChildren(t *testing.T, g string, n int) error {
	t.Helper()
	c := session(t, sharedAddrs(t)).Conn()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ch, _, err := c.Children(g)
		ch = slices.DeleteFunc(ch, func(c string) bool { return c == elect.OfficeNode || c == elect.CheckpointNode })
		if err == nil && len(ch) == n {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s never had %d children", g, n)
}

// TestLaterOfTwoGoneIsThePredecessor: three candidates; the first's
// release is recorded and the second's node deleted by hand in one
// transaction, so the third's next listing shows it lowest with both
// gone. The second may have owned between them, and its command, with no
// release on record, may still run. Predecessor was the owner the third
// last saw, the first, whose release is on record, so PredecessorReleased
// said true, and a runner would have started at once. It is now the node
// that was just below ours, the last that can have owned, which went
// without a release.
func TestLaterOfTwoGoneIsThePredecessor(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	look := session(t, addrs)
	campaign := func(id string) <-chan *elect.Handle {
		e, err := elect.NewElection(session(t, addrs), g, elect.CreateParents())
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *elect.Handle, 1)
		go func() {
			h, err := e.Campaign(ctxT(t, 30*time.Second), id)
			if err != nil {
				close(got)
				return
			}
			got <- h
		}()
		return got
	}
	// queued waits until n candidates are in line and returns their
	// nodes, lowest first.
	queued := func(n int) []string {
		t.Helper()
		if err := waitChildren(t, g, n); err != nil {
			t.Fatal(err)
		}
		nodes, _, err := look.Conn().Children(g)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(nodes, func(a, b string) int {
			x, _ := elect.ParseSequence(a)
			y, _ := elect.ParseSequence(b)
			return int(x - y)
		})
		return nodes
	}
	first := <-campaign("first")
	if first == nil {
		t.Fatal("the first candidate did not lead")
	}
	_ = campaign("second")
	queued(2)
	third := campaign("third")
	nodes := queued(3)
	mark := fmt.Sprintf(`{"herald":1,"recipe":"election","released":{"node":%q,"id":"first","reason":"resigned"}}`, nodes[0])
	if _, err := look.Conn().Multi(
		&zk.SetDataRequest{Path: g, Data: []byte(mark), Version: -1},
		&zk.DeleteRequest{Path: g + "/" + nodes[0], Version: -1},
		&zk.DeleteRequest{Path: g + "/" + nodes[1], Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	h := <-third
	if h == nil {
		t.Fatal("the third candidate did not lead")
	}
	if got := h.Predecessor(); got != nodes[1] {
		t.Errorf("Predecessor = %q, want the second's node %q (the first's is %q)", got, nodes[1], nodes[0])
	}
	if got, err := h.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || got {
		t.Errorf("PredecessorReleased = %v, %v; want false: the second's node went without a release", got, err)
	}
	if since := h.PredecessorLowestSince(); !since.IsZero() {
		t.Errorf("PredecessorLowestSince = %v; want zero: the third never saw the second lowest", since)
	}
}

// TestPredecessorVouched: a release vouches for the owners before its
// owner only when that owner called Vouch (it waited for them, as herald
// run and herald lock do). A library owner's release without it, a
// foreign client's after an owner that left no record, and a release that
// vouches, are each read through the group node's mark, an election's
// office (the group node holding someone else's data), and the owner's
// session node (a lock whose group node holds someone else's data).
// Each lock's first owner only makes the group, and its own node goes by
// hand, so that the owner under test is not the group's first.
func TestPredecessorVouched(t *testing.T) {
	addrs := sharedAddrs(t)
	for _, where := range []string{"mark", "office", "session node"} {
		for _, vouch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s vouch=%v", where, vouch), func(t *testing.T) {
				g := groupPath(t)
				opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}
				join := func(s *elect.Session) (*elect.Handle, error) {
					if where == "office" {
						e, _ := elect.NewElection(s, g, opts...)
						return e.Campaign(ctxT(t, 10*time.Second), "x")
					}
					l, _ := elect.NewLock(s, g, opts...)
					return l.Acquire(ctxT(t, 10*time.Second))
				}
				s0, s1, s2 := session(t, addrs), session(t, addrs), session(t, addrs)
				h0, err := join(s0)
				if err != nil {
					t.Fatal(err)
				}
				if where != "mark" {
					if _, err := s0.Conn().Set(g, []byte("someone else's"), -1); err != nil {
						t.Fatal(err)
					}
				}
				got1 := make(chan *elect.Handle, 1)
				go func() { h, _ := join(s1); got1 <- h }()
				queuedBehind(t, s0, g, 2)
				if err := s0.Conn().Delete(h0.NodePath(), -1); err != nil {
					t.Fatal(err)
				}
				h1 := <-got1
				if h1 == nil {
					t.Fatal("the second owner never owned")
				}
				if vouch {
					h1.Vouch()
				}
				got2 := make(chan *elect.Handle, 1)
				go func() { h, _ := join(s2); got2 <- h }()
				queuedBehind(t, s0, g, 2)
				if err := h1.Release(ctxT(t, 10*time.Second)); err != nil {
					t.Fatal(err)
				}
				h2 := <-got2
				if h2 == nil {
					t.Fatal("the third owner never owned")
				}
				released, err := h2.PredecessorReleased(ctxT(t, 10*time.Second))
				if err != nil || !released {
					t.Fatalf("PredecessorReleased = %v, %v; want true (a release on record)", released, err)
				}
				if got := h2.PredecessorVouched(); got != vouch {
					t.Errorf("PredecessorVouched = %v after a release by an owner that vouched: %v", got, vouch)
				}
			})
		}
	}
	// A foreign client between: it vouches only where the mark accounts
	// for every node before it.
	t.Run("foreign", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			firstGone func(c *zk.Conn, h *elect.Handle) error
			vouched   bool
		}{
			{"after a release that vouches", func(_ *zk.Conn, h *elect.Handle) error {
				h.Vouch()
				return h.Release(ctxT(t, 10*time.Second))
			}, true},
			{"after a release that does not", func(_ *zk.Conn, h *elect.Handle) error { return h.Release(ctxT(t, 10*time.Second)) }, false},
			{"after an owner deleted by hand", func(c *zk.Conn, h *elect.Handle) error { return c.Delete(h.NodePath(), -1) }, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				g := groupPath(t)
				s0, s2 := session(t, addrs), session(t, addrs)
				foreignConn := session(t, addrs).Conn()
				l0, _ := elect.NewLock(s0, g, elect.CreateParents())
				if _, err := l0.Acquire(ctxT(t, 10*time.Second)); err != nil {
					t.Fatal(err) // the group's first node: nobody before it
				}
				_ = s0.Close()
				l1, _ := elect.NewLock(session(t, addrs), g)
				h1, err := l1.Acquire(ctxT(t, 10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				fl := zk.NewLock(foreignConn, g, zk.WorldACL(zk.PermAll))
				locked := make(chan error, 1)
				go func() { locked <- fl.Lock() }()
				queuedBehind(t, s2, g, 2)
				got := make(chan *elect.Handle, 1)
				l2, _ := elect.NewLock(s2, g)
				go func() { h, _ := l2.Acquire(ctxT(t, 10*time.Second)); got <- h }()
				queuedBehind(t, s2, g, 3)
				if err := tc.firstGone(s2.Conn(), h1); err != nil {
					t.Fatal(err)
				}
				if err := <-locked; err != nil {
					t.Fatal(err)
				}
				if err := fl.Unlock(); err != nil {
					t.Fatal(err)
				}
				h2 := <-got
				if h2 == nil {
					t.Fatal("the herald lock behind the foreign one never owned")
				}
				if released, err := h2.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || !released {
					t.Fatalf("PredecessorReleased = %v, %v; want true (a foreign client's)", released, err)
				}
				if got := h2.PredecessorVouched(); got != tc.vouched {
					t.Errorf("PredecessorVouched = %v, want %v", got, tc.vouched)
				}
			})
		}
	})
}

// queuedBehind waits until group g holds n queue nodes.
func queuedBehind(t *testing.T, s *elect.Session, g string, n int) {
	t.Helper()
	eventually(t, 5*time.Second, fmt.Sprintf("%d queue nodes in %s", n, g), func() bool {
		c, _, _ := s.Conn().Children(g)
		k := 0
		for _, x := range c {
			if _, ok := elect.ParseSequence(x); ok {
				k++
			}
		}
		return k == n
	})
}

// TestPredecessorLowestSinceCountsTheReleasesHold: an owner that comes
// after a release, with nobody in the queue, never saw the releasing
// owner lowest; the release's record says how long it held, and every
// owner before it was gone at least that long before the release. So
// PredecessorLowestSince is at least that long before the look, where it
// was zero (and herald lock, after a release that does not vouch, waited
// its whole bound even after an owner that had held for hours).
func TestPredecessorLowestSinceCountsTheReleasesHold(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	const held = 400 * time.Millisecond
	l1, _ := elect.NewLock(session(t, addrs), g, elect.CreateParents())
	h1, err := l1.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(held)
	if err := h1.Release(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	l2, _ := elect.NewLock(session(t, addrs), g)
	h2, err := l2.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if p := h2.Predecessor(); p != "" {
		t.Fatalf("the new owner saw %s before it; the test wants it to come after the release", p)
	}
	if ok, err := h2.PredecessorReleased(ctxT(t, 10*time.Second)); err != nil || !ok {
		t.Fatalf("PredecessorReleased = %v, %v; want true", ok, err)
	}
	since := h2.PredecessorLowestSince()
	if since.IsZero() || time.Since(since) < held {
		t.Errorf("PredecessorLowestSince %v (%v ago), want at least %v ago: the release held that long", since, time.Since(since), held)
	}
}

// TestNoChildEverGoneProvesNoPredecessor: a group holding a persistent node
// someone made before ours (so the counter gave ours the number 1): no
// child of the group ever went, so no owner can have gone before ours
// without a release, and PredecessorReleased says so at once, where a
// runner used to wait its whole bound. A group where a child did go (one
// made and deleted by hand before ours) may have lost an owner so, and is
// not proven.
func TestNoChildEverGoneProvesNoPredecessor(t *testing.T) {
	addrs := sharedAddrs(t)
	ctx := ctxT(t, 20*time.Second)
	c := session(t, addrs).Conn()
	for _, tc := range []struct {
		name    string
		deleted bool
	}{{"a node of someone else's still there", false}, {"a node made and deleted before ours", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := groupPath(t)
			makeGroup(t, c, g)
			if _, err := c.Create(g+"/foo", []byte("bar"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if tc.deleted {
				if err := c.Delete(g+"/foo", -1); err != nil {
					t.Fatal(err)
				}
			}
			l, _ := elect.NewLock(session(t, addrs), g)
			h, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			if h.Sequence() != 1 {
				t.Fatalf("our node %s; want sequence 1, after the node made by hand", h.Node())
			}
			released, err := h.PredecessorReleased(ctx)
			if err != nil || released == tc.deleted || released != h.PredecessorVouched() {
				t.Fatalf("PredecessorReleased = %v, %v (vouched %v); want %v", released, err, h.PredecessorVouched(), !tc.deleted)
			}
		})
	}
}
