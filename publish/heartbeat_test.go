package publish

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHeartbeatJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	h := Heartbeat{Source: "bridge@host", State: BridgeStopped, Time: at, Interval: 1500 * time.Millisecond, HA: "/herald/ha", Confirmed: at.Add(-time.Second)}
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"interval":"1.5s"`) || !strings.Contains(string(data), `"state":"stopped"`) {
		t.Fatalf("heartbeat JSON %s: want the interval as a duration and the state", data)
	}
	got, err := DecodeHeartbeat(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != h.Source || got.State != h.State || !got.Time.Equal(h.Time) || got.Interval != h.Interval || got.HA != h.HA || !got.Confirmed.Equal(h.Confirmed) {
		t.Fatalf("round trip: %+v, want %+v", got, h)
	}
	for _, bad := range []string{`{}`, `{"source":"x","state":"dancing","time":"2026-01-01T00:00:00Z","interval":"1s"}`,
		`{"source":"x","state":"active","time":"2026-01-01T00:00:00Z","interval":"soon"}`, `not json`} {
		if _, err := DecodeHeartbeat([]byte(bad)); err == nil {
			t.Errorf("DecodeHeartbeat(%s) accepted it", bad)
		}
	}
}

// BridgeKey gives every source one valid KV key (a single token), and two
// sources never share a key.
func TestBridgeKey(t *testing.T) {
	valid := regexp.MustCompile(`^[-_=A-Za-z0-9]+$`) // a KV key without '.' (one subject token) or '/'
	seen := map[string]string{}
	for _, src := range []string{"herald-bridge@host.example.com", "a.b", "a=2Eb", "a/b", "a b", "ünï", "x", "X", "a_b-c"} {
		k := BridgeKey(src)
		if !valid.MatchString(k) {
			t.Errorf("BridgeKey(%q) = %q: not a one-token KV key", src, k)
		}
		if prev, dup := seen[k]; dup {
			t.Errorf("BridgeKey(%q) = BridgeKey(%q) = %q", src, prev, k)
		}
		seen[k] = src
		if back, ok := SourceOfBridgeKey(k); !ok || back != src {
			t.Errorf("SourceOfBridgeKey(%q) = %q, %v; want %q", k, back, ok, src)
		}
	}
	for _, k := range []string{"", "a.b", "a=2", "a=zz", "a=41"} { // '=41' is 'A', which a key holds plain
		if src, ok := SourceOfBridgeKey(k); ok {
			t.Errorf("SourceOfBridgeKey(%q) = %q: no BridgeKey gives it", k, src)
		}
	}
	if k := BridgeKey("bridge-1"); k != "bridge-1" {
		t.Errorf("a plain source should be its own key, got %q", k)
	}
}

func TestBridgesJudge(t *testing.T) {
	now := time.Now()
	hb := func(src string, st BridgeState, ago time.Duration, ha string) Heartbeat {
		return Heartbeat{Source: src, State: st, Time: now.Add(-ago), Interval: time.Second, HA: ha, Confirmed: now.Add(-ago - time.Second)}
	}
	b := NewBridges()
	for _, h := range []Heartbeat{
		hb("fresh", BridgeActive, time.Second, ""),
		hb("late", BridgeActive, 4*time.Second, ""), // bound 3s
		hb("gone", BridgeStopped, time.Second, ""),
		hb("idle", BridgeStandby, time.Second, ""),
		hb("ha-dead", BridgeActive, time.Minute, "/ha"),
		hb("ha-live", BridgeActive, time.Second, "/ha"),
		hb("other-ha", BridgeStopped, time.Second, "/elsewhere"),
	} {
		if !b.Put(h) {
			t.Fatalf("Put(%s) changed nothing", h.Source)
		}
	}
	for _, c := range []struct {
		name    string
		writers []string
		stale   bool
		by      string
		judged  bool
		reason  string
	}{
		{"no writer", nil, false, "", false, ""},
		{"writer without heartbeats", []string{"old-herald"}, false, "old-herald", false, ""},
		{"active within the bound", []string{"fresh"}, false, "fresh", true, ""},
		{"active past the bound", []string{"late"}, true, "late", true, "no heartbeat for 4s"},
		{"stopped", []string{"gone"}, true, "gone", true, "gone stopped"},
		{"standing by", []string{"idle"}, true, "idle", true, "not publishing"},
		{"its HA election's active bridge confirms it", []string{"ha-dead"}, false, "ha-live", true, ""},
		{"another election's bridge does not", []string{"other-ha"}, true, "other-ha", true, "stopped"},
		{"any writer confirming is enough", []string{"gone", "fresh"}, false, "fresh", true, ""},
	} {
		f := b.Judge(now, c.writers...)
		if f.Stale != c.stale || f.ConfirmedBy != c.by || (f.BridgeState != "") != c.judged || !strings.Contains(f.StaleReason, c.reason) {
			t.Errorf("%s: %+v, want stale %t by %q judged %t reason %q", c.name, f, c.stale, c.by, c.judged, c.reason)
		}
		if !f.Stale && c.judged && !f.StaleAt.After(now) {
			t.Errorf("%s: fresh, but StaleAt %v is not ahead", c.name, f.StaleAt)
		}
	}
	// The bound moves with the heartbeats: fresh turns stale at StaleAt.
	f := b.Judge(now, "fresh")
	if g := b.Judge(f.StaleAt.Add(time.Millisecond), "fresh"); !g.Stale {
		t.Errorf("still fresh after StaleAt: %+v", g)
	}
	// A bridge that stopped says when it last confirmed.
	if g := b.Judge(now, "gone"); !g.Confirmed.Equal(now.Add(-2*time.Second)) || !strings.Contains(g.Describe(now), "last confirmed by gone at ") {
		t.Errorf("stopped bridge: %+v, %q", g, g.Describe(now))
	}
	// The last heartbeat given wins, whatever its time.
	if !b.Put(hb("gone", BridgeActive, 2*time.Second, "")) || b.Judge(now, "gone").Stale {
		t.Error("a later record of the same bridge did not replace the stopped one")
	}
}

// An active heartbeat confirms every group of its bridge but those it
// lists as unconfirmed: their values are stale, confirmed up to the time
// the bridge stopped reading them; Judge, which knows no group, cannot
// tell.
func TestUnconfirmedGroupIsStale(t *testing.T) {
	now := time.Now()
	since := now.Add(-7 * time.Second)
	h := Heartbeat{Source: "b1", State: BridgeActive, Time: now.Add(-time.Second), Interval: time.Second,
		Unconfirmed: map[string]time.Time{"/locked-out": since, "/never-read": {}}}
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"unconfirmed":{"/locked-out":"`) {
		t.Fatalf("heartbeat JSON %s: want the unconfirmed groups", data)
	}
	got, err := DecodeHeartbeat(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Unconfirmed) != 2 || !got.Unconfirmed["/locked-out"].Equal(since) {
		t.Fatalf("round trip lost the unconfirmed groups: %+v", got.Unconfirmed)
	}
	b := NewBridges()
	b.Put(got)
	if f := b.JudgeGroup(now, "/readable", "b1"); f.Stale {
		t.Errorf("a group the heartbeat confirms: %+v", f)
	}
	f := b.JudgeGroup(now, "/locked-out", "b1")
	if !f.Stale || !f.Confirmed.Equal(since) || !strings.Contains(f.StaleReason, "b1 cannot read the group since ") || !f.StaleAt.IsZero() {
		t.Errorf("an unconfirmed group: %+v, want stale, confirmed at %v", f, since)
	}
	if f := b.JudgeGroup(now, "/never-read", "b1"); !f.Stale || !strings.Contains(f.StaleReason, "since it started") {
		t.Errorf("a group never read: %+v", f)
	}
	if f := b.Judge(now, "b1"); f.Stale {
		t.Errorf("Judge without a group: %+v", f)
	}
	// A standby or stopped bridge's list says nothing more than its state.
	got.State, got.Time = BridgeStopped, now
	b.Put(got)
	if f := b.JudgeGroup(now, "/locked-out", "b1"); !f.Stale || !strings.Contains(f.StaleReason, "stopped") {
		t.Errorf("a stopped bridge's unconfirmed group: %+v", f)
	}
}

