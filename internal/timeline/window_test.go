package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// A chart of a window draws only the rows the caller keeps and the marks
// inside the window, over the window's time; the stretch at the window's
// start is drawn as the whole history has it (here a gap, since the
// first row shown follows an end nobody saw), from where it began, not
// left empty as if the group had been observed without an owner.
func TestBuildWindow(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	join := func(s int, who string) publish.Event {
		e := ev(time.Duration(s)*time.Second, publish.CandidateJoined, "", "", 0, false, false)
		e.Candidate = &publish.Participant{ID: who, Node: who}
		return e
	}
	events := []publish.Event{
		ev(0, publish.LeaderElected, "a", "", 1, false, false),
		ev(10*time.Second, publish.LeaderLost, "", "a", 1, false, false),
		ev(10*time.Second, publish.LeaderElected, "b", "a", 2, false, false),
		join(20, "early"),
		// Away; back, c holds and an owner may be missing: b's end unseen.
		ev(40*time.Second, publish.LeaderElected, "c", "", 4, true, true),
		join(50, "inside"),
		ev(60*time.Second, publish.LeaderLost, "", "c", 4, false, false),
		ev(60*time.Second, publish.LeaderElected, "d", "c", 5, false, false),
		ev(80*time.Second, publish.LeaderLost, "", "d", 5, false, false),
		ev(90*time.Second, publish.LeaderElected, "e", "d", 6, false, false),
	}
	since, until := at(30), at(70)
	keep := func(x audit.Tenure) bool { return !x.From.After(until) && (x.Open() || !x.Until.Before(since)) }
	c := BuildWindow(events, audit.History(events), at(90), since, until, keep)
	if len(c.Lines) != 1 || !c.From.Equal(since) || !c.To.Equal(until) {
		t.Fatalf("chart %v to %v with %d lines: want the window, one line", c.From, c.To, len(c.Lines))
	}
	l := c.Lines[0]
	var owners, kinds []string
	for _, x := range l.Tenures {
		owners = append(owners, x.Owner.ID)
	}
	sp := l.Spans(c.From, c.To)
	for _, s := range sp {
		kinds = append(kinds, string(s.Kind))
	}
	if strings.Join(owners, " ") != "c d" || strings.Join(kinds, " ") != "gap held held" {
		t.Errorf("rows %v drawn as %v: want c and d, after the gap that b's unseen end left", owners, kinds)
	}
	if len(sp) > 0 && (!sp[0].From.Equal(at(10)) || !sp[0].To.Equal(at(40))) {
		t.Errorf("the gap runs %v to %v: want from b's last sighting (+10s) to c (+40s), as recorded", sp[0].From, sp[0].To)
	}
	if len(l.Marks) != 1 || l.Marks[0].ID != "inside" {
		t.Errorf("marks %+v: want only the one inside the window", l.Marks)
	}

	// Only --since: the axis ends with the history, and the open tenure
	// is drawn not seen since to that end.
	c = BuildWindow(events, audit.History(events), at(90), at(85), time.Time{}, func(x audit.Tenure) bool { return x.Open() || !x.Until.Before(at(85)) })
	if len(c.Lines) != 1 || len(c.Lines[0].Tenures) != 1 || !c.From.Equal(at(85)) || !c.To.Equal(at(90)) {
		t.Errorf("since +85s: chart %v to %v, %+v: want e alone, +85s to +90s", c.From, c.To, c.Lines)
	}
	// Later, long after the last event: the open tenure reaches the
	// window as not seen since.
	c = BuildWindow(events, audit.History(events), at(200), at(150), time.Time{}, func(x audit.Tenure) bool { return x.Open() })
	if len(c.Lines) != 1 || !c.From.Equal(at(150)) || !c.To.Equal(at(200)) {
		t.Fatalf("since +150s, now +200s: chart %v to %v, %d lines: want e, +150s to +200s", c.From, c.To, len(c.Lines))
	}
	if sp := c.Lines[0].Spans(c.From, c.To); len(sp) != 2 || sp[1].Kind != Unseen || !sp[1].From.Equal(at(90)) || !sp[1].To.Equal(at(200)) {
		t.Errorf("since +150s: spans %+v: want e held, then not seen since +90s up to now", sp)
	}
	// Nothing in the window: no line, an axis of the window.
	c = BuildWindow(events, audit.History(events), at(90), at(200), at(300), func(audit.Tenure) bool { return false })
	if len(c.Lines) != 0 || !c.From.Equal(at(200)) || !c.To.Equal(at(300)) {
		t.Errorf("an empty window: chart %v to %v, %d lines", c.From, c.To, len(c.Lines))
	}
}
