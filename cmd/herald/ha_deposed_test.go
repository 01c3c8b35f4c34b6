package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// ownerRecords reads every record of group in herald.owners, in offset
// order, as "source type" (the record's ce_source and ce_type headers).
func ownerRecords(t *testing.T, addrs []string, group string) []string {
	t.Helper()
	cl := ownersReader(t, addrs)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var out []string
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Key) != group {
				return
			}
			var src, typ string
			for _, h := range r.Headers {
				switch h.Key {
				case "ce_source":
					src = string(h.Value)
				case "ce_type":
					typ = string(h.Value)
				}
			}
			out = append(out, src+" "+typ)
		})
	}
	return out
}

// heldLock is a herald lock of group, on a session of its own, and its
// handle, held; the session closes when the test ends.
func heldLock(t *testing.T, servers []string, group string) (*elect.Lock, *elect.Handle) {
	t.Helper()
	s, err := elect.NewSession(context.Background(), servers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	l, err := elect.NewLock(s, group, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l, h
}

// TestDeposedBridgeWritesNothingLate: an HA bridge frozen (SIGSTOP) while
// Kafka was down, with changes still to write, is deposed; the bridge that
// leads now writes the lock's later release. Thawed, the first bridge
// writes none of what it held back: the owners topic's last record of the
// group stays the release, not an owner long gone (the last record is
// what a compacted topic keeps, and what any reader of it takes).
func TestDeposedBridgeWritesNothingLate(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zktest.Shared(t)
	kc := kafkatest.Start(t)
	brokers := kc.Addrs()[0]
	g, ha := uniq(t), uniq(t)+"-ha"
	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	// Sources are claimed across the shared ZooKeeper: parallel tests name theirs apart.
	sfx := "-" + newRunID()[:8]
	bridge := func(name string) (*proc, string) {
		p := start(t, nil, "bridge", "--zk", zk.ConnectString(), "--session-timeout", "2s", "--connect-timeout", "10s",
			"--watch", g, "--ha", ha, "--source", name+sfx, "--kafka", brokers, "--http", "127.0.0.1:0")
		return p, waitMatch(t, p, httpAddr, 30*time.Second)
	}
	l, p1 := heldLock(t, zk.Addrs(), g)
	ctx := context.Background()
	a, aAddr := bridge("bridge-a")
	waitRole(t, aAddr, "active")
	_, bAddr := bridge("bridge-b")
	waitRole(t, bAddr, "standby")
	if err := waitFor(20*time.Second, func() bool { return len(ownerRecords(t, kc.Addrs(), g)) > 0 }); err != nil {
		t.Fatal("bridge-a never wrote the first owner")
	}

	kc.Stop() // bridge-a's next changes wait in its backlog
	if err := p1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p2, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // observed by both, held back by bridge-a
	if err := signalPID(a.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	defer signalPID(a.cmd.Process.Pid, sigCont)
	role := func(addr string) string {
		var st struct {
			Role string `json:"role"`
		}
		getJSON(t, "http://"+addr+"/readyz", &st) // 503: Kafka is down
		return st.Role
	}
	if err := waitFor(20*time.Second, func() bool { return role(bAddr) == "active" }); err != nil {
		t.Fatal("bridge-b never took over")
	}
	if err := p2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	kc.Restart(t)
	released := func() bool {
		r := ownerRecords(t, kc.Addrs(), g)
		return len(r) > 0 && r[len(r)-1] == "bridge-b"+sfx+" lock.released"
	}
	if err := waitFor(30*time.Second, released); err != nil {
		t.Fatalf("bridge-b never wrote the release: %v", ownerRecords(t, kc.Addrs(), g))
	}
	if err := signalPID(a.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	a.waitOutput(t, "HA leadership lost", 20*time.Second)
	time.Sleep(3 * time.Second) // what bridge-a would write late, it writes by now
	if r := ownerRecords(t, kc.Addrs(), g); r[len(r)-1] != "bridge-b"+sfx+" lock.released" {
		t.Fatalf("after the deposed bridge thawed, the owners topic's records of the group are %v: the last is not bridge-b's release", r)
	}
}
