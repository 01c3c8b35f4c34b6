package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestSameSourceInOneHAElectionRefused: a second bridge campaigning
// under the source of a live bridge of its HA election (two copies on one
// host, both with the default source) stops with ErrDuplicateSource,
// naming --source, and the first keeps publishing. Readers keep one
// heartbeat per source, so the two would have overwritten each other's.
func TestSameSourceInOneHAElectionRefused(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root, ha := groupPath(t), groupPath(t)
	cfg := bridge.Config{Servers: addrs, Discover: []string{root}, HAPath: ha, Source: "twin", SessionTimeout: 2 * time.Second, Sinks: []publish.Sink{jsSink(t, url)}}
	a := start(t, cfg)
	waitStatus(t, a.Bridge, 15*time.Second, "the first bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	cfg.Sinks = []publish.Sink{jsSink(t, url)}
	b := start(t, cfg)
	b.wait(t, 20*time.Second)
	if !isErr(b.err, bridge.ErrDuplicateSource) || !strings.Contains(b.err.Error(), "--source") {
		t.Errorf("second bridge named twin: %v; want ErrDuplicateSource naming --source", b.err)
	}
	if st := a.Status(); st.Role != bridge.RoleActive {
		t.Errorf("the first bridge is %s after the refusal, want active", st.Role)
	}
	// Another name in the same election is a standby, not refused.
	cfg.Source, cfg.Sinks = "other", []publish.Sink{jsSink(t, url)}
	c := start(t, cfg)
	waitStatus(t, c.Bridge, 15*time.Second, "the bridge named other standing by", func(st bridge.Status) bool { return st.Role == bridge.RoleStandby })
	staysUp(t, c, 2*cfg.SessionTimeout+time.Second, "a bridge of another name")
}

// TestSameSourceOfAPreviousProcessAwaited: a bridge restarted after a
// crash finds its previous process's candidate, of a session the server
// has not expired yet, under its own source. It waits for that candidate
// to go and then leads, rather than refusing.
func TestSameSourceOfAPreviousProcessAwaited(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root, ha := groupPath(t), groupPath(t)
	old := session(t, addrs)
	el, err := elect.NewElection(old, ha, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := el.Campaign(ctx, "restarted"); err != nil {
		t.Fatal(err)
	}
	cfg := bridge.Config{Servers: addrs, Discover: []string{root}, HAPath: ha, Source: "restarted", SessionTimeout: 2 * time.Second, Sinks: []publish.Sink{jsSink(t, url)}}
	r := start(t, cfg)
	waitStatus(t, r.Bridge, 15*time.Second, "the restarted bridge standing by", func(st bridge.Status) bool { return st.Role == bridge.RoleStandby })
	time.Sleep(time.Second) // the previous process's session lives on a while
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, r.Bridge, 15*time.Second, "the restarted bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	staysUp(t, r, 2*cfg.SessionTimeout+time.Second, "the restarted bridge")
}

// TestSameSourceWithoutHARefused: without HA nothing shared told two
// bridges of one name apart, and their heartbeats overwrote each other's.
// A bridge now claims its source in ZooKeeper; a second one of the same
// name (here observing other groups, as two bridges on one host with the
// default source do) stops with ErrDuplicateSource once the claim has
// stayed two session timeouts, naming --source and who holds it; the first
// keeps publishing. A claim left by a previous process goes with its
// session, and a bridge restarted after it publishes at once and stays.
func TestSameSourceWithoutHARefused(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	source := "twin-" + strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-")
	cfg := bridge.Config{Servers: addrs, Discover: []string{groupPath(t)}, Source: source, SessionTimeout: 2 * time.Second, Sinks: []publish.Sink{jsSink(t, url)}}
	a := start(t, cfg)
	waitStatus(t, a.Bridge, 15*time.Second, "the first bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	// The claim is made beside the publishing: of two bridges started
	// together either may hold it, and the other stops.
	look := session(t, addrs)
	deadline := time.Now().Add(10 * time.Second)
	for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first bridge never claimed its source")
		}
		ok, _, _ = look.Conn().Exists(bridge.SourcesRoot + "/" + source)
	}
	cfg.Discover, cfg.Sinks = []string{groupPath(t)}, []publish.Sink{jsSink(t, url)}
	b := start(t, cfg)
	b.wait(t, 20*time.Second)
	if !isErr(b.err, bridge.ErrDuplicateSource) || !strings.Contains(b.err.Error(), "--source") || !strings.Contains(b.err.Error(), "pid") {
		t.Errorf("second bridge named %s: %v; want ErrDuplicateSource naming --source and the holder", source, b.err)
	}
	if st := a.Status(); st.Role != bridge.RoleActive {
		t.Errorf("the first bridge is %s after the refusal, want active", st.Role)
	}

	// A previous process's claim, its session not yet expired.
	old := session(t, addrs)
	restarted := source + "-restarted"
	if err := elect.MakeSharedPath(old, bridge.SourcesRoot); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Conn().Create(bridge.SourcesRoot+"/"+restarted, nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cfg.Source, cfg.Sinks = restarted, []publish.Sink{jsSink(t, url)}
	r := start(t, cfg)
	waitStatus(t, r.Bridge, 15*time.Second, "the restarted bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	time.Sleep(time.Second)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	staysUp(t, r, 2*cfg.SessionTimeout+time.Second, "the restarted bridge")
	if ok, st, err := session(t, addrs).Conn().Exists(bridge.SourcesRoot + "/" + restarted); err != nil || !ok || st.EphemeralOwner == 0 {
		t.Errorf("the restarted bridge holds no claim: %v, %v", ok, err)
	}

	// A persistent node where the claim goes is no bridge's: it costs
	// the check, not the bridge.
	kept := source + "-kept"
	if _, err := session(t, addrs).Conn().Create(bridge.SourcesRoot+"/"+kept, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cfg.Source, cfg.Sinks = kept, []publish.Sink{jsSink(t, url)}
	k := start(t, cfg)
	waitStatus(t, k.Bridge, 15*time.Second, "the bridge beside a persistent node active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	staysUp(t, k, 2*cfg.SessionTimeout+time.Second, "the bridge beside a persistent node at its claim")
}

// staysUp fails the test if r, named what, stops within d: a bridge the
// source checks must let run.
func staysUp(t *testing.T, r *running, d time.Duration, what string) {
	t.Helper()
	select {
	case <-r.done:
		t.Errorf("%s stopped: %v", what, r.err)
	case <-time.After(d):
	}
}

// TestSameSourceClaimWithATimeoutNoSessionHasRefused: a source's claim
// whose timeout_ms no ZooKeeper session can have (written by hand: more
// than 2^31-1 ms, or enough to overflow) is taken as none. The bridge of
// the same source waited twice that (50 days for the first) instead of
// refusing after two of its own session timeouts (the second overflowed
// into a negative wait, and so did not wait); it now refuses then, and
// says what was wrong with the claim.
func TestSameSourceClaimWithATimeoutNoSessionHasRefused(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	holder := session(t, addrs)
	if err := elect.MakeSharedPath(holder, bridge.SourcesRoot); err != nil {
		t.Fatal(err)
	}
	for _, ms := range []int64{1<<31 + 1000, 9e15} {
		source := fmt.Sprintf("bogus-%d-%s", ms, strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-"))
		data := fmt.Sprintf(`{"source":%q,"host":"by-hand","pid":1,"since":"2026-01-01T00:00:00Z","timeout_ms":%d}`, source, ms)
		if _, err := holder.Conn().Create(bridge.SourcesRoot+"/"+source, []byte(data), gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
			t.Fatal(err)
		}
		cfg := bridge.Config{Servers: addrs, Discover: []string{groupPath(t)}, Source: source, SessionTimeout: 2 * time.Second, Sinks: []publish.Sink{jsSink(t, url)}}
		b := start(t, cfg)
		select {
		case <-b.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("timeout_ms %d: the bridge still waits for the claim, 30 s after it started (two of its session timeouts are 4 s)", ms)
		}
		if !isErr(b.err, bridge.ErrDuplicateSource) || !strings.Contains(b.err.Error(), "timeout_ms") {
			t.Errorf("timeout_ms %d: %v; want ErrDuplicateSource saying the claim's timeout_ms is none a session can have", ms, b.err)
		}
	}
}

// TestSameSourceOnTwoShardsRefused: two sharded HA bridges of one source,
// each on its own shard, campaign in separate elections, so checkSource
// never saw them; their heartbeats overwrote each other's, and each
// shard's values flapped between fresh and stale. A sharded HA bridge now
// claims its source as a bridge without HA does: the second stops with
// ErrDuplicateSource, naming --source, and the first keeps publishing.
func TestSameSourceOnTwoShardsRefused(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	root, ha := groupPath(t), groupPath(t)
	src := "twin-shards-" + strings.ReplaceAll(strings.TrimPrefix(root, "/"), "/", "-")
	cfg := func(k int) bridge.Config {
		return bridge.Config{Servers: addrs, Discover: []string{root}, HAPath: ha, Shard: bridge.Shard{K: k, N: 2}, Source: src,
			SessionTimeout: 2 * time.Second, Sinks: []publish.Sink{jsSink(t, url)}}
	}
	a := start(t, cfg(0))
	waitStatus(t, a.Bridge, 15*time.Second, "shard 0's bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	b := start(t, cfg(1))
	b.wait(t, 30*time.Second)
	if !isErr(b.err, bridge.ErrDuplicateSource) || !strings.Contains(b.err.Error(), "--source") {
		t.Errorf("shard 1's bridge under shard 0's source: %v; want ErrDuplicateSource naming --source", b.err)
	}
	if st := a.Status(); st.Role != bridge.RoleActive {
		t.Errorf("shard 0's bridge is %s after the refusal, want active", st.Role)
	}
}

// TestSameSourceInTwoHAElectionsRefused: two unsharded bridges of one
// source in different HA elections (two deployments on one host, both with
// the default source), or one with HA and one without, each active, wrote
// the same source's heartbeats, each scope overwriting the other's, so
// each bridge's values flapped between fresh and "does not observe the
// group". The election's check sees only its own candidates: the later
// bridge must be refused by the source's claim, and the first go on.
func TestSameSourceInTwoHAElectionsRefused(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	for _, secondHA := range []bool{true, false} {
		t.Run(fmt.Sprintf("second-ha=%v", secondHA), func(t *testing.T) {
			src := "twin-elections-" + strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-")
			cfg := func(ha string) bridge.Config {
				return bridge.Config{Servers: addrs, Discover: []string{groupPath(t)}, HAPath: ha, Source: src,
					SessionTimeout: 2 * time.Second, Sinks: []publish.Sink{jsSink(t, url)}}
			}
			a := start(t, cfg(groupPath(t)))
			waitStatus(t, a.Bridge, 15*time.Second, "the first bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
			ha := ""
			if secondHA {
				ha = groupPath(t)
			}
			b := start(t, cfg(ha))
			select {
			case <-b.done:
			case <-time.After(20 * time.Second): // twice the session timeout, and then some
				t.Fatalf("a second bridge of source %s (HA %q) still runs beside the first, active in another election: both write its heartbeats", src, ha)
			}
			if !isErr(b.err, bridge.ErrDuplicateSource) || !strings.Contains(b.err.Error(), "--source") {
				t.Errorf("second bridge of the source: %v; want ErrDuplicateSource naming --source", b.err)
			}
			if st := a.Status(); st.Role != bridge.RoleActive {
				t.Errorf("the first bridge is %s after the refusal, want active", st.Role)
			}
		})
	}
}
