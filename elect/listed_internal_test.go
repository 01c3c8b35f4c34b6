package elect

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestListingBehindTheCreateOnlyWithOurNode: the listing sent behind a
// create is the waiter's first listing only when it shows the waiter's
// node, which proves the server answered it after the create. One that
// does not (it came first, or the node went meanwhile) is set aside, and
// a new listing decides.
func TestListingBehindTheCreateOnlyWithOurNode(t *testing.T) {
	ctx, s, group := sharedSession(t)
	q, err := newQueue(s, group, RecipeLock, "lock-", []Option{CreateParents()})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := q.enqueue(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	behind := func(children ...string) <-chan listed {
		ch := make(chan listed, 1)
		ch <- listed{children: children, st: &zk.Stat{Cversion: tk.seq + 1}, at: time.Now()}
		return ch
	}

	w := &waiter{q: q, t: tk, pre: behind()} // answered before the create
	_, children, _, _, _, err := w.list(ctx)
	if err != nil || !slices.Equal(children, []string{tk.name}) {
		t.Errorf("with a listing behind the create that lacks our node: listed %v, %v; want a new listing, showing %s", children, err, tk.name)
	}
	if w.pre != nil {
		t.Error("the listing behind the create was kept for a later listing")
	}

	ghost := "lock-" + FormatSequence(tk.seq-1) // in no listing the server made
	w = &waiter{q: q, t: tk, pre: behind(ghost, tk.name)}
	es, children, _, _, _, err := w.list(ctx)
	if err != nil || !slices.Equal(children, []string{ghost, tk.name}) || len(es) != 2 || es[0].name != ghost {
		t.Errorf("with a listing behind the create that shows our node: listed %v (%v), %v; want that listing", children, es, err)
	}
}

// goneAbove: every number between our node's and the group's counter
// that no node in the listing has is one that never owned, and our
// release names it.
func TestGoneAbove(t *testing.T) {
	es := func(seqs ...int32) []entry {
		var out []entry
		for _, s := range seqs {
			out = append(out, entry{name: "lock-" + FormatSequence(s), seq: s})
		}
		return out
	}
	const top = math.MaxInt32
	for _, tc := range []struct {
		name      string
		above     []entry
		seq, next int32
		want      []seqRun
		ok        bool
	}{
		{"nothing made after ours", nil, 4, 5, nil, true},
		{"every later node there", es(5, 6, 7), 4, 8, nil, true},
		{"one later node gone", es(5, 7), 4, 8, []seqRun{{6, 6}}, true},
		{"the newest gone", es(5, 6), 4, 8, []seqRun{{7, 7}}, true},
		{"all gone", nil, 4, 8, []seqRun{{5, 7}}, true},
		{"a name given twice does not fill a gap", es(5, 5, 7), 4, 8, []seqRun{{6, 6}}, true},
		{"a name by hand the counter has not reached fills none", es(5, 9), 4, 7, []seqRun{{6, 6}}, true},
		{"across the counter's wrap", es(top, math.MinInt32+1), top - 1, math.MinInt32 + 2, []seqRun{{math.MinInt32, math.MinInt32}}, true},
		{"our node not behind the counter", nil, 8, 8, nil, false},
	} {
		got, ok := goneAbove(tc.above, tc.seq, tc.next)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("%s: goneAbove(%v, %d, %d) = %v, %v; want %v, %v", tc.name, tc.above, tc.seq, tc.next, got, ok, tc.want, tc.ok)
		}
	}
}

// sharedSession is a session of 4 s on the shared server, closed with
// the test, a context of 30 s for its requests, and a group path of the
// test's own under /t.
func sharedSession(t *testing.T) (context.Context, *Session, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := NewSession(ctx, zktest.Shared(t).Addrs(), WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return ctx, s, fmt.Sprintf("/t/%s-%d", t.Name(), time.Now().UnixNano())
}
