package publish_test

import (
	"fmt"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

func ExampleTranslate() {
	a := &elect.Participant{ID: "worker-a", Node: "n_0000000001", Session: 0x100, Sequence: 1, Czxid: 4100}
	b := &elect.Participant{ID: "worker-b", Node: "n_0000000002", Session: 0x101, Sequence: 2, Czxid: 4200}
	change := elect.Change{
		Kind: elect.OwnerChanged, Group: "/jobs/nightly", Recipe: elect.RecipeElection,
		Previous: a, Owner: b, Reason: elect.ReasonSessionExpired, Zxid: 4300,
	}
	for _, e := range publish.Translate(change, "bridge-1", time.Now()) {
		subject, _ := publish.Subject(e.Type, e.Group)
		fmt.Println(subject, "term", e.Term, "owner", e.Owner.ID, e.Reason)
	}
	// Output:
	// herald.leader_lost.jobs.nightly term 4100 owner worker-b session expired
	// herald.leader_elected.jobs.nightly term 4200 owner worker-b
}

func ExampleTokens() {
	tok, _ := publish.Tokens("/locks/db primary")
	group, _ := publish.GroupFromTokens(tok)
	fmt.Println(tok)
	fmt.Println(group)
	// Output:
	// locks.db=20primary
	// /locks/db primary
}

func ExampleFollower() {
	f, _ := publish.NewFollower()
	a := publish.Event{Type: publish.LockAcquired, Group: "/locks/db", Recipe: elect.RecipeLock,
		Owner: &publish.Participant{ID: "a", Node: "lock-0000000001"}, Term: 10, Zxid: 10}.WithID()
	b := publish.Event{Type: publish.LockAcquired, Group: "/locks/db", Recipe: elect.RecipeLock,
		Owner: &publish.Participant{ID: "b", Node: "lock-0000000002"}, Term: 20, Zxid: 21}.WithID()
	fmt.Println(f.Judge(b), f.Judge(a), f.Judge(b)) // a arrives late, b twice
	owner, term, _ := f.Owner("/locks/db")
	fmt.Println(owner.ID, term)
	// Output:
	// applied stale duplicate
	// b 20
}
