package audit_test

import (
	"fmt"
	"os"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

func ExampleHistory() {
	t0 := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	alice := &publish.Participant{ID: "alice", Node: "n_0000000007", Sequence: 7}
	bob := &publish.Participant{ID: "bob", Node: "n_0000000008", Sequence: 8}
	carol := &publish.Participant{ID: "carol", Node: "lock-0000000001", Sequence: 1}
	ev := func(typ publish.Type, group string, owner, prev *publish.Participant, term int64, at time.Duration) publish.Event {
		recipe := elect.RecipeElection
		if typ == publish.LockAcquired || typ == publish.LockReleased {
			recipe = elect.RecipeLock
		}
		return publish.Event{Type: typ, Group: group, Recipe: recipe, Owner: owner, Previous: prev,
			Term: term, Time: t0.Add(at), Source: "bridge-1"}.WithID()
	}
	elected := ev(publish.LeaderElected, "/jobs/nightly", alice, nil, 100, 0)
	lost := ev(publish.LeaderLost, "/jobs/nightly", nil, alice, 100, time.Hour)
	lost.Reason = elect.ReasonSessionExpired
	acquired := ev(publish.LockAcquired, "/locks/db", carol, nil, 300, 0)
	acquired.Gap = true // the observer was away: someone may have held it before
	released := ev(publish.LockReleased, "/locks/db", nil, carol, 300, 5*time.Minute)
	released.Reason = elect.ReasonReleased

	// Bob was last seen holding when a candidate joined; then the bridge
	// was down, and its snapshot on restart shows dave: bob's end was not
	// observed, nor dave's start.
	joined := ev(publish.CandidateJoined, "/jobs/nightly", bob, nil, 250, time.Hour+10*time.Minute)
	joined.Candidate = &publish.Participant{ID: "dave", Node: "n_0000000009", Sequence: 9}
	joined = joined.WithID()
	snapshot := ev(publish.LeaderElected, "/jobs/nightly", joined.Candidate, nil, 260, 2*time.Hour)
	snapshot.Snapshot = true

	events := []publish.Event{
		elected,
		ev(publish.LeaderReady, "/jobs/nightly", alice, nil, 100, 2*time.Second),
		elected, // delivered twice: counted once
		acquired, released, lost,
		ev(publish.LeaderElected, "/jobs/nightly", bob, alice, 250, time.Hour),
		joined, snapshot,
	}
	tenures := audit.History(events)
	for _, t := range tenures {
		fmt.Printf("%s term %d: %s held %v (exact %v), ended %q, gap %v\n", t.Group, t.Term, t.Owner.ID, t.HeldFor, t.Exact(), t.Reason, t.Gap)
	}
	fmt.Println()
	audit.WriteTable(os.Stdout, tenures, t0.Add(3*time.Hour))
	// Output:
	// /jobs/nightly term 100: alice held 1h0m0s (exact true), ended "session expired", gap false
	// /jobs/nightly term 250: bob held 10m0s (exact false), ended "", gap false
	// /jobs/nightly term 260: dave held 0s (exact false), ended "", gap true
	// /locks/db term 300: carol held 5m0s (exact true), ended "released", gap true
	//
	// GROUP          TERM  OWNER                    FROM                    UNTIL                   HELD FOR  END              GAP    TWO OWNERS
	// /jobs/nightly  100   alice (n_0000000007)     2025-03-01T02:00:00Z    2025-03-01T03:00:00Z    1h0m0s    session expired  -      -
	// /jobs/nightly  250   bob (n_0000000008)       2025-03-01T03:00:00Z    ≥ 2025-03-01T03:10:00Z  ≥ 10m0s   not seen         -      -
	// /jobs/nightly  260   dave (n_0000000009)      ≤ 2025-03-01T04:00:00Z  holding                 ≥ 0s      -                maybe  -
	// /locks/db      300   carol (lock-0000000001)  2025-03-01T02:00:00Z    2025-03-01T02:05:00Z    5m0s      released         maybe  -
}
