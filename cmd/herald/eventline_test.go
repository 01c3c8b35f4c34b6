package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// TestEventLineNamesWhoReleased: the line of a release that carries the
// next owner names the one who released as previous and the next as
// next=, never as owner=: "lock.released owner=b" read as "b released".
func TestEventLineNamesWhoReleased(t *testing.T) {
	a := &publish.Participant{ID: "alpha", Node: "n_1"}
	b := &publish.Participant{ID: "bravo", Node: "n_2"}
	e := publish.Event{Type: publish.LockReleased, Group: "/g", Owner: b, Previous: a, Term: 7,
		Reason: elect.ReasonReleased, Time: time.Now()}
	l := eventLine(e)
	if !strings.Contains(l, "previous=alpha(n_1)  next=bravo(n_2)") || strings.Contains(l, "owner=") {
		t.Errorf("release line %q: want previous=alpha then next=bravo, no owner=", l)
	}
	e.Owner = nil
	if l := eventLine(e); !strings.Contains(l, "previous=alpha(n_1)") || strings.Contains(l, "next=") {
		t.Errorf("release without a next owner %q: want previous=alpha only", l)
	}
	e.Type, e.Owner, e.Previous = publish.LockAcquired, b, a
	if l := eventLine(e); !strings.Contains(l, "owner=bravo(n_2)  previous=alpha(n_1)") {
		t.Errorf("acquisition line %q: want owner=bravo previous=alpha", l)
	}
}

// TestEventLineSaysTheNote: an event whose owner comes with a note (a KRaft
// controller's /controller) says it on its line, as who does.
func TestEventLineSaysTheNote(t *testing.T) {
	e := publish.Event{Type: publish.LeaderElected, Group: "/k/controller", Owner: &publish.Participant{ID: "3000", Node: "controller@42"},
		Term: 42, Note: elect.KRaftNote, Time: time.Now()}
	if l := eventLine(e); !strings.Contains(l, "may name a past controller") {
		t.Errorf("line %q lacks the note", l)
	}
	e.Note = ""
	if l := eventLine(e); strings.Contains(l, "note=") {
		t.Errorf("line %q of an owner without a note says note=", l)
	}
}
