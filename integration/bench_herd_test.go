package integration_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
)

const (
	herdConsumers = 1000
	herdChanges   = 40
)

// learned is one consumer learning a leader.
type learned struct {
	consumer int
	node     string
	at       time.Time
}

// BenchmarkHerd: 1,000 consumers learn each new leader, either from
// herald's NATS subjects (one bridge watches ZooKeeper) or each from its
// own ZooKeeper session watching the election's children. It reports the
// ZooKeeper packets per change that the consumers cause, counted per
// session with cons (the bridge's session for herald, the 1,000 sessions
// for direct watches), beside mntr's whole-server count minus a run
// without consumers, and the time until all 1,000 know.
func BenchmarkHerd(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	ns := natsserver.Start(b)
	for range b.N {
		base := herdRun(b, srv, zkc.Addrs(), "baseline", nil)
		h := herdRun(b, srv, zkc.Addrs(), "herald", func(group string, out chan<- learned, quit <-chan struct{}) ([]int64, func()) {
			return natsConsumers(b, ns.URL(), zkc.Addrs(), group, out, quit)
		})
		d := herdRun(b, srv, zkc.Addrs(), "direct", func(group string, out chan<- learned, quit <-chan struct{}) ([]int64, func()) {
			return zkConsumers(b, zkc.Addrs(), group, out, quit)
		})
		hServer, dServer := h.server-base.server, d.server-base.server
		h50, d50 := percentile(h.all, 50), percentile(d.all, 50)
		speed := float64(d50) / float64(h50)
		b.ReportMetric(h.consumers, "herald-packets/change")
		b.ReportMetric(d.consumers, "direct-packets/change")
		b.ReportMetric(msf(h50), "herald-all-informed-ms")
		b.ReportMetric(msf(d50), "direct-all-informed-ms")
		table(benchOut(), fmt.Sprintf("The herd: %d consumers, %d changes (herald = NATS subscribers behind one bridge; peer = one ZooKeeper session and children watch each)", herdConsumers, herdChanges), []row{
			{what: "ZooKeeper packets per change from the consumers' sessions (cons)", herald: fmt.Sprintf("%.2f", h.consumers), peer: fmt.Sprintf("%.1f", d.consumers),
				ratio: fmt.Sprintf("%.0fx fewer", d.consumers/max(h.consumers, 0.1)), target: "<= 3, independent of consumers", verdict: met(h.consumers <= 3)},
			{what: "whole server, minus a run without consumers (mntr)", herald: fmt.Sprintf("%.1f", hServer), peer: fmt.Sprintf("%.1f", dServer)},
			{what: "time until all informed, median", herald: ms(h50), peer: ms(d50), ratio: fmt.Sprintf("%.1fx sooner", speed), target: ">= 5x sooner", verdict: met(speed >= 5)},
			{what: "time until all informed, worst", herald: ms(percentile(h.all, 100)), peer: ms(percentile(d.all, 100))},
		})
	}
}

// herdResult is one run's figures.
type herdResult struct {
	// server is mntr's packets per change, the consumers' sessions' own
	// per change (cons).
	server, consumers float64
	// all holds, per change, the time until every consumer knew.
	all []time.Duration
}

