package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// TestWhoSaysWhyNobodyHoldsALeaderNode: a persistent node put at a single
// leader's path while nobody held it (an operator's, a restored copy) is
// not taken for a leader's, and the bridge says why at once: its note
// reached readers only with the next snapshot (no owner before, none
// after: no change), and who --nats did not print the note of a group
// without an owner at all.
func TestWhoSaysWhyNobodyHoldsALeaderNode(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	flags := zkFlags(t)
	url := natsserver.Start(t).URL()
	root := uniq(t)
	c := rawZK(t)
	mkpath(t, c, root)
	leader := root + "/leader"
	start(t, nil, append([]string{"bridge", "--leader", leader, "--nats", url, "--heartbeat", "200ms"}, flags...)...)
	who := func(want string) string {
		t.Helper()
		var out string
		if err := waitFor(20*time.Second, func() bool {
			out, _, _ = heraldRun(t, nil, "who", leader, "--nats", url)
			return strings.Contains(out, want)
		}); err != nil {
			t.Fatalf("who %s --nats never said %q:\n%s", leader, want, out)
		}
		return out
	}
	if out := who("fresh"); !strings.Contains(out, "no owner") || strings.Contains(out, "note:") {
		t.Fatalf("who of an empty leader path: want no owner, without a note:\n%s", out)
	}
	if _, err := c.Create(leader, []byte("host1:8080"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out := who("note: " + leader + " is not taken for a leader's node")
	if !strings.Contains(out, "no owner") || !strings.Contains(out, "persistent") {
		t.Fatalf("who after a persistent node appeared at %s: want no owner, saying why:\n%s", leader, out)
	}
	if err := c.Delete(leader, -1); err != nil {
		t.Fatal(err)
	}
	// Gone again: the note goes with it.
	if err := waitFor(20*time.Second, func() bool {
		out, _, _ = heraldRun(t, nil, "who", leader, "--nats", url)
		return strings.Contains(out, "no owner") && strings.Contains(out, "fresh") && !strings.Contains(out, "note:")
	}); err != nil {
		t.Fatalf("who after the node went still notes it:\n%s", out)
	}
}

// TestWhoKafkaSaysWhyNobodyHoldsALeaderNode: in the Kafka owners topic, a
// group without an owner whose bridge then said why (a node at its
// leader's path not taken for a leader's) is read with that note: the
// follower took the record for no news (no owner before, none after), and
// who --kafka printed an owner's note only.
func TestWhoKafkaSaysWhyNobodyHoldsALeaderNode(t *testing.T) {
	t.Parallel() // waits on the broker, not the CPU
	kc := kafkatest.Start(t)
	ks, err := kafkasink.New(kafkasink.Config{Brokers: kc.Addrs(), Partitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	g := uniq(t) + "/leader"
	why := g + " is not taken for a leader's node, so nobody holds it: persistent (no session holds it)"
	o := &elect.Participant{ID: "host1", Node: "leader", Czxid: 10}
	at := time.Now().UTC().Add(-time.Minute)
	el := elect.RecipeElection
	evs := publish.Translate(elect.Change{Kind: elect.OwnerChanged, Group: g, Recipe: el, Owner: o, Zxid: 10}, "test", at)
	evs = append(evs, publish.Translate(elect.Change{Kind: elect.OwnerChanged, Group: g, Recipe: el, Previous: o, Zxid: 12}, "test", at.Add(time.Second))...)
	evs = append(evs, publish.Translate(elect.Change{Kind: elect.Snapshot, Group: g, Recipe: el, Zxid: 14, Note: why}, "test", at.Add(2*time.Second))...)
	for _, e := range evs { // one record each in the owners topic, not the batch's last
		write(t, ks, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := publish.Heartbeat{Source: "test", State: publish.BridgeActive, Time: time.Now(), Interval: time.Minute}
	h.Confirmed = h.Time
	if err := ks.WriteHeartbeat(ctx, h); err != nil {
		t.Fatal(err)
	}
	out, stderr, _ := heraldRun(t, nil, "who", g, "--kafka", strings.Join(kc.Addrs(), ","))
	if !strings.Contains(out, "no owner") || !strings.Contains(out, "note: "+why) {
		t.Fatalf("who --kafka of a leader path nobody holds, its bridge saying why: want no owner and the note:\n%s%s", out, stderr)
	}
}
