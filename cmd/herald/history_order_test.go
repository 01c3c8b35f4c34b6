package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// lateStory is what an HA pair of bridges writes to a stream or topic when
// the one deposed delivers late: bridge-a, active, wrote h0's election,
// saw h0 lose and h1 elected, and was deposed before those two writes got
// through; bridge-b took over and wrote h1's loss, h0's second tenure and
// its loss; then bridge-a's writes arrived, h0's election again with them
// (a retried write: the same id, the same time). The stream's order is not
// the changes' order. It returns bridge-a's writes, bridge-b's, and
// bridge-a's late ones, in the order they reach the stream.
func lateStory(group string, start time.Time) (early, taker, late []publish.Event) {
	h0 := &publish.Participant{ID: "h0", Node: "n_0000000865", Session: "0x1"}
	h1 := &publish.Participant{ID: "h1", Node: "n_0000000866", Session: "0x2"}
	h0b := &publish.Participant{ID: "h0", Node: "n_0000000867", Session: "0x1"}
	mk := func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, ms int, source string) publish.Event {
		e := publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Previous: prev,
			Term: term, Zxid: zxid, Time: start.Add(time.Duration(ms) * time.Millisecond), Source: source}
		if typ.Loses() {
			e.Reason = elect.ReasonResigned
		}
		return e.WithID()
	}
	elected0 := mk(publish.LeaderElected, h0, nil, 3764, 3764, 0, "bridge-a")
	early = []publish.Event{elected0}
	taker = []publish.Event{
		mk(publish.LeaderLost, h0b, h1, 3768, 3772, 5000, "bridge-b"),
		mk(publish.LeaderElected, h0b, h1, 3772, 3772, 5000, "bridge-b"),
		mk(publish.LeaderLost, nil, h0b, 3772, 3776, 6300, "bridge-b"),
	}
	late = []publish.Event{
		elected0,
		mk(publish.LeaderLost, h1, h0, 3764, 3768, 2450, "bridge-a"),
		mk(publish.LeaderElected, h1, h0, 3768, 3768, 2450, "bridge-a"),
	}
	return early, taker, late
}

// checkOneRowPerTenure checks that history tells lateStory's three tenures
// once each, every start and end seen: h1's is not split into one whose
// start was not seen and another left open by its election read late.
func checkOneRowPerTenure(t *testing.T, name string, ts []audit.Tenure, start time.Time) {
	t.Helper()
	want := []struct {
		term     int64
		node     string
		from, to int // ms after start
	}{{3764, "n_0000000865", 0, 2450}, {3768, "n_0000000866", 2450, 5000}, {3772, "n_0000000867", 5000, 6300}}
	var got []string
	for _, x := range ts {
		got = append(got, fmt.Sprintf("%d %s from %s (seen %v) until %s (seen %v) open %v gap %v",
			x.Term, x.Owner.Node, x.From.Format("15:04:05.000"), x.FromSeen, x.Until.Format("15:04:05.000"), x.UntilSeen, x.Open(), x.Gap))
	}
	if len(ts) != len(want) {
		t.Errorf("%s: %d rows, want one per tenure (%d):\n%s", name, len(ts), len(want), strings.Join(got, "\n"))
		return
	}
	for i, w := range want {
		x := ts[i]
		from, to := start.Add(time.Duration(w.from)*time.Millisecond), start.Add(time.Duration(w.to)*time.Millisecond)
		if x.Term != w.term || x.Owner.Node != w.node || !x.Exact() || !x.From.Equal(from) || !x.Until.Equal(to) || x.Gap {
			t.Errorf("%s: row %d is %s, want term %d of %s, seen from %s until %s:\n%s", name, i, got[i], w.term, w.node,
				from.Format("15:04:05.000"), to.Format("15:04:05.000"), strings.Join(got, "\n"))
		}
	}
}

// TestHistoryFromAStreamOutOfZxidOrder: the events of a bridge deposed
// while its writes were under way arrive in the events topic and the
// stream after the newer bridge's. herald history --kafka and --nats put
// them in zxid order, as it merges audit logs, and list each tenure once,
// where they used to list h1's twice: once from its loss with its start
// not seen, once from its election read late, left open. So does one
// audit log whose lines are out of zxid order.
func TestHistoryFromAStreamOutOfZxidOrder(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	g := uniq(t)
	early, taker, late := lateStory(g, start)

	kafkaAddrs, natsURL, sinks := streamSinks(t)
	for _, s := range sinks {
		write(t, s, early...)
		write(t, s, taker...)
		write(t, s, late...)
	}
	// One audit log holding both bridges' lines in that order (logs put
	// end to end) is ordered the same way.
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, as, early...)
	write(t, as, taker...)
	write(t, as, late...)
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	for _, src := range [][]string{{"--kafka", kafkaAddrs}, {"--nats", natsURL}, {"--audit", path}} {
		checkOneRowPerTenure(t, "history "+strings.Join(src, " "), historyJSON(t, append([]string{g}, src...)...), start)
		out, stderr, code := heraldRun(t, nil, append([]string{"history", g}, src...)...)
		if code != 0 || strings.Count(out, "n_0000000866") != 1 || strings.Contains(out, "open") || strings.Contains(out, "maybe") {
			t.Errorf("history %v: exit %d, want h1's tenure once, nothing open, no gap:\n%s%s", src, code, out, stderr)
		}
	}
}

// TestMergeBySourceIsTheMergeOfTheBridgesLogs: the events of a stream
// split by the bridge that wrote them are ordered as audit.Merge orders
// those bridges' logs, also an event of a group found gone (zxid 0) that
// arrived after the other bridge's newer events: it stays after what came
// before it from its own bridge.
func TestMergeBySourceIsTheMergeOfTheBridgesLogs(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Millisecond)
	g := "/jobs/order"
	early, taker, late := lateStory(g, start)
	gone := publish.Event{Type: publish.LeaderLost, Group: g, Recipe: elect.RecipeElection, Snapshot: true,
		Time: start.Add(2500 * time.Millisecond), Source: "bridge-a"}.WithID()
	late = append(late, gone)
	var stream []publish.Event
	stream = append(append(append(stream, early...), taker...), late...)
	logA := append(append([]publish.Event{}, early...), late...)
	want := audit.Merge(logA, taker)
	got := mergeBySource(stream)
	line := func(es []publish.Event) string {
		var b strings.Builder
		for _, e := range es {
			fmt.Fprintf(&b, "%s %s zxid %d %s\n", e.Source, e.Type, e.Zxid, e.Time.Format("15:04:05.000"))
		}
		return b.String()
	}
	if line(got) != line(want) {
		t.Fatalf("mergeBySource:\n%swant audit.Merge of the two bridges' logs:\n%s", line(got), line(want))
	}
	for i, e := range got {
		if e.ID == gone.ID && (i == 0 || got[i-1].Zxid != 3768) {
			t.Errorf("the group found gone is not right after bridge-a's last event before it:\n%s", line(got))
		}
	}
	checkOneRowPerTenure(t, "History of the stream", audit.History(mergeBySource(append(early, append(taker, late[:3]...)...))), start)
}
