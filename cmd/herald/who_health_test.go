package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	jsapi "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
)

// health counts the owner changes of the last hour (each event id once,
// snapshots only when they name another owner) and, with no owner, says
// since when.
func TestHealthFromEvents(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p := func(n string) *publish.Participant { return &publish.Participant{ID: n, Node: n} }
	ev := func(id string, typ publish.Type, owner *publish.Participant, ago time.Duration, snap bool) publish.Event {
		return publish.Event{ID: id, Type: typ, Owner: owner, Time: now.Add(-ago), Snapshot: snap}
	}
	events := []publish.Event{
		ev("0", publish.LeaderElected, p("a"), 2*time.Hour, false), // too old to count
		ev("1", publish.LeaderElected, p("b"), 50*time.Minute, false),
		ev("1", publish.LeaderElected, p("b"), 50*time.Minute, false), // the same change twice
		ev("2", publish.LeaderElected, p("b"), 40*time.Minute, true),  // a snapshot re-states it
		ev("3", publish.LeaderLost, p("c"), 30*time.Minute, false),
		ev("4", publish.LeaderElected, p("c"), 30*time.Minute, false),
		ev("5", publish.LeaderLost, nil, 10*time.Minute, false),
	}
	n, since, atMost, missed := health(events, now)
	if n != 2 || since == nil || !since.Equal(now.Add(-10*time.Minute)) || atMost || missed {
		t.Fatalf("health = %d, %v (at most %v, missed %v); want 2 changes, exactly, ownerless since exactly 10 minutes ago", n, since, atMost, missed)
	}
	// A loss its bridge saw late began at or before it was seen.
	late := slices.Clone(events)
	nb := now.Add(-15 * time.Minute)
	late[len(late)-1].NotBefore = &nb
	if _, since, atMost, _ := health(late, now); since == nil || !atMost {
		t.Fatalf("a loss seen late: ownerless since %v, at most %v; want it marked 'or earlier'", since, atMost)
	}
	// A reconnect's snapshot finding the group still without an owner,
	// nothing missed, leaves since when as it was; one with gap does not
	// (owners may have come and gone).
	still := append(slices.Clone(events), ev("5s", publish.LeaderLost, nil, 8*time.Minute, true))
	if _, since, _, _ := health(still, now); since == nil || !since.Equal(now.Add(-10*time.Minute)) {
		t.Fatalf("after a snapshot re-stating no owner: since %v, want 10 minutes ago still", since)
	}
	gap := ev("5g", publish.LeaderLost, nil, 7*time.Minute, true)
	gap.Gap = true
	if _, since, atMost, missed := health(append(still, gap), now); since == nil || !since.Equal(now.Add(-7*time.Minute)) || !atMost || !missed {
		t.Fatalf("after a snapshot with gap: since %v (at most %v), missed %v; want the snapshot's 7 minutes ago or earlier, and the count a lower bound", since, atMost, missed)
	}
	// A loss seen only in a snapshot (the bridge stalled, or reconnected,
	// while the owner left) came at that moment or before.
	unseen := append(slices.Clone(events[:len(events)-1]), ev("5u", publish.LeaderLost, nil, 9*time.Minute, true))
	if _, since, atMost, _ := health(unseen, now); since == nil || !since.Equal(now.Add(-9*time.Minute)) || !atMost {
		t.Fatalf("a loss seen in a snapshot: ownerless since %v, at most %v; want 9 minutes ago or earlier", since, atMost)
	}
	// A gap older than the hour leaves the count exact.
	old := ev("0g", publish.LeaderLost, nil, 90*time.Minute, true)
	old.Gap = true
	if _, _, _, missed := health(append([]publish.Event{old}, events...), now); missed {
		t.Fatal("a gap of two hours ago made the last hour's count a lower bound")
	}
	events = append(events, ev("6", publish.LeaderElected, p("d"), 5*time.Minute, false))
	if n, since, _, _ := health(events, now); n != 3 || since != nil {
		t.Fatalf("health after d took over = %d, %v; want 3 changes and an owner", n, since)
	}
	// A change seen only by a read afresh (a snapshot naming another
	// owner) counts; the same owner re-stated does not.
	events = append(events, ev("7", publish.LeaderElected, p("e"), 3*time.Minute, true), ev("8", publish.LeaderElected, p("e"), 2*time.Minute, true))
	if n, _, _, _ := health(events, now); n != 4 {
		t.Fatalf("health after a snapshot named e = %d; want 4 changes", n)
	}
}

