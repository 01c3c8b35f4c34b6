package elect_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestMany runs the observer's tests through ObserveMany: one shared
// dispatcher and a pool of workers must tell every group's story exactly as
// an Observer of its own does.
func TestMany(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"HeraldElection", TestObserveHeraldElection},
		{"ReportsGap", TestObserveReportsGap},
		{"UnknownThenSnapshot", TestObserveUnknownThenSnapshot},
		{"MissingGroupThenCreated", TestObserveMissingGroupThenCreated},
		{"SuspendedOwnerReason", TestObserveSuspendedOwnerReason},
		{"ForeignWriteToOwnerIsNotARelease", TestObserveForeignWriteToOwnerIsNotARelease},
		{"ObservedRecipe", TestObservedRecipe},
		{"IgnoresWritesToTheOwner", TestObserverIgnoresWritesToTheOwner},
		{"SuspectNodesNeverOwn", TestSuspectNodesNeverOwn},
		{"OlderSuspectNodeBlocksTheQueue", TestOlderSuspectNodeBlocksTheQueue},
		{"NoHazardFromANodeNoSessionHolds", TestNoHazardFromANodeNoSessionHolds},
		{"SinceMeasuresTheStretch", TestSinceMeasuresTheStretchBetweenObservers},
		{"UnreadableOwner", TestObserveUnreadableOwner},
		{"SolrAndMesosQueues", TestSolrAndMesosQueues},
		{"GroupDeletedWithItsOwner", TestGroupDeletedWithItsOwner},
		{"TellsARequeuedResignation", TestObserverTellsARequeuedResignation},
		{"GroupMadeAgainUnderTheSameNames", TestObserverGroupMadeAgainUnderTheSameNames},
		{"TellsAnUnrecordedEnd", TestObserverTellsAnUnrecordedEnd},
		{"GroupMadeAgainBetweenLooksIsAGap", TestGroupMadeAgainBetweenLooksIsAGap},
		{"GroupMadeOnceWhileMissingIsNoGap", TestGroupMadeOnceWhileMissingIsNoGap},
		{"GroupMadeWithItsParentsWhileMissingIsNoGap", TestGroupMadeWithItsParentsWhileMissingIsNoGap},
		{"GroupOwnedAndDeletedUnseenIsGap", TestGroupOwnedAndDeletedUnseenIsGap},
		{"GroupDeletedEmptyIsNoGap", TestGroupDeletedEmptyIsNoGap},
		{"GroupDeletedAfterAnUnseenOwnerIsGap", TestGroupDeletedAfterAnUnseenOwnerIsGap},
		{"SinceAMissingGroupCountsItsMaking", TestSinceAMissingGroupCountsItsMaking},
		{"GroupsReapedTogetherAreNoGap", TestGroupsReapedTogetherAreNoGap},
	} {
		t.Run(tc.name, tc.f)
	}
}

