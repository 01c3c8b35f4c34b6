package elect_test

import (
	"errors"
	"fmt"
	"path"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// manyHeapPerGroup bounds the heap one group of an ObserveMany holds once
// its snapshot is out, the client's watch on it included: a bridge over
// 10,000 groups must take at most 4 KB of RSS a group, and that is mostly
// this heap, twice over for the garbage collector's headroom. Measured at
// about 1,250 bytes; the code before held 1,550 (a 576-byte member, a
// 352-byte view, a second copy of the owner and of its name), and the
// connection stamps that made the bridge miss its 4 KB were 70 of them.
const manyHeapPerGroup = 1300

// TestManyHeapPerGroup: what ObserveMany keeps per group stays small. The
// groups are one candidate each, as the bridge's scale benchmark makes
// them; the heap is measured with the Many and its session already up, so
// only what the groups add counts.
func TestManyHeapPerGroup(t *testing.T) {
	const n = 2000
	addrs := sharedAddrs(t)
	base := groupPath(t)
	maker, obs := session(t, addrs), session(t, addrs)
	groups := makeCandidates(t, maker.Conn(), base, n)
	ctx := ctxT(t, 2*time.Minute)
	m, err := elect.ObserveMany(ctx, obs)
	if err != nil {
		t.Fatal(err)
	}
	before := heapAlloc()
	for _, g := range groups {
		if err := m.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	for seen := 0; seen < n; {
		select {
		case c := <-m.Changes():
			if c.Kind == elect.Snapshot {
				seen++
			}
		case <-ctx.Done():
			t.Fatalf("%d snapshots of %d groups: %v", seen, n, ctx.Err())
		}
	}
	per := float64(heapAlloc()-before) / n
	t.Logf("heap per observed group: %.0f bytes", per)
	if per > manyHeapPerGroup {
		t.Errorf("ObserveMany holds %.0f bytes of heap per group, over %d", per, manyHeapPerGroup)
	}
	runtime.KeepAlive(m)
}

// heapAlloc is the heap's live bytes after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// makeCandidates makes n groups under base, each holding one ephemeral
// candidate of c's session, in multi batches.
func makeCandidates(t *testing.T, c *zk.Conn, base string, n int) []string {
	t.Helper()
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{path.Dir(base), base} {
		if _, err := c.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	groups := make([]string, n)
	var ops []any
	for i := range groups {
		groups[i] = fmt.Sprintf("%s/g%05d", base, i)
		ops = append(ops, &zk.CreateRequest{Path: groups[i], Acl: acl},
			&zk.CreateRequest{Path: groups[i] + "/n_", Data: []byte("c"), Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
		if len(ops) == 500 || i == n-1 {
			if _, err := c.Multi(ops...); err != nil {
				t.Fatalf("create groups: %v", err)
			}
			ops = ops[:0]
		}
	}
	return groups
}
