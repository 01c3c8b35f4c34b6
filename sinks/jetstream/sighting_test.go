package jetstream_test

import (
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// A bridge that takes a group over (another shard after N changed, a
// restart under another source) and finds its owner unchanged states it
// again. The stream stores that sighting: before, its id was the change's,
// the stream dropped it as a duplicate, and its events named only the
// bridge that first told the tenure. The same delivery sent again (a
// retried write) and a standby's held copy of the change are still stored
// once.
func TestStreamStoresAnotherBridgesSighting(t *testing.T) {
	dir := uniq(t)
	g := dir + "/g"
	o := &elect.Participant{Node: "_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-n_0000000001", Czxid: 40}
	now := time.Now()
	change := publish.Translate(elect.Change{Kind: elect.OwnerChanged, Group: g, Recipe: elect.RecipeElection, Owner: o, Zxid: 40}, "bridge-b", now)
	snap := publish.Translate(elect.Change{Kind: elect.Snapshot, Group: g, Recipe: elect.RecipeElection, Owner: o, Queue: []elect.Participant{*o}, Zxid: 40}, "bridge-a", now.Add(time.Second))
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, s, change...)
	write(t, s, snap...)
	write(t, s, snap...)                // retried
	write(t, s, snap[0].WithChangeID()) // a standby's held copy
	js := client(t, url)
	if n := countStored(t, js, hjs.DefaultStream, dir); n != 2 {
		t.Fatalf("stream holds %d events of %s, want 2: the change and bridge-a's sighting, once each", n, g)
	}
	ctx := t.Context()
	evs := readStream(t, ctx, js, hjs.DefaultStream, dir, 2)
	if len(evs) != 2 || evs[1].Source != "bridge-a" || !evs[1].Snapshot {
		t.Fatalf("stored %+v, want bridge-b's change, then bridge-a's snapshot", evs)
	}
}