// The follower judges a group by the bridges that reported its current
// state: a takeover's re-statement (a duplicate by id) from another bridge
// makes it fresh again.
func TestFollowerFreshness(t *testing.T) {
	f, err := NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	const g = "/fresh/g"
	gain := ev(LeaderElected, g, "a", "", 10, 10)
	gain.Source = "b1"
	if f.Judge(gain) != Applied {
		t.Fatal("gain not applied")
	}
	now := time.Now()
	if fr := f.Freshness(g, now); fr.Stale || fr.ConfirmedBy != "b1" || fr.BridgeState != "" {
		t.Fatalf("before any heartbeat: %+v, want not judged, by b1", fr)
	}
	f.Heartbeat(Heartbeat{Source: "b1", State: BridgeStopped, Time: now, Interval: time.Second})
	if fr := f.Freshness(g, now); !fr.Stale {
		t.Fatalf("b1 stopped: %+v, want stale", fr)
	}
	if st := f.Current()[g]; !st.Stale || st.Owner == nil || st.Owner.Node != "a" {
		t.Fatalf("Current: %+v, want a, stale", st)
	}
	f.Heartbeat(Heartbeat{Source: "b2", State: BridgeActive, Time: now, Interval: time.Second})
	again := gain
	again.Source, again.Snapshot = "b2", true
	if v := f.Judge(again); v != Duplicate {
		t.Fatalf("re-statement: %v, want duplicate", v)
	}
	if fr := f.Freshness(g, now); fr.Stale || fr.ConfirmedBy != "b2" {
		t.Fatalf("after b2 re-stated it: %+v, want fresh by b2", fr)
	}
	// A late duplicate of an older term re-states nothing.
	f.Heartbeat(Heartbeat{Source: "b4", State: BridgeActive, Time: now, Interval: time.Second})
	f.Heartbeat(Heartbeat{Source: "b5", State: BridgeStopped, Time: now, Interval: time.Second})
	old := ev(LeaderElected, "/fresh/h", "x", "", 5, 5)
	old.Source = "b1"
	f.Judge(old)
	newer := ev(LeaderElected, "/fresh/h", "y", "x", 6, 6)
	newer.Source = "b5"
	f.Judge(newer)
	old.Source = "b4"
	if v := f.Judge(old); v != Duplicate {
		t.Fatalf("old term again: %v", v)
	}
	if fr := f.Freshness("/fresh/h", now); !fr.Stale || fr.ConfirmedBy != "b5" {
		t.Fatalf("an old term's duplicate changed who confirms the group: %+v, want stale by b5", fr)
	}
}

