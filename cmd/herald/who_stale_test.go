package main

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// staleBound is how long values stay fresh after a heartbeat with the
// --heartbeat of these tests (200ms): max(3 × 200ms, publish.MinStaleAfter).
const staleBound = max(3*200*time.Millisecond, publish.MinStaleAfter)

// staleSetup is a bridge publishing to NATS (JetStream) and Kafka, a group
// with an owner, and Go followers of the group on both.
type staleSetup struct {
	group, source string
	natsURL       string
	kafka         string
	bridge        *proc
	owner         *elect.Handle
	natsUpdates   chan jetstream.OwnerUpdate
	kafkaUpdates  chan kafkasink.OwnerUpdate
}

func newStaleSetup(t *testing.T, source string) *staleSetup {
	t.Helper()
	zk := zkFlags(t)
	kc := kafkatest.Start(t)
	st := &staleSetup{group: uniq(t), source: source, natsURL: natsserver.Start(t).URL(), kafka: strings.Join(kc.Addrs(), ",")}
	st.owner = campaign(t, zkSession(t), st.group, "worker-1")
	st.bridge = start(t, nil, append([]string{"bridge", "--watch", st.group, "--nats", st.natsURL, "--kafka", st.kafka,
		"--heartbeat", "200ms", "--source", source, "--drain-timeout", "5s"}, zk...)...)
	// who says fresh once the bridge has confirmed the owner.
	for _, src := range [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}} {
		var r whoReport
		if err := waitFor(30*time.Second, func() bool {
			out, _, code := heraldRun(t, nil, append([]string{"who", st.group, "--json"}, src...)...)
			return code == 0 && json.Unmarshal([]byte(out), &r) == nil && r.Owner != nil && !r.Stale && r.Confirmed != nil
		}); err != nil {
			t.Fatalf("who %v never named worker-1 confirmed by the bridge (last %+v); bridge:\n%s", src, r, st.bridge.out)
		}
		if r.Owner.ID != "worker-1" || r.ConfirmedBy != source {
			t.Fatalf("who %v: %+v, want worker-1 confirmed by %s", src, r, source)
		}
	}
	st.follow(t)
	return st
}

// follow starts the Go followers and waits for their fresh owner.
func (st *staleSetup) follow(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	js := natsserver.JetStream(t, st.natsURL)
	w, err := jetstream.Follow(ctx, js, st.group)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kafkasink.FollowOwners(ctx, kafkasink.Config{Brokers: strings.Split(st.kafka, ",")}, st.group)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ks.Close() })
	st.natsUpdates, st.kafkaUpdates = make(chan jetstream.OwnerUpdate, 64), make(chan kafkasink.OwnerUpdate, 64)
	go func() {
		for u := range w.Updates() {
			st.natsUpdates <- u
		}
	}()
	go func() {
		for u := range ks.C() {
			st.kafkaUpdates <- u
		}
	}()
	if u := untilNATS(t, st.natsUpdates, 15*time.Second, func(u jetstream.OwnerUpdate) bool { return u.Owner != nil && !u.Stale }); u.ConfirmedBy != st.source {
		t.Fatalf("Go follower on NATS: %+v, want confirmed by %s", u, st.source)
	}
	if u := untilKafka(t, st.kafkaUpdates, 15*time.Second, func(u kafkasink.OwnerUpdate) bool { return u.Owner() != nil && !u.Stale }); u.ConfirmedBy != st.source {
		t.Fatalf("Go follower on Kafka: %+v, want confirmed by %s", u, st.source)
	}
}

func untilNATS(t *testing.T, ch <-chan jetstream.OwnerUpdate, d time.Duration, cond func(jetstream.OwnerUpdate) bool) jetstream.OwnerUpdate {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case u := <-ch:
			if cond(u) {
				return u
			}
		case <-deadline:
			t.Fatalf("the NATS follower delivered no such update within %v", d)
		}
	}
}

func untilKafka(t *testing.T, ch <-chan kafkasink.OwnerUpdate, d time.Duration, cond func(kafkasink.OwnerUpdate) bool) kafkasink.OwnerUpdate {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case u := <-ch:
			if cond(u) {
				return u
			}
		case <-deadline:
			t.Fatalf("the Kafka follower delivered no such update within %v", d)
		}
	}
}

