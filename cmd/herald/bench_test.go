package main

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// herald bench against a real ZooKeeper: every figure it prints comes from
// real samples, it checked every tenure, and it leaves nothing behind.
func TestBenchMeasuresAndCleansUp(t *testing.T) {
	srv := zktest.Shared(t)
	root := uniq(t)
	out, stderr, code := heraldRun(t, nil, "--zk", srv.ConnectString(), "--session-timeout", "4s", "bench",
		"--path", root, "--clients", "3", "--duration", "700ms", "--handoffs", "12", "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d\n%s%s", code, out, stderr)
	}
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench --json printed no report: %v\n%s", err, out)
	}
	if r.Floor.Samples != 12 || r.Election.Samples != 12 {
		t.Errorf("samples: floor %d, election %d; want 12 each (--handoffs)", r.Floor.Samples, r.Election.Samples)
	}
	for what, l := range map[string]latency{"floor": r.Floor, "election": r.Election.latency, "herald lock handoff": r.Locks.Herald.Handoff, "zk.Lock handoff": r.Locks.GoZK.Handoff,
		"herald free lock cycle": r.FreeLock.Herald.Handoff, "zk.Lock free lock cycle": r.FreeLock.GoZK.Handoff} {
		if l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
			t.Errorf("%s: p50 %.3f, p99 %.3f, max %.3f ms; want 0 < p50 <= p99 <= max", what, l.P50, l.P99, l.Max)
		}
	}
	for what, f := range map[string]lockFigures{"herald": r.Locks.Herald, "zk.Lock": r.Locks.GoZK, "herald free": r.FreeLock.Herald, "zk.Lock free": r.FreeLock.GoZK} {
		if f.Cycles < 10 || f.PerSec <= 0 {
			t.Errorf("%s lock: %d cycles, %.0f/s; want real handoffs", what, f.Cycles, f.PerSec)
		}
	}
	if f := r.FreeLock; f.VsGoZK != f.Herald.PerSec/f.GoZK.PerSec {
		t.Errorf("free lock: herald %.0f/s, zk.Lock %.0f/s, ratio %.2f", f.Herald.PerSec, f.GoZK.PerSec, f.VsGoZK)
	}
	if !r.Locks.NeverTwo || r.Locks.Checked != r.Locks.Herald.Cycles+r.Locks.GoZK.Cycles {
		t.Errorf("safety check: never two %v over %d tenures (%d + %d cycles)", r.Locks.NeverTwo, r.Locks.Checked, r.Locks.Herald.Cycles, r.Locks.GoZK.Cycles)
	}
	c, _, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _, err := c.Exists(root); err != nil || ok {
		t.Errorf("bench left %s, which it made (%v); it removes its run and the parents it made", root, err)
	}

	// The table names each measure.
	out, stderr, code = heraldRun(t, nil, "--zk", srv.ConnectString(), "--session-timeout", "4s", "bench",
		"--path", root, "--clients", "2", "--duration", "300ms", "--handoffs", "3")
	for _, want := range []string{"floor: delete -> watch fired (3)", "election: resign -> next leader (3)", "lock handoffs/s", "never two holders: checked",
		"herald free lock: release -> taken again", "zk.Lock free lock: release -> taken again", "a free lock, one client taking and releasing it, cycles/s"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("bench table: exit %d, no %q in\n%s%s", code, want, out, stderr)
		}
	}
}

// bench removes the parents of --path it created, once empty, and only
// those: a parent that was there before stays. It left them all.
func TestBenchRemovesTheParentsItMade(t *testing.T) {
	srv := zktest.Shared(t)
	c, _, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root := uniq(t)
	if _, err := c.Create(path.Dir(root), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	theirs := root + "-theirs"
	if _, err := c.Create(theirs, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root + "/a/b", theirs + "/x"} {
		out, stderr, code := heraldRun(t, nil, "--zk", srv.ConnectString(), "--session-timeout", "4s", "bench",
			"--path", p, "--clients", "2", "--duration", "100ms", "--handoffs", "1", "--json")
		if code != 0 {
			t.Fatalf("bench --path %s: exit %d\n%s%s", p, code, out, stderr)
		}
	}
	if ok, _, err := c.Exists(root); err != nil || ok {
		t.Errorf("bench left %s, which it created as a parent of --path (%v)", root, err)
	}
	if left, _, err := c.Children(theirs); err != nil || len(left) != 0 {
		t.Errorf("%s, there before bench: children %v (%v); want it kept, and empty", theirs, left, err)
	}
}

func TestBenchRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "1"}, "--clients 1"},
		{[]string{"--duration", "10ms"}, "--duration"},
		{[]string{"--duration", "5000m"}, "--duration 83h20m0s: give at most 1h0m0s: each of the four lock phases runs that long, 333h20m0s in all (a typo for ms?)"},
		{[]string{"--handoffs", "0"}, "--handoffs"},
		{[]string{"--path", "herald-bench"}, "--path"},
		{[]string{"extra"}, "unknown command"},
	} {
		_, stderr, code := heraldRun(t, nil, append([]string{"--zk", "127.0.0.1:1", "bench"}, c.args...)...)
		if code != exitUsage && !(c.want == "unknown command" && code != 0) || !strings.Contains(stderr, c.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want a usage error naming %s", c.args, code, stderr, c.want)
		}
	}
}