// Differs says when a reader must hear of a value again: not for every
// heartbeat (Confirmed and StaleAt move on), but when the value turns
// stale or fresh, or when who confirms it or that bridge's state changes.
func TestFreshnessDiffers(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fresh := Freshness{ConfirmedBy: "b1", Confirmed: at, BridgeState: BridgeActive, StaleAt: at.Add(time.Second)}
	later := fresh
	later.Confirmed, later.StaleAt = at.Add(time.Second), at.Add(2*time.Second)
	if fresh.Differs(later) {
		t.Error("a later heartbeat alone differs")
	}
	for name, g := range map[string]Freshness{
		"stale":          {Stale: true, ConfirmedBy: "b1", Confirmed: at, BridgeState: BridgeActive, StaleReason: "no heartbeat"},
		"not judged yet": {},
		"another bridge": {ConfirmedBy: "b2", Confirmed: at, BridgeState: BridgeActive},
		"standing by":    {ConfirmedBy: "b1", Confirmed: at, BridgeState: BridgeStandby},
	} {
		if !fresh.Differs(g) || !g.Differs(fresh) {
			t.Errorf("%s: does not differ from a fresh, confirmed value", name)
		}
	}
}

// While the store of heartbeats exists but cannot be read, a value whose
// bridge has no heartbeat in the table is stale, saying why; once it can
// be read again (or is known not to exist), such a value goes unjudged as
// before, and a bridge's own heartbeat judges its values either way.
func TestBridgesUnreadableMakesUnjudgedValuesStale(t *testing.T) {
	now := time.Now()
	b := NewBridges()
	b.Put(Heartbeat{Source: "known", State: BridgeActive, Time: now, Interval: time.Second})
	b.SetUnreadable(errors.New("JetStream system temporarily unavailable"))
	if f := b.JudgeGroup(now, "/g", "unknown"); !f.Stale || !strings.Contains(f.StaleReason, "temporarily unavailable") {
		t.Fatalf("a value of a bridge without a heartbeat, heartbeats unreadable: %+v; want stale, saying why", f)
	}
	if f := b.JudgeGroup(now, "/g", "known"); f.Stale {
		t.Fatalf("a value of a bridge whose heartbeat is fresh: %+v; want fresh", f)
	}
	b.SetUnreadable(nil)
	if f := b.JudgeGroup(now, "/g", "unknown"); f.Stale || f.ConfirmedBy != "unknown" {
		t.Fatalf("heartbeats readable again: %+v; want unjudged", f)
	}
}

