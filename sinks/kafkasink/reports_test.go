package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
)

// TestLastReports: what the owners topic says last about each group, as a
// bridge starting on it reads it with a sink of its own: the owner and
// the zxid of the event that named it, or no owner (a tombstone herald
// wrote) and the zxid of the loss, each with the event's epoch; a tombstone someone else wrote leaves
// the group unreported. The terms read guard the topic afterwards: a late
// event of an older term writes nothing there.
func TestLastReports(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	ev := func(typ publish.Type, group, owner, prev string, term, zxid int64) publish.Event {
		e := publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Term: term, Zxid: zxid, Source: "t",
			Time: time.Unix(1700000000+zxid, 0).UTC()}
		if owner != "" {
			e.Owner = &publish.Participant{ID: owner, Node: owner}
		}
		if prev != "" {
			e.Previous = &publish.Participant{ID: prev, Node: prev}
		}
		return e.WithID()
	}
	epoch := func(e publish.Event, n int64) publish.Event {
		e.Epoch = n
		return e.WithID()
	}
	writer := connected(t, cfg)
	if err := writer.Write(context.Background(), []publish.Event{
		ev(publish.LeaderElected, "/held", "a", "", 10, 10),
		ev(publish.LeaderElected, "/emptied", "b", "", 20, 20),
		ev(publish.LeaderLost, "/emptied", "", "b", 20, 25),
		ev(publish.LeaderElected, "/handed", "c", "", 30, 30),
		ev(publish.LeaderLost, "/handed", "d", "c", 30, 40),
		ev(publish.LeaderElected, "/handed", "d", "c", 40, 40),
		ev(publish.LeaderElected, "/foreign", "e", "", 50, 50),
		epoch(ev(publish.LeaderElected, "/ctrl", "k", "", 60, 60), 6),
		epoch(ev(publish.LeaderElected, "/vacated", "v", "", 70, 70), 7),
		epoch(ev(publish.LeaderLost, "/vacated", "", "v", 70, 75), 7),
	}); err != nil {
		t.Fatal(err)
	}
	// Someone else deletes /foreign's record.
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.OwnersTopic, Balancer: cfg.Partitioner.balancer(), RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), kafka.Message{Key: []byte("/foreign")}); err != nil {
		t.Fatal(err)
	}

	fresh := connected(t, cfg) // another bridge, or this one restarted
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := fresh.LastReports(ctx)
	if err != nil {
		t.Fatal(err)
	}
	el := elect.RecipeElection
	want := map[string]publish.LastReport{"/held": {Owner: "a", OwnerID: "a", Term: 10, Zxid: 10, Recipe: el}, "/emptied": {Zxid: 25, Recipe: el}, "/handed": {Owner: "d", OwnerID: "d", Term: 40, Zxid: 40, Recipe: el},
		"/ctrl": {Owner: "k", OwnerID: "k", Term: 60, Zxid: 60, Recipe: el, Epoch: 6}, "/vacated": {Zxid: 75, Recipe: el, Epoch: 7}}
	if len(got) != len(want) {
		t.Errorf("reports %+v; want %+v", got, want)
	}
	for g, r := range want {
		if got[g] != r {
			t.Errorf("%s reported %+v; want %+v", g, got[g], r)
		}
	}

	// A late event of /handed's older term, after the restart: the topic
	// keeps d.
	if err := fresh.Write(context.Background(), []publish.Event{ev(publish.LeaderLost, "/handed", "", "c", 30, 35)}); err != nil {
		t.Fatal(err)
	}
	again, err := fresh.LastReports(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again["/handed"] != want["/handed"] {
		t.Errorf("after a late loss of term 30, /handed reports %+v; want %+v", again["/handed"], want["/handed"])
	}
}