// who --nats and --kafka say two owners are possible while the group's
// latest event says so, and not after an event without it.
func TestLastHazard(t *testing.T) {
	const why = "Kazoo Lock or Election (k__lock__0000000002) cannot read herald's node"
	events := []publish.Event{{ID: "1", Type: publish.LockAcquired}, {ID: "2", Type: publish.CandidateJoined, Hazard: why}}
	if got := lastHazard(events); got != why {
		t.Fatalf("lastHazard = %q; want the latest event's", got)
	}
	if got := lastHazard(append(events, publish.Event{ID: "3", Type: publish.CandidateLeft})); got != "" {
		t.Fatalf("lastHazard after the mix ended = %q; want none", got)
	}
	if got := lastHazard(nil); got != "" {
		t.Fatalf("lastHazard of no events = %q", got)
	}
}

// From ZooKeeper, a group a herald owner let go says since when it has
// had no owner.
func TestWhoSaysSinceWhenNoOwner(t *testing.T) {
	zk := zkFlags(t)
	l := uniq(t)
	if _, stderr, code := heraldRun(t, nil, append(zk, "lock", "--lock", l, "--", "true")...); code != 0 {
		t.Fatalf("lock: exit %d: %s", code, stderr)
	}
	out, stderr, code := heraldRun(t, nil, append(zk, "who", l)...)
	if code != exitNoOwner || !strings.Contains(out, "no owner since ") || !strings.Contains(out, " ago)") {
		t.Fatalf("who after the lock was released: exit %d:\n%s%s", code, out, stderr)
	}
}