// whoStale waits until who from src exits with exitStale and returns how
// long after since that was, with its text output.
func (st *staleSetup) whoStale(t *testing.T, since time.Time, src ...string) (time.Duration, string) {
	t.Helper()
	var out, stderr string
	var code int
	if err := waitFor(20*time.Second, func() bool {
		out, stderr, code = heraldRun(t, nil, append([]string{"who", st.group}, src...)...)
		return code == exitStale
	}); err != nil {
		t.Fatalf("who %v never said stale: exit %d:\n%s%s", src, code, out, stderr)
	}
	t.Logf("who %v:\n%s", src, out)
	return time.Since(since), out
}

// checkStaleJSON checks who --json on a stale value: the owner still named,
// stale, when and by whom it was last confirmed.
func (st *staleSetup) checkStaleJSON(t *testing.T, reason string, src ...string) {
	t.Helper()
	out, stderr, code := heraldRun(t, nil, append([]string{"who", st.group, "--json"}, src...)...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); code != exitStale || err != nil || !r.Stale || r.Confirmed == nil ||
		r.ConfirmedBy != st.source || r.Owner == nil || r.Owner.ID != "worker-1" || !strings.Contains(r.StaleReason, reason) {
		t.Fatalf("who %v --json: exit %d (want %d), %v:\n%s%s", src, code, exitStale, err, out, stderr)
	}
	if !strings.Contains(stderr, "stale: last confirmed by "+st.source) {
		t.Errorf("who %v --json: stderr does not say why it exits %d: %s", src, exitStale, stderr)
	}
}

// Bridge killed (SIGKILL): nothing more is written, and within the bound
// `who --nats` and `who --kafka` say stale (exit 4) while ZooKeeper has no
// owner; the Go followers see the stale flag though nothing else changed.
func TestWhoStaleAfterSIGKILL(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	st := newStaleSetup(t, "killed-bridge")
	// Heartbeats keep the value fresh past the bound while the bridge runs.
	time.Sleep(2 * staleBound)
	for _, src := range [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}} {
		if out, stderr, code := heraldRun(t, nil, append([]string{"who", st.group}, src...)...); code != 0 ||
			!strings.Contains(out, "owner worker-1") || !strings.Contains(out, "fresh: last confirmed by killed-bridge") {
			t.Fatalf("who %v while the bridge runs: exit %d:\n%s%s", src, code, out, stderr)
		}
	}

	killed := time.Now()
	if err := signalPID(st.bridge.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st.bridge.wait(t, 5*time.Second)
	if err := st.owner.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, _, code := heraldRun(t, nil, append(zkFlags(t), "who", st.group)...); code != exitNoOwner || !strings.Contains(out, "no owner") {
		t.Fatalf("who --zk after the resign: exit %d:\n%s", code, out)
	}

	// who starts a process and reads the servers each time: allow it 3s
	// beyond the bound.
	for _, src := range [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}} {
		d, out := st.whoStale(t, killed, src...)
		if d > staleBound+3*time.Second {
			t.Errorf("who %v said stale %v after the kill; the bound is %v", src, d, staleBound)
		}
		if !strings.Contains(out, "owner worker-1") || !strings.Contains(out, "stale: last confirmed by killed-bridge at ") ||
			!strings.Contains(out, "ago (no heartbeat for") {
			t.Errorf("who %v on a stale value:\n%s", src, out)
		}
		st.checkStaleJSON(t, "no heartbeat", src...)
	}

	u := untilNATS(t, st.natsUpdates, staleBound+2*time.Second, func(u jetstream.OwnerUpdate) bool { return u.Stale })
	if u.Owner == nil || u.Owner.Owner.ID != "worker-1" || u.ConfirmedBy != "killed-bridge" {
		t.Errorf("NATS follower's stale update: %+v", u)
	}
	k := untilKafka(t, st.kafkaUpdates, staleBound+2*time.Second, func(u kafkasink.OwnerUpdate) bool { return u.Stale })
	if k.Owner() == nil || k.Owner().ID != "worker-1" || k.ConfirmedBy != "killed-bridge" {
		t.Errorf("Kafka follower's stale update: %+v", k)
	}
}