// herdRun makes herdChanges leadership changes in a fresh group with the
// given consumers attached (none for the baseline). consumers returns the
// ZooKeeper sessions they use and a func that stops them.
func herdRun(b *testing.B, srv *zkserver.Server, addrs []string, what string, consumers func(string, chan<- learned, <-chan struct{}) ([]int64, func())) herdResult {
	b.Helper()
	group := groupPath(b, what)
	leaders := alternate(b, addrs, group, 2)
	h := <-leaders
	out := make(chan learned, 4*herdConsumers)
	quit := make(chan struct{})
	n := 0
	var sessions []int64
	if consumers != nil {
		var stop func()
		sessions, stop = consumers(group, out, quit)
		defer func() { close(quit); stop() }()
		n = herdConsumers
	}
	waitAll := func(node string) time.Time {
		seen := make(map[int]bool, n)
		var last time.Time
		timer := time.NewTimer(2 * time.Minute)
		defer timer.Stop()
		for len(seen) < n {
			select {
			case l := <-out:
				if l.node == node && !seen[l.consumer] {
					seen[l.consumer] = true
					last = l.at
				}
			case <-timer.C:
				b.Fatalf("%s: only %d of %d consumers learned %s", what, len(seen), n, node)
			}
		}
		return last
	}
	waitAll(h.Node())
	idle := idleRate(b, srv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s0, err := srv.SessionPackets(ctx)
	if err != nil {
		b.Fatal(err)
	}
	before := packets(b, srv)
	start := time.Now()
	var res herdResult
	for range herdChanges {
		t0 := time.Now()
		if err := h.Resign(context.Background()); err != nil {
			b.Fatal(err)
		}
		h = <-leaders
		if n > 0 {
			res.all = append(res.all, waitAll(h.Node()).Sub(t0))
		}
		// Let the candidates settle (the resigner queues again and
		// watches its predecessor, the new leader arms its own watch)
		// before the next change, in every run alike: otherwise a run
		// without consumers changes leaders faster than the candidates
		// settle, they skip requests, and subtracting that run would
		// charge the difference to the consumers. (A measuring pause,
		// not ordering.)
		time.Sleep(10 * time.Millisecond)
	}
	// Let the re-campaign and the consumers' re-reads of the last change
	// land before counting (a measuring window, not ordering).
	time.Sleep(200 * time.Millisecond)
	elapsed := time.Since(start)
	after := packets(b, srv)
	s1, err := srv.SessionPackets(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var own int64
	for _, sid := range sessions {
		p0, ok0 := s0[sid]
		p1, ok1 := s1[sid]
		if !ok0 || !ok1 {
			b.Fatalf("%s: session 0x%x missing from cons", what, sid)
		}
		own += p1 - p0
	}
	res.server = (float64(after-before-1) - idle*elapsed.Seconds()) / herdChanges
	res.consumers = float64(own) / herdChanges
	return res
}

// natsConsumers runs one bridge on group and herdConsumers NATS
// subscriptions to its leader.elected subject, spread over 20 connections.
func natsConsumers(b *testing.B, url string, addrs []string, group string, out chan<- learned, quit <-chan struct{}) ([]int64, func()) {
	sink, err := natssink.New(natssink.Options{URL: url})
	if err != nil {
		b.Fatal(err)
	}
	subj, _ := publish.Subject(publish.LeaderElected, group)
	var conns []*nats.Conn
	for i := range herdConsumers {
		if i%50 == 0 {
			nc, err := nats.Connect(url)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, nc)
		}
		nc := conns[len(conns)-1]
		if _, err := nc.Subscribe(subj, func(m *nats.Msg) {
			at := time.Now()
			if e, err := natssink.Decode(m); err == nil && e.Owner != nil {
				report(out, quit, learned{i, e.Owner.Node, at})
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, nc := range conns {
		if err := nc.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	bs := benchSessionTB(b, addrs)
	br := startBridge(b, bs, []string{group}, sink)
	return []int64{bs.ID()}, func() {
		br.stop()
		for _, nc := range conns {
			nc.Close()
		}
	}
}

// zkConsumers opens herdConsumers go-zookeeper sessions, each keeping a
// children watch on group and reporting its lowest node.
func zkConsumers(b *testing.B, addrs []string, group string, out chan<- learned, quit <-chan struct{}) ([]int64, func()) {
	conns := make([]*zk.Conn, herdConsumers)
	errs := make(chan error, herdConsumers)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c, ev, err := zk.Connect(addrs, benchSessionTimeout, zk.WithLogger(quiet{}))
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
			timeout := time.After(time.Minute)
			for {
				select {
				case e := <-ev:
					if e.State != zk.StateHasSession {
						continue
					}
					go drain(ev)
					return
				case <-timeout:
					errs <- fmt.Errorf("consumer %d: no ZooKeeper session within a minute", i)
					go drain(ev)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var failures atomic.Int64
	var closing atomic.Bool
	var run sync.WaitGroup
	for i, c := range conns {
		run.Add(1)
		go func() {
			defer run.Done()
			for {
				children, _, ch, err := c.ChildrenW(group)
				if closing.Load() {
					return
				}
				if err != nil {
					failures.Add(1)
					time.Sleep(10 * time.Millisecond) // retry backoff
					continue
				}
				at := time.Now()
				if node := lowest(children); node != "" {
					report(out, quit, learned{i, node, at})
				}
				if ev := <-ch; ev.Type == zk.EventNotWatching {
					return
				}
			}
		}()
	}
	sessions := make([]int64, len(conns))
	for i, c := range conns {
		sessions[i] = c.SessionID()
	}
	return sessions, func() {
		if n := failures.Load(); n > 0 {
			b.Logf("direct consumers: %d failed children reads (retried)", n)
		}
		closing.Store(true)
		for _, c := range conns {
			c.Close()
		}
		run.Wait()
	}
}

func lowest(children []string) string {
	best, bestSeq, found := "", int32(0), false
	for _, c := range children {
		if seq, ok := elect.ParseSequence(c); ok && (!found || elect.SeqLess(seq, bestSeq)) {
			best, bestSeq, found = c, seq, true
		}
	}
	return best
}

// report hands a consumer's news to the benchmark, unless it stopped
// listening.
func report(out chan<- learned, quit <-chan struct{}, l learned) {
	select {
	case out <- l:
	case <-quit:
	}
}