// A bridge confirms only the groups its scope holds: one restarted without
// a group, or an HA copy configured with fewer groups than the one it took
// over from, leaves the dropped groups' values stale, not fresh for as long
// as it heartbeats. A heartbeat with no scope (an older bridge) confirms
// every group.
func TestHeartbeatConfirmsOnlyItsScope(t *testing.T) {
	now := time.Now()
	sc := &Scope{Watch: []string{"/kept"}, Discover: []string{"/services"}, Patterns: []string{"/hbase/*/master"}}
	h := Heartbeat{Source: "b1", State: BridgeActive, Time: now.Add(-time.Second), Interval: time.Second, HA: "/ha", Scope: sc}
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHeartbeat(data)
	if err != nil || got.Scope == nil || !slices.Equal(got.Scope.Watch, sc.Watch) {
		t.Fatalf("round trip of %s: %+v, %v; want the scope back", data, got.Scope, err)
	}
	b := NewBridges()
	b.Put(got)
	b.Put(Heartbeat{Source: "b0", State: BridgeStopped, Time: now.Add(-time.Minute), Interval: time.Second, HA: "/ha"})
	for _, g := range []string{"/kept", "/services/a", "/hbase/one/master"} {
		if f := b.JudgeGroup(now, g, "b0"); f.Stale {
			t.Errorf("%s, in the active bridge's scope, written by its stopped peer: %+v", g, f)
		}
	}
	for _, g := range []string{"/dropped", "/services/a/b", "/hbase/one/regions"} {
		if f := b.JudgeGroup(now, g, "b0"); !f.Stale {
			t.Errorf("%s, outside the active bridge's scope, written by its stopped peer: %+v; want stale", g, f)
		}
		if f := b.JudgeGroup(now, g, "b1"); !f.Stale || !strings.Contains(f.StaleReason, "does not observe the group") {
			t.Errorf("%s, written by the active bridge before it dropped the group: %+v; want stale, saying why", g, f)
		} else if d := f.Describe(now); strings.Contains(d, "never") || !strings.HasPrefix(d, "no longer confirmed (") {
			// b1 wrote the value, so it confirmed it then.
			t.Errorf("%s, written by the active bridge before it dropped the group, described %q; want no longer confirmed, not never", g, d)
		}
	}
	sharded := &Scope{Discover: []string{"/services"}, ShardK: 1, ShardN: 2}
	for _, g := range []string{"/services/a", "/services/b", "/services/c", "/services/d"} {
		if want := ShardOf(g, 2) == 1; sharded.Covers(g) != want {
			t.Errorf("shard 1/2 covers %s: %v, want %v", g, !want, want)
		}
	}
	var none *Scope
	if !none.Covers("/anything") {
		t.Error("no scope (an older bridge) must cover every group")
	}
}

