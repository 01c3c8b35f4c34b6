package timeline

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

var t0 = time.Date(2026, 11, 24, 3, 12, 0, 0, time.UTC)

func ev(at time.Duration, typ publish.Type, owner, prev string, term int64, snap, gap bool) publish.Event {
	e := publish.Event{Type: typ, Group: "/g/<x>", Recipe: elect.RecipeElection, Time: t0.Add(at), Term: term, Snapshot: snap, Gap: gap}
	node := owner
	if owner != "" {
		e.Owner = &publish.Participant{ID: owner, Node: owner}
	}
	if prev != "" {
		e.Previous = &publish.Participant{ID: prev, Node: prev}
		if owner == "" {
			node = prev
		}
	}
	e.ID = publish.MakeID(e.Group, node, typ)
	return e
}

// What each stretch is drawn as: held only where an owner was seen
// holding; the rest a gap or unseen, never held.
func TestSpans(t *testing.T) {
	events := []publish.Event{
		ev(0, publish.LeaderElected, "a", "", 1, false, false),
		ev(10*time.Second, publish.LeaderLost, "", "a", 1, false, false),
		ev(10*time.Second, publish.LeaderElected, "b", "a", 2, false, false),
		// Away; back, c holds and an owner may be missing.
		ev(40*time.Second, publish.LeaderElected, "c", "", 4, true, true),
	}
	c := Build(events, t0.Add(time.Minute), nil)
	if len(c.Lines) != 1 {
		t.Fatalf("%d lines, want 1", len(c.Lines))
	}
	var kinds []string
	for _, s := range c.Lines[0].Spans(c.From, c.To) {
		kinds = append(kinds, string(s.Kind))
	}
	if got := strings.Join(kinds, " "); got != "held held gap held unseen" {
		t.Errorf("spans %q, want a and b held, a gap, c held, then not seen since", got)
	}
	// Seen holding now (the live page): c's bar runs to the end.
	live := Build(events, t0.Add(time.Minute), map[string]string{"/g/<x>": "c"})
	sp := live.Lines[0].Spans(live.From, live.To)
	if last := sp[len(sp)-1]; last.Kind != Held || !last.To.Equal(live.To) {
		t.Errorf("held now: last span %+v, want held to the end", last)
	}
	var svg bytes.Buffer
	if err := c.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	for want, n := range map[string]int{`class="tenure"`: 3, `<g class="gap">`: 1, `<g class="unseen">`: 1, "/g/&lt;x&gt;": 6} {
		if got := strings.Count(out, want); got != n {
			t.Errorf("SVG holds %d of %s, want %d", got, want, n)
		}
	}
	if strings.Contains(out, "/g/<x>") {
		t.Error("the group's name reached the SVG unescaped")
	}
}

// A snapshot that found the group without an owner and said gap (owners
// came and went while nobody observed) is drawn as a gap from the last
// observation to it, also when no tenure follows, and listed in the table.
func TestSpansMissingOwners(t *testing.T) {
	empty := ev(40*time.Second, publish.LeaderLost, "", "", 0, true, true)
	empty.Zxid = 50
	events := []publish.Event{
		ev(0, publish.LeaderElected, "a", "", 1, false, false),
		ev(10*time.Second, publish.LeaderLost, "", "a", 1, false, false),
		empty.WithID(),
	}
	c := Build(events, t0.Add(time.Minute), nil)
	if len(c.Lines) != 1 {
		t.Fatalf("%d lines, want 1", len(c.Lines))
	}
	sp := c.Lines[0].Spans(c.From, c.To)
	if len(sp) != 2 || sp[0].Kind != Held || sp[1].Kind != Gap || !sp[1].From.Equal(t0.Add(10*time.Second)) || !sp[1].To.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("spans %+v: want a held, then a gap from its loss (+10s) to the snapshot (+40s)", sp)
	}
	var page bytes.Buffer
	if err := c.WriteHTML(&page, "t", "test"); err != nil {
		t.Fatal(err)
	}
	out := page.String()
	for want, n := range map[string]int{`<g class="gap">`: 1, "owners may be missing here": 1, `<tr class="missing">`: 1} {
		if got := strings.Count(out, want); got != n {
			t.Errorf("page holds %d of %s, want %d", got, want, n)
		}
	}
	// The only event of a window (the live page of a bridge just started):
	// the gap runs from the window's start.
	c = Build([]publish.Event{empty.WithID()}, t0.Add(time.Minute), map[string]string{})
	sp = c.Lines[0].Spans(c.From, c.To)
	if len(sp) != 1 || sp[0].Kind != Gap || !sp[0].From.Equal(c.From) || !sp[0].To.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("spans %+v: want one gap from the window's start to the snapshot", sp)
	}
}

// A log written by hand or by a foreign publisher may hold anything: names
// with control characters, times centuries apart. The drawing still parses
// as XML, and its axis stays a handful of ticks.
func TestSVGHostileInput(t *testing.T) {
	a := ev(0, publish.LeaderElected, "own\x00er\x1b[31m", "", 1, false, false)
	a.Group = "/ctl\x01grp"
	a.Time = time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)
	b := ev(0, publish.LeaderLost, "", "own\x00er\x1b[31m", 1, false, false)
	b.Group = a.Group
	b.Time = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	c := Build([]publish.Event{a, b}, b.Time, nil)
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 100_000 {
		t.Fatalf("the drawing of two events is %d bytes", buf.Len())
	}
	d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the drawing is not well-formed XML: %v", err)
		}
	}
}
