package elect_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// TestWaiterLearnsTheTimeoutsOfTheCopiesAhead: a waiter under
// ProveSessionEnd reads the session timeouts of the owners of the herald
// nodes below its own on their session nodes, and LongestTimeoutSeen is
// the longest of them and its own (herald run and herald lock take the
// bound they wait for an owner that cannot hear from it). The owner two
// ahead counts as much as the one just ahead: it may go by hand, and the
// one just ahead leave without vouching for it.
func TestWaiterLearnsTheTimeoutsOfTheCopiesAhead(t *testing.T) {
	for _, k := range sessionKinds {
		t.Run(k.name, func(t *testing.T) {
			addrs := sharedAddrs(t)
			g := groupPath(t)
			long := session(t, addrs, elect.WithSessionTimeout(6*time.Second))
			mid := session(t, addrs, elect.WithSessionTimeout(2*time.Second))
			short := session(t, addrs, elect.WithSessionTimeout(time.Second))
			opts := []elect.Option{elect.CreateParents(), elect.ProveSessionEnd()}
			ctx := ctxT(t, 30*time.Second)
			if _, err := k.join(ctx, long, g, "long", opts...); err != nil {
				t.Fatal(err)
			}
			b, _, err := long.Conn().Get(k.node(g, long))
			var content struct {
				TimeoutMS int64 `json:"timeout_ms"`
			}
			if err != nil || json.Unmarshal(b, &content) != nil || content.TimeoutMS != 6000 {
				t.Errorf("the owner's session node holds %q (%v), want its timeout, 6000 ms", b, err)
			}
			go func() { _, _ = k.join(ctx, mid, g, "mid", opts...) }()
			if err := waitChildren(t, g, 2); err != nil {
				t.Fatal(err)
			}
			if got := short.LongestTimeoutSeen(); got != time.Second {
				t.Errorf("before any wait: LongestTimeoutSeen = %v, want its own timeout, 1s", got)
			}
			go func() { _, _ = k.join(ctx, short, g, "short", opts...) }()
			eventually(t, 10*time.Second, "the last waiter to learn the owner's 6 s timeout", func() bool {
				return short.LongestTimeoutSeen() == 6*time.Second
			})
			if got := mid.LongestTimeoutSeen(); got != 6*time.Second {
				t.Errorf("the waiter just behind the owner: LongestTimeoutSeen = %v, want 6s", got)
			}
			if got := long.LongestTimeoutSeen(); got != 6*time.Second {
				t.Errorf("the owner: LongestTimeoutSeen = %v, want its own, 6s", got)
			}
		})
	}
}

// TestWaiterWithoutProofReadsNoTimeouts: without ProveSessionEnd a wait
// reads no session node, and LongestTimeoutSeen stays the session's own.
func TestWaiterWithoutProofReadsNoTimeouts(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	long := session(t, addrs, elect.WithSessionTimeout(6*time.Second))
	short := session(t, addrs, elect.WithSessionTimeout(time.Second))
	ctx := ctxT(t, 30*time.Second)
	k := sessionKinds[1]
	if _, err := k.join(ctx, long, g, "long", elect.CreateParents(), elect.ProveSessionEnd()); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = k.join(ctx, short, g, "short") }()
	if err := waitChildren(t, g, 2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the wait's listing and watches
	if got := short.LongestTimeoutSeen(); got != time.Second {
		t.Errorf("LongestTimeoutSeen = %v, want the session's own, 1s", got)
	}
}