// TestWhoSaysWhenItCannotReadTheHealth: who --nats whose owners bucket
// answers but whose stream cannot be read shows the owner, and warns that
// the group's health is not shown and why, rather than leaving it out
// silently.
func TestWhoSaysWhenItCannotReadTheHealth(t *testing.T) {
	url, s := jetStreamSink(t)
	g := uniq(t)
	write(t, s, story(g)...)
	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", url)
	if code != 0 || !strings.Contains(out, "owner changes in the last hour") || stderr != "" {
		t.Fatalf("who --nats: exit %d, want the health and nothing on stderr:\n%s%s", code, out, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := natsserver.JetStream(t, url).DeleteStream(ctx, jetstream.DefaultStream); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = heraldRun(t, nil, "who", g, "--nats", url)
	if code != 0 || !strings.Contains(out, "owner bravo") || !strings.Contains(stderr, "level=WARN") ||
		!strings.Contains(stderr, "could not read the group's history") || !strings.Contains(stderr, "stream not found") {
		t.Errorf("who --nats without the stream: exit %d, want the owner and a warning that its health could not be read:\n%s%s", code, out, stderr)
	}
}

// TestWhoChangesAfterAGapAreALowerBound: a bridge marked a gap in the last
// hour (it found another owner after a stretch it did not observe), so
// owners may have come and gone that no event counts. who said "3 owner
// changes in the last hour" as if that were all; it now says "at least".
func TestWhoChangesAfterAGapAreALowerBound(t *testing.T) {
	url, s := jetStreamSink(t)
	g := uniq(t)
	c := &publish.Participant{ID: "charlie", Node: "n_0000000007", Session: "0x7"}
	seen := publish.Event{Type: publish.LeaderElected, Group: g, Recipe: elect.RecipeElection, Owner: c, Term: 70, Zxid: 70,
		Snapshot: true, Gap: true, Time: time.Now().UTC(), Source: "test"}.WithID()
	write(t, s, append(story(g), seen)...)
	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", url)
	if code != 0 || !strings.Contains(out, "owner charlie") || !strings.Contains(out, "at least 3 owner changes in the last hour") {
		t.Fatalf("who --nats after a gap: exit %d, want charlie and at least 3 changes:\n%s%s", code, out, stderr)
	}
	out, stderr, code = heraldRun(t, nil, "who", g, "--nats", url, "--json")
	if code != 0 || !strings.Contains(out, `"changes_last_hour":3`) || !strings.Contains(out, `"changes_last_hour_at_least":true`) {
		t.Fatalf("who --nats --json after a gap: exit %d:\n%s%s", code, out, stderr)
	}
}

// TestJetStreamDownIsUnreachable: JetStream that answers "temporarily
// unavailable" (10008) or leaves a request unanswered is unreachable (exit
// 69); JetStream not enabled, a stream that does not exist, and a read the
// command itself ended are not.
func TestJetStreamDownIsUnreachable(t *testing.T) {
	ctx := context.Background()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		down bool
	}{
		{ctx, &jsapi.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{ctx, fmt.Errorf("read: %w", nats.ErrTimeout), true},
		{ctx, fmt.Errorf("read the owners bucket: %w", context.DeadlineExceeded), true},
		{ctx, fmt.Errorf("read stream: %w", errStalled), true},
		{ctx, jsapi.ErrJetStreamNotEnabled, false},
		{ctx, jsapi.ErrJetStreamNotEnabledForAccount, false},
		{ctx, fmt.Errorf("read: %w", jsapi.ErrStreamNotFound), false},
		{ctx, errors.New("bad"), false},
		{ended, context.DeadlineExceeded, false},
	} {
		err := jsErr(c.ctx, c.err)
		var down *jsDown
		if errors.As(err, &down) != c.down || unreachable(err) != c.down {
			t.Errorf("jsErr(%v) = %v, unreachable %t: want down %t", c.err, err, unreachable(err), c.down)
		}
	}
	if err := streamErr(ctx, jsapi.ErrStreamNotFound); !strings.Contains(err.Error(), "is a bridge publishing to JetStream?") || unreachable(err) {
		t.Errorf("streamErr(stream not found) = %v: want the hint, and not unreachable", err)
	}
	if err := streamErr(ctx, nats.ErrTimeout); strings.Contains(err.Error(), "is a bridge publishing") || !unreachable(err) {
		t.Errorf("streamErr(timeout) = %v: want JetStream unavailable, without the hint", err)
	}
}

// TestWhoChangesBeforeTheStoredEventsAreNotCounted: the group's oldest
// stored event is two minutes old (the stream's max age dropped the rest,
// or no bridge observed the group before), so changes earlier in the hour
// are not known. who said "2 owner changes in the last hour" as if that
// were all; it now says "at least" and when the events begin. Events that
// reach back past the hour leave the count exact.
func TestWhoChangesBeforeTheStoredEventsAreNotCounted(t *testing.T) {
	url, s := jetStreamSink(t)
	g := uniq(t)
	write(t, s, story(g)...)
	out, stderr, code := heraldRun(t, nil, "who", g, "--nats", url)
	if code != 0 || !strings.Contains(out, "at least 2 owner changes in the last hour (the group's stored events begin at ") {
		t.Fatalf("who --nats over two minutes of events: exit %d, want at least 2 changes and when the events begin:\n%s%s", code, out, stderr)
	}
	out, stderr, code = heraldRun(t, nil, "who", g, "--nats", url, "--json")
	if code != 0 || !strings.Contains(out, `"changes_last_hour_at_least":true`) || !strings.Contains(out, `"events_from":"`) {
		t.Fatalf("who --nats --json: exit %d:\n%s%s", code, out, stderr)
	}
	g2 := uniq(t) + "-old"
	old := story(g2)
	for i := range old {
		old[i].Time = old[i].Time.Add(-2 * time.Hour)
		old[i] = old[i].WithID()
	}
	c := &publish.Participant{ID: "charlie", Node: "n_0000000003", Session: "0x3"}
	now := publish.Event{Type: publish.LeaderElected, Group: g2, Recipe: elect.RecipeElection, Owner: c,
		Previous: &publish.Participant{ID: "bravo", Node: "n_0000000002", Session: "0x2"},
		Term:     30, Zxid: 30, Time: time.Now().UTC(), Source: "test"}.WithID()
	write(t, s, append(old, now)...)
	out, stderr, code = heraldRun(t, nil, "who", g2, "--nats", url)
	if code != 0 || !strings.Contains(out, "owner charlie") || !strings.Contains(out, ", 1 owner changes in the last hour") || strings.Contains(out, "at least") {
		t.Fatalf("who --nats over events older than the hour: exit %d, want exactly 1 change:\n%s%s", code, out, stderr)
	}
}
