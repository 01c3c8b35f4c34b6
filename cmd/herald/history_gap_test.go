package main

import (
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// gapStory is a lock group as a bridge restarted over it publishes it: F
// acquired and released (seen), the bridge down while G and H each held
// the lock unseen, then its snapshot finding nobody, with gap=true; then a
// node made by hand (a suspect) and W queued behind it.
func gapStory(group string, at time.Time) []publish.Event {
	f := &publish.Participant{ID: "F", Node: "lock-0000000000", Session: "0x1"}
	mk := func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, ms int) publish.Event {
		e := publish.Event{Type: typ, Group: group, Recipe: elect.RecipeLock, Owner: owner, Previous: prev,
			Term: term, Zxid: zxid, Time: at.Add(time.Duration(ms) * time.Millisecond), Source: "test"}
		if typ.Loses() {
			e.Reason = elect.ReasonUnknown
		}
		return e
	}
	acq := mk(publish.LockAcquired, f, nil, 633, 633, 0)
	acq.Snapshot = true
	rel := mk(publish.LockReleased, nil, f, 633, 634, 1012)
	empty := mk(publish.LockReleased, nil, nil, 0, 640, 8000)
	empty.Snapshot, empty.Gap = true, true
	sus := mk(publish.CandidateJoined, nil, nil, 0, 641, 9000)
	sus.Candidate = &publish.Participant{ID: "leftover", Node: "lock-0000000003", Sequence: 3,
		Suspect: "not ephemeral: no session holds it"}
	w := mk(publish.CandidateJoined, nil, nil, 0, 642, 9500)
	w.Candidate = &publish.Participant{ID: "W", Node: "lock-0000000004", Sequence: 4, Session: "0x4"}
	return []publish.Event{acq.WithID(), rel.WithID(), empty.WithID(), sus.WithID(), w.WithID()}
}