// A child of a discover root (or a pattern's match) that the bridge skips,
// not being a group, is out of its scope: "no owner" there is not
// confirmed. Nor is /zookeeper under a discover root "/".
func TestScopeSkipsWhatTheBridgeSkips(t *testing.T) {
	now := time.Now()
	sc := &Scope{Discover: []string{"/jobs", "/"}, Patterns: []string{"/solr/*/leader", "/*/ActiveStandbyElectorLock"},
		Skip: []string{`/jobs/lock-0000000001`, `/jobs/odd\*name`, `/solr/c\[1/leader`}}
	b := NewBridges()
	b.Put(Heartbeat{Source: "b1", State: BridgeActive, Time: now, Interval: time.Second, Scope: sc})
	for _, g := range []string{"/jobs/1732650000", "/jobs/oddxname", "/solr/c1/leader", "/top"} {
		if f := b.JudgeAbsent(now, g); f.Stale {
			t.Errorf("%s, observed: %+v; want fresh", g, f)
		}
	}
	for _, g := range []string{"/jobs/lock-0000000001", "/jobs/odd*name", "/solr/c[1/leader", "/zookeeper", "/zookeeper/ActiveStandbyElectorLock"} {
		f := b.JudgeAbsent(now, g)
		if !f.Stale || !strings.Contains(f.StaleReason, "not groups") && !strings.HasPrefix(g, "/zookeeper") {
			t.Errorf("%s, skipped: %+v; want stale, saying the bridge skips it", g, f)
		}
	}
}

// TestHeartbeatOutsideItsScopeDatesNothing: a bridge restarted under the
// same source without a group confirms other groups; its heartbeats must
// not date this one. history printed "last confirmed" at such a
// heartbeat's time, after the owner it left open had released (found by
// an adversarial test).
func TestHeartbeatOutsideItsScopeDatesNothing(t *testing.T) {
	now := time.Now()
	b := NewBridges()
	b.Put(Heartbeat{Source: "b1", State: BridgeActive, Time: now, Confirmed: now, Interval: time.Second, Scope: &Scope{Watch: []string{"/other"}}})
	f := b.JudgeGroup(now, "/dropped", "b1")
	if !f.Stale || !f.Confirmed.IsZero() {
		t.Errorf("a group outside the heartbeat's scope: stale %v, confirmed %v; want stale and no confirmation", f.Stale, f.Confirmed)
	}
}

// TestAbsentWithNoHeartbeatIsNotNoOwner: a store without a single
// heartbeat says nothing of a group it holds no value of. A bridge
// starting makes its stores before its first heartbeat, and before it has
// read its groups; who said "no owner", not stale, of a group that had one
// in that window (found when a test campaigned in it).
func TestAbsentWithNoHeartbeatIsNotNoOwner(t *testing.T) {
	f := NewBridges().JudgeAbsent(time.Now(), "/jobs/nightly")
	if !f.Stale || !strings.Contains(f.StaleReason, "no bridge has sent a heartbeat") {
		t.Fatalf("absent, with no heartbeat at all: %+v; want stale, saying no bridge sent a heartbeat", f)
	}
}

