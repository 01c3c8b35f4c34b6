package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
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
	for what, l := range map[string]latency{"floor": r.Floor, "election": r.Election.latency, "herald lock handoff": r.Locks.Herald.Handoff, "zk.Lock handoff": r.Locks.GoZK.Handoff} {
		if l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
			t.Errorf("%s: p50 %.3f, p99 %.3f, max %.3f ms; want 0 < p50 <= p99 <= max", what, l.P50, l.P99, l.Max)
		}
	}
	for what, f := range map[string]lockFigures{"herald": r.Locks.Herald, "zk.Lock": r.Locks.GoZK} {
		if f.Cycles < 10 || f.PerSec <= 0 {
			t.Errorf("%s lock: %d cycles, %.0f/s; want real handoffs", what, f.Cycles, f.PerSec)
		}
	}
	if !r.Locks.NeverTwo || r.Locks.Checked != r.Locks.Herald.Cycles+r.Locks.GoZK.Cycles {
		t.Errorf("safety check: never two %v over %d tenures (%d + %d cycles)", r.Locks.NeverTwo, r.Locks.Checked, r.Locks.Herald.Cycles, r.Locks.GoZK.Cycles)
	}
	c, _, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if left, _, err := c.Children(root); err != nil || len(left) != 0 {
		t.Errorf("bench left %v under %s (%v); it removes its run", left, root, err)
	}

	// The table names each measure.
	out, stderr, code = heraldRun(t, nil, "--zk", srv.ConnectString(), "--session-timeout", "4s", "bench",
		"--path", root, "--clients", "2", "--duration", "300ms", "--handoffs", "3")
	for _, want := range []string{"floor: delete -> watch fired (3)", "election: resign -> next leader (3)", "lock handoffs/s", "never two holders: checked"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("bench table: exit %d, no %q in\n%s%s", code, want, out, stderr)
		}
	}
}

func TestBenchRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "1"}, "--clients 1"},
		{[]string{"--duration", "10ms"}, "--duration"},
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
