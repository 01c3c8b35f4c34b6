package main

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// tenureLog is what the lock holders did, each logging its own tenures.
type tenureLog struct {
	mu    sync.Mutex
	nodes []string
}

func (l *tenureLog) add(node string) {
	l.mu.Lock()
	l.nodes = append(l.nodes, node)
	l.mu.Unlock()
}

func (l *tenureLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.nodes...)
}

// churn runs three lock holders on group until ctx ends: each takes the
// lock, holds it 0.2-0.9 s and lets go, and logs the node of every tenure.
func churn(ctx context.Context, t *testing.T, group string, log *tenureLog) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := elect.NewSession(ctx, zktest.Shared(t).Addrs(), elect.WithSessionTimeout(4*time.Second))
			if err != nil {
				t.Errorf("holder %d: %v", i, err)
				return
			}
			defer s.Close()
			l, _ := elect.NewLock(s, group, elect.CreateParents())
			for ctx.Err() == nil {
				h, err := l.Acquire(ctx)
				if err != nil {
					return
				}
				log.add(h.Node())
				select {
				case <-time.After(time.Duration(200+rand.IntN(700)) * time.Millisecond):
				case <-ctx.Done():
				}
				_ = h.Release(context.Background())
			}
		}()
	}
	return &wg
}

