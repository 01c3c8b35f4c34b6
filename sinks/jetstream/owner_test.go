package jetstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

func gain(group, node string, term int64) publish.Event {
	return publish.Event{Type: publish.LeaderElected, Group: group, Recipe: elect.RecipeElection,
		Owner: &publish.Participant{ID: "id-" + node, Node: node}, Term: term, Zxid: term + 1,
		Time: time.Unix(1700000000+term, 0).UTC(), Source: "test"}.WithID()
}

func readyEv(group, node string, term int64) publish.Event {
	e := gain(group, node, term)
	e.Type = publish.LeaderReady
	return e.WithID()
}

func lost(group, node string, term int64, successor string) publish.Event {
	e := publish.Event{Type: publish.LeaderLost, Group: group, Recipe: elect.RecipeElection,
		Previous: &publish.Participant{ID: "id-" + node, Node: node}, Term: term, Zxid: term + 5,
		Reason: elect.ReasonResigned, Time: time.Unix(1700000000+term, 0).UTC(), Source: "test"}
	if successor != "" {
		e.Owner = &publish.Participant{ID: "id-" + successor, Node: successor}
	}
	return e.WithID()
}

// ownerOf reads the bucket as any KV client would; nil when deleted.
func ownerOf(t *testing.T, kv jetstream.KeyValue, group string) *hjs.Owner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := kv.Get(ctx, publish.MustTokens(group))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var o hjs.Owner
	if err := json.Unmarshal(e.Value(), &o); err != nil {
		t.Fatalf("bucket value %s: %v", e.Value(), err)
	}
	return &o
}

func bucket(t *testing.T, js jetstream.JetStream, name string) jetstream.KeyValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestOwnersBucket(t *testing.T) {
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	kv := bucket(t, client(t, url), hjs.DefaultBucket)
	check := func(step, node string, term int64, ready bool) {
		t.Helper()
		o := ownerOf(t, kv, g)
		switch {
		case node == "" && o != nil:
			t.Fatalf("%s: key holds %+v, want it deleted", step, o)
		case node == "":
		case o == nil:
			t.Fatalf("%s: key deleted, want owner %s", step, node)
		case o.Owner.Node != node || o.Term != term || o.Ready != ready || o.Group != g || o.Recipe != elect.RecipeElection:
			t.Fatalf("%s: key holds %+v, want owner %s term %d ready %t", step, o, node, term, ready)
		}
	}

	write(t, s, gain(g, "a", 100))
	check("elected", "a", 100, false)
	since := ownerOf(t, kv, g).Since
	write(t, s, readyEv(g, "a", 100))
	check("ready", "a", 100, true)
	if o := ownerOf(t, kv, g); !o.Since.Equal(since) {
		t.Fatalf("ready moved since from %v to %v", since, o.Since)
	}

	// Another bridge, late, reports an older owner: the bucket keeps the newer.
	other := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	write(t, other, gain(g, "old", 50))
	check("stale elected", "a", 100, true)

	write(t, s, lost(g, "a", 100, ""))
	check("lost without successor", "", 0, false)
	// A replay of a's election (a bridge restarting with an old batch)
	// must not bring a back.
	write(t, other, gain(g, "a", 100))
	check("replayed gain after loss", "", 0, false)

	write(t, s, gain(g, "b", 200))
	check("new owner after loss", "b", 200, false)
}

// TestOwnersCoalesce: a loss and the next gain in one batch are one write;
// consumers of the bucket never see the group without an owner.
func TestOwnersCoalesce(t *testing.T) {
	g := uniq(t)
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}, Bucket: "coalesce_owners", History: 8})
	kv := bucket(t, client(t, url), "coalesce_owners")
	write(t, s, gain(g, "a", 100))
	write(t, s, lost(g, "a", 100, "b"), gain(g, "b", 150))
	write(t, s, lost(g, "b", 150, ""), gain(g, "c", 300), readyEv(g, "c", 300))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hist, err := kv.History(ctx, publish.MustTokens(g))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range hist {
		if e.Operation() != jetstream.KeyValuePut {
			t.Fatalf("history holds a %s: the group looked ownerless between owners", e.Operation())
		}
		var o hjs.Owner
		if err := json.Unmarshal(e.Value(), &o); err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Owner.Node)
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("history %v, want one write per batch: [a b c]", got)
	}
	if o := ownerOf(t, kv, g); o == nil || !o.Ready {
		t.Fatalf("final owner %+v, want c ready", o)
	}
}