// Bridge stopped cleanly (SIGTERM): it says so before draining, and `who`
// says stale at once, naming the stop; the Go followers see it.
func TestWhoStaleAfterSIGTERM(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	st := newStaleSetup(t, "stopped-bridge")
	stopped := time.Now()
	if err := st.bridge.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := st.bridge.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("bridge exit %d after SIGTERM", code)
	}
	for _, src := range [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}} {
		d, out := st.whoStale(t, stopped, src...)
		if d > staleBound+3*time.Second {
			t.Errorf("who %v said stale %v after SIGTERM", src, d)
		}
		if !strings.Contains(out, "stale: last confirmed by stopped-bridge at ") || !strings.Contains(out, "stopped-bridge stopped at") {
			t.Errorf("who %v after a clean stop:\n%s", src, out)
		}
		st.checkStaleJSON(t, "stopped", src...)
	}
	if u := untilNATS(t, st.natsUpdates, 5*time.Second, func(u jetstream.OwnerUpdate) bool { return u.Stale }); !strings.Contains(u.StaleReason, "stopped") {
		t.Errorf("NATS follower after SIGTERM: %+v", u)
	}
	if u := untilKafka(t, st.kafkaUpdates, 5*time.Second, func(u kafkasink.OwnerUpdate) bool { return u.Stale }); !strings.Contains(u.StaleReason, "stopped") {
		t.Errorf("Kafka follower after SIGTERM: %+v", u)
	}
	// The exit code is documented.
	if out, _, _ := heraldRun(t, nil, "who", "--help"); !strings.Contains(out, "exits 4") || !strings.Contains(out, "--heartbeat") {
		t.Errorf("who --help does not document staleness and its exit code:\n%s", out)
	}
}

// TestWhoNoOwnerIsConfirmedOrStale: "no owner" from NATS or Kafka is an
// answer only while a bridge that observes the group confirms it. Once its
// owner resigned, the watched group is no owner, fresh: who prints the
// report (--json an object naming the bridge that confirms it) and exits
// 5. A group no running bridge observes (here: none of the bucket's or
// topic's values names it, and the only bridge's scope is another group)
// is not "no owner" but unknown: exit 4, saying nothing confirms it. So is
// the watched group once its bridge is killed, and stays so after the
// owners bucket is deleted and made again by a bridge of other groups.
// Before, all of these exited 5 "no owner", with an empty --json.
func TestWhoNoOwnerIsConfirmedOrStale(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	st := newStaleSetup(t, "bridge-g")
	if err := st.owner.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	srcs := [][]string{{"--nats", st.natsURL}, {"--kafka", st.kafka}}
	who := func(group string, src []string, args ...string) (string, string, int) {
		return heraldRun(t, nil, append(append([]string{"who", group}, src...), args...)...)
	}
	for _, src := range srcs {
		var r whoReport
		var out, stderr string
		var code int
		if err := waitFor(20*time.Second, func() bool {
			out, stderr, code = who(st.group, src, "--json")
			r = whoReport{}
			return code == exitNoOwner && json.Unmarshal([]byte(out), &r) == nil && r.Owner == nil
		}); err != nil {
			t.Fatalf("who %v --json after the resign: exit %d, want %d and a JSON report:\n%s%s", src, code, exitNoOwner, out, stderr)
		}
		if r.Stale || r.ConfirmedBy != "bridge-g" || r.OwnerlessSince == nil {
			t.Errorf("who %v --json, no owner: %+v: want fresh, confirmed by bridge-g, ownerless_since", src, r)
		}
		out, stderr, code = who(st.group, src)
		if code != exitNoOwner || !strings.Contains(out, "no owner since ") || !strings.Contains(out, "fresh: last confirmed by bridge-g") {
			t.Errorf("who %v, no owner: exit %d, want %d, since when and who confirms it:\n%s%s", src, code, exitNoOwner, out, stderr)
		}
		out, stderr, code = who(uniq(t)+"-unwatched", src)
		if code != exitStale || !strings.Contains(out, "nothing confirms that the group has no owner") ||
			!strings.Contains(out, "owner unknown: no bridge confirms the group now") || strings.Contains(out, ": no owner") {
			t.Errorf("who %v of a group no bridge observes: exit %d, want %d (unknown, not no owner):\n%s%s", src, code, exitStale, out, stderr)
		}
	}

	_ = signalPID(st.bridge.cmd.Process.Pid, syscall.SIGKILL)
	st.bridge.wait(t, 5*time.Second)
	js := natsserver.JetStream(t, st.natsURL)
	if err := js.DeleteKeyValue(context.Background(), jetstream.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	other := start(t, nil, append([]string{"bridge", "--watch", uniq(t) + "-other", "--nats", st.natsURL, "--kafka", st.kafka,
		"--heartbeat", "200ms", "--source", "bridge-other"}, zkFlags(t)...)...)
	other.waitOutput(t, "bridge role", 20*time.Second)
	for _, src := range srcs {
		var out, stderr string
		var code int
		if err := waitFor(20*time.Second, func() bool {
			out, stderr, code = who(st.group, src)
			return code == exitStale
		}); err != nil {
			t.Errorf("who %v after its bridge was killed and the bucket made again by another: exit %d, want %d:\n%s%s", src, code, exitStale, out, stderr)
		}
	}
}