// TestHATakeoversLoseNoTenure: two bridges with --ha under lock churn. The
// active one is SIGKILLed twice and once cut from ZooKeeper past its
// session timeout; a standby is up the whole time. Every tenure the
// holders logged reaches the stream, each once.
func TestHATakeoversLoseNoTenure(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zktest.Shared(t)
	url := natsserver.Start(t).URL()
	g, ha := uniq(t), uniq(t)+"-ha"
	proxy, err := faultproxy.New(zk.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	type bridgeProc struct {
		p    *proc
		addr string
	}
	// Sources are claimed across the shared ZooKeeper: parallel tests name theirs apart.
	sfx := "-" + newRunID()[:8]
	bridge := func(name, zkAddr string) bridgeProc {
		p := start(t, nil, "bridge", "--zk", zkAddr, "--session-timeout", "1s", "--connect-timeout", "10s",
			"--watch", g, "--ha", ha, "--source", name+sfx, "--nats", url, "--http", "127.0.0.1:0")
		return bridgeProc{p, waitMatch(t, p, httpAddr, 30*time.Second)}
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	log := &tenureLog{}

	b1 := bridge("bridge-1", zk.ConnectString())
	waitRole(t, b1.addr, "active")
	stream := streamIDs(t, url, g)
	b2 := bridge("bridge-2", proxy.Addr())
	waitRole(t, b2.addr, "standby")
	holders := churn(ctx, t, g, log)
	pause := func() { time.Sleep(2 * time.Second) } // let tenures pass

	pause()
	_ = signalPID(b1.p.cmd.Process.Pid, syscall.SIGKILL) // kill 1
	b1.p.wait(t, 5*time.Second)
	waitRole(t, b2.addr, "active")
	b3 := bridge("bridge-3", zk.ConnectString())
	waitRole(t, b3.addr, "standby")

	pause()
	proxy.Blackhole(true) // bridge-2 cut past its 1 s session timeout
	waitRole(t, b3.addr, "active")
	time.Sleep(1500 * time.Millisecond)
	proxy.Blackhole(false)
	waitRole(t, b2.addr, "standby")

	pause()
	_ = signalPID(b3.p.cmd.Process.Pid, syscall.SIGKILL) // kill 2
	b3.p.wait(t, 5*time.Second)
	waitRole(t, b2.addr, "active")

	pause()
	stop()
	holders.Wait()
	tenures := log.all()
	if len(tenures) < 10 {
		t.Fatalf("only %d tenures ran; the churn did not churn", len(tenures))
	}
	last := tenures[len(tenures)-1]
	stream.waitID(t, publish.MakeID(g, last, publish.LockReleased), 15*time.Second)
	counts, told := map[string]int{}, map[string]bool{}
	for _, e := range stream.all() {
		counts[e.ID]++
		told[e.ChangeID()] = true // a snapshot's sighting of the owner tells its change
	}
	missing := 0
	for _, n := range tenures {
		if !told[publish.MakeID(g, n, publish.LockAcquired)] {
			missing++
			t.Errorf("tenure of %s is not in the stream", n)
		}
	}
	for id, n := range counts {
		if n > 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
	t.Logf("%d tenures, %d missing, %d events in the stream", len(tenures), missing, len(stream.all()))
}

// TestBridgeMarksWhatItMissed: a bridge that starts after every bridge
// was down says gap=true on a group whose owner changed while no bridge
// was looking, and not on one where nothing changed. It learns what was
// published last from its own audit log when restarted on it (after
// SIGKILL), and on a new host with no log of its own from the JetStream
// owners bucket or the Kafka owners topic (after a drained stop).
func TestBridgeMarksWhatItMissed(t *testing.T) {
	t.Run("restart-on-its-audit-log", func(t *testing.T) {
		bridgeMarksWhatItMissed(t, "audit", true, "--nats-mode", "core", "--nats", natsserver.Start(t).URL())
	})
	t.Run("new-host-jetstream", func(t *testing.T) {
		bridgeMarksWhatItMissed(t, "jetstream", false, "--nats", natsserver.Start(t).URL())
	})
	t.Run("new-host-kafka", func(t *testing.T) {
		bridgeMarksWhatItMissed(t, "kafka", false, "--kafka", strings.Join(kafkatest.Start(t).Addrs(), ","), "--kafka-partitions", "1")
	})
}

// bridgeMarksWhatItMissed runs a bridge, stops it, changes one group's
// owner twice, and starts a bridge on the same log (sameLog) or a new one;
// sink is the sink the second bridge must say it read.
func bridgeMarksWhatItMissed(t *testing.T, sink string, sameLog bool, sinkFlags ...string) {
	zkFl := zkFlags(t)
	g, quiet := uniq(t), uniq(t)+"-quiet"
	run := func(log string) *proc {
		p := start(t, nil, append(append([]string{"bridge", "--watch", g, "--watch", quiet, "--audit", log,
			"--http", "127.0.0.1:0"}, sinkFlags...), zkFl...)...)
		waitRole(t, waitMatch(t, p, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second), "active")
		return p
	}
	s := zkSession(t)
	lock := func(group, id string) *elect.Handle {
		l, _ := elect.NewLock(s, group, elect.CreateParents(), elect.WithID(id))
		h, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	owned := func(log, node string) bool {
		events, _ := audit.ReadAll(context.Background(), log, nil)
		for _, e := range events {
			if e.Type == publish.LockAcquired && e.Owner != nil && e.Owner.Node == node {
				return true
			}
		}
		return false
	}
	a, q := lock(g, "a"), lock(quiet, "q")
	first := filepath.Join(t.TempDir(), "first.log")
	p := run(first)
	if err := waitFor(15*time.Second, func() bool { return owned(first, a.Node()) && owned(first, q.Node()) }); err != nil {
		t.Fatal("the first bridge never logged the holders")
	}
	if sameLog {
		_ = signalPID(p.cmd.Process.Pid, syscall.SIGKILL)
		p.wait(t, 5*time.Second)
	} else {
		// Drained, so the sink holds what the bridge published.
		_ = signalPID(p.cmd.Process.Pid, syscall.SIGTERM)
		p.wait(t, 15*time.Second)
	}
	// While no bridge looks: a lets go, b holds and lets go, c holds.
	_ = a.Release(context.Background())
	b := lock(g, "b")
	_ = b.Release(context.Background())
	c := lock(g, "c")
	second := first
	if !sameLog {
		second = filepath.Join(t.TempDir(), "second.log")
	}
	quietSnaps := func(log string) int {
		n := 0
		events, _ := audit.ReadAll(context.Background(), log, nil)
		for _, e := range events {
			if e.Group == quiet && e.Snapshot && e.Owner != nil && e.Owner.Node == q.Node() {
				n++
			}
		}
		return n
	}
	quietSnapshots, want := 0, 1
	if sameLog {
		want = 2 // one per run
	}
	p2 := run(second)
	// The two groups' snapshots are written independently: wait for both.
	if err := waitFor(15*time.Second, func() bool { return owned(second, c.Node()) && quietSnaps(second) >= want }); err != nil {
		t.Fatalf("the second bridge never logged c and the quiet group's snapshot (%d of %d)", quietSnaps(second), want)
	}
	if !regexp.MustCompile(`msg="read what the sink published last" sink=` + sink + ` groups=[1-9]`).MatchString(p2.out.String()) {
		t.Errorf("the second bridge does not say it read the %s sink's reports:\n%s", sink, p2.out.String())
	}
	got, _ := audit.ReadAll(context.Background(), second, nil)
	for _, e := range got {
		switch {
		case e.Group == g && e.Owner != nil && e.Owner.Node == c.Node() && e.Type == publish.LockAcquired && !e.Gap:
			t.Errorf("c's acquisition after tenures no bridge saw carries no gap: %+v", e)
		case e.Group == quiet && e.Gap:
			t.Errorf("a group where nothing changed got a gap: %+v", e)
		case e.Group == quiet && e.Snapshot && e.Owner != nil && e.Owner.Node == q.Node():
			quietSnapshots++
		}
	}
	if quietSnapshots != want {
		t.Errorf("the quiet group has %d snapshots naming q; want %d", quietSnapshots, want)
	}
}
