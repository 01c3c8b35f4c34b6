package jetstream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

func lastReports(t *testing.T, s *hjs.Sink, prefix string) map[string]publish.LastReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all, err := s.LastReports(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]publish.LastReport{}
	for g, r := range all {
		if strings.HasPrefix(g, prefix) {
			out[g] = r
		}
	}
	return out
}

// TestLastReports: what the owners bucket says last about each group, as a
// bridge starting on it reads it: the owner and the zxid of the report
// that named it, or no owner and the zxid of the change that emptied the
// group, each with the epoch it carried (a Kafka controller's); groups never
// written, and values that are not herald's, are not reported. A second sink on the same bucket (another bridge) reads the
// same.
func TestLastReports(t *testing.T) {
	g := uniq(t)
	held, emptied, handed, never := g+"/held", g+"/emptied", g+"/handed", g+"/never"
	ctrl, vacated := g+"/controller", g+"/vacated"
	epoch := func(e publish.Event, n int64) publish.Event {
		e.Epoch = n
		return e.WithID()
	}
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	writeEventually(t, s,
		gain(held, "a", 10),
		gain(emptied, "b", 20), lost(emptied, "b", 20, ""),
		gain(handed, "c", 30), lost(handed, "c", 30, "d"), gain(handed, "d", 40),
		epoch(gain(ctrl, "k", 50), 3),
		epoch(gain(vacated, "v", 60), 4), epoch(lost(vacated, "v", 60, ""), 4))
	// Someone else's value under a group's key is no report.
	kv := bucket(t, client(t, url), hjs.DefaultBucket)
	foreign := g + "/foreign"
	if _, err := kv.Put(context.Background(), publish.MustTokens(foreign), []byte("not herald's")); err != nil {
		t.Fatal(err)
	}
	want := map[string]publish.LastReport{
		held:    {Owner: "a", OwnerID: "id-a", Term: 10, Zxid: 11, Recipe: elect.RecipeElection},
		emptied: {Zxid: 25, Recipe: elect.RecipeElection}, // the no-owner marker says it too
		handed:  {Owner: "d", OwnerID: "id-d", Term: 40, Zxid: 41, Recipe: elect.RecipeElection},
		ctrl:    {Owner: "k", OwnerID: "id-k", Term: 50, Zxid: 51, Recipe: elect.RecipeElection, Epoch: 3},
		vacated: {Zxid: 65, Recipe: elect.RecipeElection, Epoch: 4}, // the marker keeps it
	}
	other := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	for name, sink := range map[string]*hjs.Sink{"writer": s, "another bridge": other} {
		got := lastReports(t, sink, g+"/")
		if len(got) != len(want) {
			t.Errorf("%s: %d reports %v; want %d %v", name, len(got), got, len(want), want)
		}
		for group, w := range want {
			if got[group] != w {
				t.Errorf("%s: %s reported %+v; want %+v", name, group, got[group], w)
			}
		}
		if _, ok := got[never]; ok {
			t.Errorf("%s: a group never written is reported: %+v", name, got[never])
		}
	}
}

// TestLastReportsMany: more entries than one fetch carries are all read.
func TestLastReportsMany(t *testing.T) {
	g := uniq(t)
	const n = 2500
	var evs []publish.Event
	for i := range n {
		evs = append(evs, gain(fmt.Sprintf("%s/g%d", g, i), fmt.Sprint("n", i), int64(100+i)))
	}
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	writeEventually(t, s, evs...)
	got := lastReports(t, s, g+"/")
	if len(got) != n {
		t.Fatalf("%d reports; want %d", len(got), n)
	}
	for i := range n {
		if r := got[fmt.Sprintf("%s/g%d", g, i)]; r.Owner != fmt.Sprint("n", i) || r.Zxid != int64(101+i) {
			t.Fatalf("group %d reported %+v", i, r)
		}
	}
}

// TestLastReportsNotConnected: a sink that never connected says so.
func TestLastReportsNotConnected(t *testing.T) {
	s, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: url}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LastReports(context.Background()); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("LastReports before Connect = %v; want an error saying it is not connected", err)
	}
}