// TestOwnerNamingNoBridgeWithNoHeartbeatIsNotJudged: a group whose events
// name no bridge (Source empty: a herald from before events named their
// bridge, or events published by hand) has an owner; while no heartbeat is
// stored at all, its writer is one that sends none, and the value is not
// judged, as the top of heartbeat.go says. Judged as an absence, it read
// stale, "nothing confirms that the group has no owner", beside the owner
// it named (who --kafka exited 4).
func TestOwnerNamingNoBridgeWithNoHeartbeatIsNotJudged(t *testing.T) {
	f := followerOfAnUnsignedOwner(t)
	if fr := f.Freshness("/jobs/nightly", time.Now()); fr.Stale {
		t.Errorf("an owner whose events name no bridge, with no heartbeat stored: %+v; want not judged", fr)
	}
	if fr := f.Freshness("/jobs/other", time.Now()); !fr.Stale {
		t.Errorf("a group never seen, with no heartbeat stored: %+v; want stale", fr)
	}
}

// TestOwnerNamingNoBridgeAfterHeartbeatsDeletedIsStale: a store whose
// heartbeats were all deleted (purged, or removed by hand) is one
// bridges that send heartbeats wrote to: an owner value that names no
// bridge there is judged as an absence, stale, as it was before values
// naming no bridge were left unjudged with no heartbeat stored, not passed
// as one whose writer sends none (which read it fresh).
func TestOwnerNamingNoBridgeAfterHeartbeatsDeletedIsStale(t *testing.T) {
	f := followerOfAnUnsignedOwner(t)
	f.Bridges().Removed("bridge-1", time.Now())
	if fr := f.Freshness("/jobs/nightly", time.Now()); !fr.Stale {
		t.Errorf("an owner whose events name no bridge, every heartbeat deleted: %+v; want stale", fr)
	}
}

// TestAbsentAfterEveryHeartbeatWasDeletedSaysSo: with every heartbeat
// deleted from the store, an absent group's stale reason says so, not that
// no bridge ever sent one.
func TestAbsentAfterEveryHeartbeatWasDeletedSaysSo(t *testing.T) {
	now := time.Now()
	b := NewBridges()
	b.Put(Heartbeat{Source: "b1", State: BridgeActive, Time: now, Confirmed: now, Interval: time.Second})
	b.Removed("b1", now)
	f := b.JudgeAbsent(now, "/jobs/nightly")
	if !f.Stale || !strings.Contains(f.StaleReason, "heartbeat was deleted") || strings.Contains(f.StaleReason, "no bridge has sent") {
		t.Fatalf("absent, every heartbeat deleted: %+v; want stale, saying the heartbeats were deleted", f)
	}
}

// followerOfAnUnsignedOwner is a follower that applied a gain of
// /jobs/nightly whose event names no bridge (Source empty).
func followerOfAnUnsignedOwner(t *testing.T) *Follower {
	t.Helper()
	f, err := NewFollower()
	if err != nil {
		t.Fatal(err)
	}
	e := ev(LeaderElected, "/jobs/nightly", "a", "", 10, 10)
	e.Source = ""
	if !f.Apply(e.WithID()) {
		t.Fatal("the gain was not applied")
	}
	return f
}

// A heartbeat dated ahead of the reader's clock by more than its bound
// cannot say how long ago it was written: it confirms nothing, and says
// the clocks disagree. One ahead by less is read as written: clocks a
// little apart are what the bound leaves room for.
func TestHeartbeatDatedAheadConfirmsNothing(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		ahead time.Duration
		stale bool
	}{{10 * time.Minute, true}, {2 * time.Second, true}, {500 * time.Millisecond, false}, {0, false}} {
		b := NewBridges()
		b.Put(Heartbeat{Source: "b1", State: BridgeActive, Time: now.Add(c.ahead), Confirmed: now.Add(c.ahead), Interval: 100 * time.Millisecond})
		f := b.JudgeGroup(now, "/g", "b1")
		if f.Stale != c.stale || c.stale && !strings.Contains(f.StaleReason, "ahead of this host's clock") {
			t.Errorf("heartbeat %v ahead: %+v, want stale %v", c.ahead, f, c.stale)
		}
	}
}
