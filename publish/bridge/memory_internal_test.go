package bridge

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// bookkeepingPerGroup bounds the heap the bridge's own books take per
// group it publishes (its state, truth, and what its stores said of it),
// beside what ObserveMany keeps: a bridge over 10,000 groups must take at
// most 4 KB of RSS a group in all. Measured at 335 bytes (the same in
// every run: no server, no goroutine); 389 with a 192-byte truth a
// group, 357 with the truth down to 160 bytes but a map for each of the
// stores' two figures.
const bookkeepingPerGroup = 345

// TestBookkeepingPerGroup: what the bridge writes in its books for each
// snapshot it publishes stays small. No server is needed: the books are
// kept as apply keeps them once a change is published.
func TestBookkeepingPerGroup(t *testing.T) {
	const n = 20_000
	b, err := New(Config{Servers: []string{"127.0.0.1:1"}, Discover: []string{"/x"}, Sinks: []publish.Sink{nopSink{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.pipe.Close(context.Background()) })
	changes := make([]elect.Change, n)
	for i := range changes {
		g := fmt.Sprintf("/x/g%05d", i)
		owner := &elect.Participant{ID: fmt.Sprintf("c%05d", i), Node: "n_0000000000", Session: int64(i + 1), Czxid: int64(i + 1)}
		changes[i] = elect.Change{Kind: elect.Snapshot, Group: g, Recipe: elect.RecipeElection, Owner: owner, Zxid: int64(i + 1)}
	}
	ctx := context.Background()
	before := heapAlloc()
	for _, c := range changes {
		b.setGroup(ctx, c.Group, GroupLive)
		b.truth.see(c)
		b.noteReported(c)
		b.noteZxid(c, false)
	}
	per := float64(heapAlloc()-before) / n
	t.Logf("the bridge's books: %.0f bytes per group", per)
	if per > bookkeepingPerGroup {
		t.Errorf("the bridge's books take %.0f bytes per group, over %d", per, bookkeepingPerGroup)
	}
	runtime.KeepAlive(changes)
}

// heapAlloc is the heap's live bytes after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
