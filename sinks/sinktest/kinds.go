package sinktest

import (
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// CloudEventSources are sources herald builds that a CloudEvents reader
// must take as they are: runners and locks with odd ids, a bridge on an
// unusual hostname, and a --source given as a full URI.
var CloudEventSources = []string{
	publish.Source("herald-run/", "host with space"),
	publish.Source("herald-lock/", "job/7:ü%"),
	publish.Source("herald-bridge@", "odd host[1]:9"),
	publish.Source("herald-bridge@", "host-1"),
	"https://bridges.example.com/a?zone=1#x",
}

// EveryKind returns one event of every type herald emits, for group g,
// from source.
func EveryKind(g, source string) []publish.Event {
	p := &publish.Participant{ID: "cand", Node: "n_0000000001", Session: "0x1", Sequence: 1}
	now := time.Now().UTC()
	var out []publish.Event
	for _, t := range publish.Types {
		e := publish.Event{Type: t, Group: g, Recipe: elect.RecipeElection, Term: 7, Zxid: 9, Time: now, Source: source}
		if t == publish.LockAcquired || t == publish.LockReleased {
			e.Recipe = elect.RecipeLock
		}
		switch t {
		case publish.LeaderElected, publish.LeaderReady, publish.LockAcquired:
			e.Owner = p
		case publish.LeaderLost, publish.LockReleased:
			e.Previous, e.Reason = p, elect.ReasonResigned
		default:
			e.Candidate = p
		}
		out = append(out, e.WithID())
	}
	return out
}