// The check bench makes at every take sees two holders when there are two:
// a "lock" that lets every client in at once.
func TestBenchCountsOverlaps(t *testing.T) {
	var inside atomic.Int32
	open := func(int) func(context.Context) (func() bool, func() error, error) {
		return func(context.Context) (func() bool, func() error, error) {
			inside.Add(1)
			var held atomic.Bool
			held.Store(true)
			time.Sleep(time.Millisecond)
			return held.Load, func() error {
				time.Sleep(time.Millisecond)
				held.Store(false)
				inside.Add(-1)
				return nil
			}, nil
		}
	}
	f, err := lockLoop(context.Background(), make([]*elect.Session, 4), 200*time.Millisecond, open)
	if err != nil {
		t.Fatal(err)
	}
	if f.Overlaps == 0 || f.Cycles == 0 {
		t.Fatalf("a lock that admits everyone: %d overlaps in %d cycles; want some", f.Overlaps, f.Cycles)
	}
}

// A bench stopped by a signal exits 128+N saying it was interrupted, prints
// no figure of the phase it cut short (only those of the phases that ended),
// and still removes what it made: SIGTERM during the floor, SIGINT during
// herald's lock phase.
func TestBenchInterrupted(t *testing.T) {
	srv := zktest.Shared(t)
	c, _, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		sig            syscall.Signal
		node, phase    string
		handoffs       string
		want, wantNone []string
	}{
		{syscall.SIGTERM, "floor", "the floor", "100000", nil,
			[]string{"measure", "floor: delete", "handoffs/s", "holders"}},
		{syscall.SIGINT, "lock", "herald's lock phase", "3",
			[]string{"floor: delete -> watch fired (3)", "election: resign -> next leader (3)"},
			[]string{"herald lock: release", "zk.Lock", "handoffs/s", "0.00x", "never two holders"}},
	} {
		root := uniq(t)
		p := start(t, nil, "--zk", srv.ConnectString(), "--session-timeout", "4s", "bench",
			"--path", root, "--clients", "2", "--duration", "60s", "--handoffs", tc.handoffs)
		// The phase has begun once its node exists below the run's node.
		if err := waitFor(30*time.Second, func() bool {
			runs, _, _ := c.Children(root)
			for _, r := range runs {
				if ok, _, _ := c.Exists(root + "/" + r + "/" + tc.node); ok {
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatalf("%s: the phase never began:\n%s", tc.phase, p.out)
		}
		time.Sleep(300 * time.Millisecond)
		_ = p.cmd.Process.Signal(tc.sig)
		code := p.wait(t, 20*time.Second)
		out := p.out.String()
		if code != 128+int(tc.sig) || !strings.Contains(out, "bench interrupted during "+tc.phase) {
			t.Errorf("%v during %s: exit %d, want %d and it saying it was interrupted during it:\n%s", tc.sig, tc.phase, code, 128+int(tc.sig), out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v during %s: the phases that ended are not reported (%q):\n%s", tc.sig, tc.phase, w, out)
			}
		}
		for _, w := range tc.wantNone {
			if strings.Contains(out, w) {
				t.Errorf("%v during %s: printed %q, a figure of a phase not measured to its end:\n%s", tc.sig, tc.phase, w, out)
			}
		}
		if ok, _, err := c.Exists(root); err != nil || ok {
			t.Errorf("%v during %s: bench left %s, which it made (%v); it removes its run and the parents it made", tc.sig, tc.phase, root, err)
		}
	}
}

// A measure with no samples says so rather than showing 0.00 ms.
func TestBenchTableSaysNoSamples(t *testing.T) {
	var b strings.Builder
	r := benchReport{Servers: "zk:2181", Clients: 2, Floor: latency{Samples: 3, P50: 1, P99: 2, Max: 2}}
	r.Election.latency = latency{Samples: 3, P50: 2, P99: 3, Max: 3}
	r.Locks.Herald = lockFigures{Cycles: 1, PerSec: 1}
	r.Locks.GoZK = lockFigures{Cycles: 1, PerSec: 1}
	r.Locks.NeverTwo = true
	printBench(&b, r, benchOpts{duration: time.Second}, len(benchPhases))
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "release -> next holder") && (!strings.Contains(line, "no samples") || strings.Contains(line, "ms")) {
			t.Errorf("a handoff measure without samples: %q; want \"no samples\"", line)
		}
	}
}

// TestBenchStaysOutOfGroups: a --path that is a live group, inside one, or
// an ephemeral node (a queue node, which cannot have children) is refused
// as a usage error before bench writes anything: its run node among a
// group's queue nodes is a node the group's clients meet (go-zookeeper's
// Lock fails on a name it cannot parse), where it used to be made there.
func TestBenchStaysOutOfGroups(t *testing.T) {
	srv := zktest.Shared(t)
	group := uniq(t) + "/jobs"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := elect.NewSession(ctx, srv.Addrs(), elect.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := elect.NewElection(s, group, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := s.Conn().Children(group)
	if err != nil {
		t.Fatal(err)
	}
	node := group + "/" + h.Node()
	for p, want := range map[string]string{
		group:          group + " is a group (election)",
		group + "/sub": group + " is a group (election)",
		node:           "is an ephemeral node",
		node + "/x":    "is an ephemeral node",
	} {
		_, stderr, code := heraldRun(t, nil, "--zk", srv.ConnectString(), "bench", "--path", p, "--clients", "2", "--duration", "100ms", "--handoffs", "1")
		if code != exitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, "give a --path outside") {
			t.Errorf("bench --path %s: exit %d, want 2 saying %q and what to give; stderr: %s", p, code, want, stderr)
		}
	}
	if after, _, err := s.Conn().Children(group); err != nil || len(after) != len(before) {
		t.Errorf("children of %s after the refusals: %v, %v; want %v, as before", group, after, err, before)
	}
	if !h.Held() {
		t.Error("the leader lost its group while bench was refused")
	}
}
