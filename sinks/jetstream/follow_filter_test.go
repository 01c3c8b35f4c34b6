package jetstream_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestFollowSkipsValuesThatAreNoOwners: JSON put under a group's key that
// is not an owner herald wrote ({}, null, an owner of another group, one
// without a node or a term) is skipped and counted, not delivered as an
// owner with no node; the owner written after it is delivered.
func TestFollowSkipsValuesThatAreNoOwners(t *testing.T) {
	g := uniq(t)
	connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}}) // makes sure the bucket exists
	w := follow(t, g)
	if u := nextFor(t, w, g, 10*time.Second); u.Owner != nil {
		t.Fatalf("initial %+v, want no owner", u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := client(t, url).KeyValue(ctx, hjs.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	good := hjs.Owner{Group: g, Owner: publish.Participant{ID: "id-a", Node: "a"}, Term: 100, Zxid: 101, Source: "test"}
	other, noNode, noTerm := good, good, good
	other.Group = g + "/other"
	noNode.Owner = publish.Participant{}
	noTerm.Term = 0
	bad := [][]byte{[]byte("{}"), []byte("null")}
	for _, o := range []hjs.Owner{other, noNode, noTerm} {
		b, _ := json.Marshal(o)
		bad = append(bad, b)
	}
	key := publish.MustTokens(g)
	// One at a time, each counted before the next: a watch that was still
	// being set up reads only the last value of the key, and would count
	// the ones put before it began as none.
	for i, b := range bad {
		if _, err := kv.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
		for w.Skipped() < uint64(i+1) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond) // polling the counter, not ordering
		}
	}
	b, _ := json.Marshal(good)
	if _, err := kv.Put(ctx, key, b); err != nil {
		t.Fatal(err)
	}
	u := nextFor(t, w, g, 10*time.Second)
	if u.Owner == nil || u.Owner.Owner.Node != "a" || u.Owner.Term != 100 {
		t.Fatalf("got %+v (owner %+v); want only the owner a, term 100, after %d values that are no owners", u, u.Owner, len(bad))
	}
	if n := w.Skipped(); n != uint64(len(bad)) {
		t.Fatalf("Skipped = %d, want %d", n, len(bad))
	}
}