// Many groups on one Many: every snapshot right, then every handover
// reported once, for its own group, in order, while groups come and go.
func TestManyGroupsHandOver(t *testing.T) {
	const n = 30
	addrs := sharedAddrs(t)
	base := groupPath(t)
	obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 60*time.Second)
	first := make([]*elect.Handle, n)
	second := make([]chan *elect.Handle, n)
	groups := make([]string, n)
	for i := range n {
		groups[i] = fmt.Sprintf("%s/g%02d", base, i)
		ea, _ := elect.NewElection(a, groups[i], elect.CreateParents())
		h, err := ea.Campaign(ctx, fmt.Sprintf("a%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		first[i] = h
		eb, _ := elect.NewElection(b, groups[i])
		second[i] = make(chan *elect.Handle, 1)
		go func() {
			h, err := eb.Campaign(ctx, fmt.Sprintf("b%02d", i))
			if err != nil {
				t.Errorf("campaign b%02d: %v", i, err)
			}
			second[i] <- h
		}()
		waitQueue(t, ea, 2)
	}
	mctx, cancel := context.WithCancel(ctx)
	m, err := elect.ObserveMany(mctx, obs, elect.Workers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	for _, g := range groups {
		if err := m.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Add(groups[0]); err == nil {
		t.Fatal("adding a group twice was accepted")
	}
	owners := map[string]string{}
	take := func(want int) {
		t.Helper()
		for got := 0; got < want; {
			c := next(t, m)
			if c.Kind == elect.Joined || c.Kind == elect.Left {
				continue
			}
			if c.Owner == nil {
				t.Fatalf("%s: %s with no owner", c.Group, c.Kind)
			}
			if c.Gap {
				t.Fatalf("%s: %s reported a gap: %+v", c.Group, c.Kind, c)
			}
			owners[c.Group] = c.Owner.ID
			got++
		}
	}
	take(n)
	for i, g := range groups {
		if owners[g] != fmt.Sprintf("a%02d", i) {
			t.Fatalf("snapshot of %s: owner %q, want a%02d", g, owners[g], i)
		}
	}
	if m.Len() != n {
		t.Fatalf("Len %d, want %d", m.Len(), n)
	}
	// Drop the last group: nothing more is said about it.
	m.Remove(groups[n-1])
	for i := range n {
		if err := first[i].Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	take(n - 1)
	for i, g := range groups[:n-1] {
		if owners[g] != fmt.Sprintf("b%02d", i) {
			t.Fatalf("after the resignations %s is owned by %q, want b%02d", g, owners[g], i)
		}
		if v, ok := m.Last(g); !ok || v.Owner == nil || v.Owner.ID != owners[g] {
			t.Fatalf("Last(%s) = %+v, %v; want owner %s", g, v.Owner, ok, owners[g])
		}
	}
	if owners[groups[n-1]] != fmt.Sprintf("a%02d", n-1) {
		t.Fatalf("removed group %s still reported: owner %q", groups[n-1], owners[groups[n-1]])
	}
	select {
	case c := <-m.Changes():
		if c.Kind != elect.Joined && c.Kind != elect.Left {
			t.Fatalf("unexpected change after the handovers: %+v", c)
		}
	case <-time.After(300 * time.Millisecond):
	}
}

// A group whose read fails for a reason of its own reads Unknown, is
// retried, and its next snapshot is measured against what was seen before.
func TestManyRetriesAFailedGroup(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	p := proxyTo(t, addrs[0])
	obs := session(t, []string{p.Addr()}, elect.WithSessionTimeout(10*time.Second))
	a, admin := session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	ea, _ := elect.NewElection(a, path, elect.CreateParents())
	if _, err := ea.Campaign(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan string, 16)
	mctx, cancel := context.WithCancel(ctx)
	m, err := elect.ObserveMany(mctx, obs, elect.OnGroupError(time.Second, func(group string, err error, in time.Duration) {
		errs <- fmt.Sprintf("%s: %v (retry in %v)", group, err, in)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	if err := m.Add(path); err != nil {
		t.Fatal(err)
	}
	expect(t, m, elect.Snapshot, ownerIs("alpha"))
	// Nobody may list the group any more (ZooKeeper then also stops
	// telling its watchers): the read after a connection blip fails.
	if _, err := admin.Conn().SetACL(path, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermWrite|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Conn().Create(path+"/n_0000000099", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	expect(t, m, elect.Unknown, nil)
	select {
	case e := <-errs:
		t.Logf("reported: %s", e)
	case <-time.After(5 * time.Second):
		t.Fatal("the failed read was not reported")
	}
	if _, err := admin.Conn().SetACL(path, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	c := expect(t, m, elect.Snapshot, ownerIs("alpha"))
	if len(c.Queue) != 2 || c.Queue[1].Node != "n_0000000099" || c.Gap {
		t.Fatalf("snapshot after the retry: %+v; want alpha owning, the new node behind it, no gap", c)
	}
}

// ZooKeeper tells a watcher nothing about a node it may not read, and the
// watch is spent: without Resync a group whose ACL is taken away from the
// observer, and given back, is never read again. With Resync the observer
// finds both: the group reads Unknown, and why is reported, while READ is
// refused; a change made meanwhile is read once READ is back; and a change
// made while READ was briefly away (its watch spent unheard) is read too.
func TestManyResyncFindsWhatNoWatchSaid(t *testing.T) {
	path, obs, admin, ctx := alphaLeads(t)
	errs := make(chan string, 64)
	mctx, cancel := context.WithCancel(ctx)
	m, err := elect.ObserveMany(mctx, obs, elect.Resync(time.Second), elect.OnGroupError(200*time.Millisecond, func(group string, err error, _ time.Duration) {
		select {
		case errs <- err.Error():
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	if err := m.Add(path); err != nil {
		t.Fatal(err)
	}
	expect(t, m, elect.Snapshot, ownerIs("alpha"))
	noRead := zk.WorldACL(zk.PermCreate | zk.PermDelete | zk.PermWrite | zk.PermAdmin)
	if _, err := admin.Conn().SetACL(path, noRead, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Conn().Create(path+"/n_0000000098", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	expect(t, m, elect.Unknown, nil)
	select {
	case e := <-errs:
		if !strings.Contains(e, "may not list "+path) {
			t.Errorf("reported %q; want it to say the group may not be listed", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the refused read was not reported")
	}
	if _, err := admin.Conn().SetACL(path, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	c := expect(t, m, elect.Snapshot, ownerIs("alpha"))
	if len(c.Queue) != 2 || c.Queue[1].Node != "n_0000000098" {
		t.Fatalf("snapshot once READ is back: %+v; want alpha owning, the node made meanwhile behind it", c)
	}
	// READ away for a moment, long enough for a change's event to be
	// dropped: the spent watch never fires again, Resync reads the change.
	if _, err := admin.Conn().SetACL(path, noRead, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Conn().Create(path+"/n_0000000099", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Conn().SetACL(path, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-m.Changes():
			if c.Kind == elect.Joined && c.Candidate != nil && c.Candidate.Node == "n_0000000099" ||
				c.Kind == elect.Snapshot && len(c.Queue) == 3 {
				return
			}
		case <-deadline:
			t.Fatal("the node made while READ was away was never reported")
		}
	}
}

// alphaLeads is an election group where alpha leads, a session to
// observe it with, an admin session, and a context for the test.
func alphaLeads(t *testing.T) (path string, obs, admin *elect.Session, ctx context.Context) {
	t.Helper()
	addrs := sharedAddrs(t)
	path = groupPath(t)
	obs, a, admin := session(t, addrs), session(t, addrs), session(t, addrs)
	ctx = ctxT(t, 40*time.Second)
	ea, _ := elect.NewElection(a, path, elect.CreateParents())
	if _, err := ea.Campaign(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	return path, obs, admin, ctx
}

// TestManyChecksALateGroupWithinARound: groups come after ObserveMany
// starts (Add), so its first round of checks finds none. That round
// lasted as long as a full one, and a group added meanwhile was first
// checked at the end of the next: after twice the round, 60 s for a
// bridge's one group (its 30 s floor), where a release the observer may
// not READ of went unseen all that while.
func TestManyChecksALateGroupWithinARound(t *testing.T) {
	path, obs, admin, ctx := alphaLeads(t)
	const round = 4 * time.Second
	mctx, cancel := context.WithCancel(ctx)
	m, err := elect.ObserveMany(mctx, obs, elect.Resync(time.Minute), elect.ResyncSooner(33, round))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-m.Done() })
	time.Sleep(200 * time.Millisecond) // the first round began, over no groups
	added := time.Now()
	if err := m.Add(path); err != nil {
		t.Fatal(err)
	}
	expect(t, m, elect.Snapshot, ownerIs("alpha"))
	noRead := zk.WorldACL(zk.PermCreate | zk.PermDelete | zk.PermWrite | zk.PermAdmin)
	if _, err := admin.Conn().SetACL(path, noRead, -1); err != nil {
		t.Fatal(err)
	}
	expect(t, m, elect.Unknown, nil)
	if took := time.Since(added); took > round+round/2 {
		t.Errorf("the group, added just after ObserveMany began, was first checked %v later; want within a round (%v) and the empty round's second", took.Round(time.Millisecond), round)
	}
}

// TestManySettle: once the session has heard a change (a round trip made
// after it), Settle returns only when the group was read again and the
// change is on Changes, unread: a bridge about to confirm its values after
// a freeze has published everything it heard.
func TestManySettle(t *testing.T) {
	addrs := sharedAddrs(t)
	path := groupPath(t)
	obs, a, b := session(t, addrs), session(t, addrs), session(t, addrs)
	ctx := ctxT(t, 30*time.Second)
	ea, _ := elect.NewElection(a, path, elect.CreateParents())
	ha, err := ea.Campaign(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	m, err := elect.ObserveMany(ctx, obs)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(path); err != nil {
		t.Fatal(err)
	}
	expect(t, m, elect.Snapshot, ownerIs("alpha"))
	eb, _ := elect.NewElection(b, path)
	go func() { _, _ = eb.Campaign(ctx, "beta") }()
	queued := func() bool {
		ch, _, err := a.Conn().Children(path)
		return err == nil && len(ch) == 2
	}
	for !queued() {
		time.Sleep(5 * time.Millisecond) // polling interval, not ordering
	}
	if err := ha.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	// ZooKeeper sends the observer's session the watch events of the
	// changes above before the answer to this request.
	if _, _, err := obs.Conn().Exists("/"); err != nil {
		t.Fatal(err)
	}
	if !m.Settle(ctx) {
		t.Fatal("Settle gave up")
	}
	// Everything heard is on Changes now: taken without waiting.
	for {
		select {
		case c := <-m.Changes():
			if c.Owner != nil && c.Owner.ID == "beta" {
				return
			}
		default:
			t.Fatal("Settle returned before beta's election, which the session had heard, was on Changes")
		}
	}
}

// TestManySettleAfterTheEnd: once Many has ended nothing more reaches
// Changes, so Settle cannot say the observers caught up; it said so when
// no group was pending, and a bridge would have confirmed its values on it.
func TestManySettleAfterTheEnd(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	mctx, cancel := context.WithCancel(ctx)
	m, err := elect.ObserveMany(mctx, session(t, sharedAddrs(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(groupPath(t)); err != nil {
		t.Fatal(err)
	}
	<-m.Changes() // the snapshot: nothing pending now
	cancel()
	<-m.Done()
	if m.Settle(ctx) {
		t.Error("Settle after Many ended: true; want false")
	}
}
