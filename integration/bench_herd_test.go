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
	herdChanges   = 10
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
// ZooKeeper packets per change that the consumers cause (the candidates'
// own packets, measured without consumers, are subtracted) and the time
// until all 1,000 know.
func BenchmarkHerd(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	ns := natsserver.Start(b)
	for range b.N {
		base, _ := herdRun(b, srv, zkc.Addrs(), "baseline", nil)
		hPk, hAll := herdRun(b, srv, zkc.Addrs(), "herald", func(group string, out chan<- learned, quit <-chan struct{}) func() {
			return natsConsumers(b, ns.URL(), zkc.Addrs(), group, out, quit)
		})
		dPk, dAll := herdRun(b, srv, zkc.Addrs(), "direct", func(group string, out chan<- learned, quit <-chan struct{}) func() {
			return zkConsumers(b, zkc.Addrs(), group, out, quit)
		})
		hPk, dPk = hPk-base, dPk-base
		h99, d99 := percentile(hAll, 50), percentile(dAll, 50)
		speed := float64(d99) / float64(h99)
		b.ReportMetric(hPk, "herald-packets/change")
		b.ReportMetric(dPk, "direct-packets/change")
		b.ReportMetric(msf(h99), "herald-all-informed-ms")
		b.ReportMetric(msf(d99), "direct-all-informed-ms")
		table(benchOut(), fmt.Sprintf("The herd: %d consumers, %d changes (herald = NATS subscribers behind one bridge; peer = one ZooKeeper session and children watch each)", herdConsumers, herdChanges), []row{
			{what: "ZooKeeper packets per change caused by consumers", herald: fmt.Sprintf("%.1f", hPk), peer: fmt.Sprintf("%.1f", dPk),
				ratio: fmt.Sprintf("%.0fx fewer", dPk/max(hPk, 0.1)), target: "<= 3, independent of consumers", verdict: met(hPk <= 3)},
			{what: "time until all informed, median", herald: ms(h99), peer: ms(d99), ratio: fmt.Sprintf("%.1fx sooner", speed), target: ">= 5x sooner", verdict: met(speed >= 5)},
			{what: "time until all informed, worst", herald: ms(percentile(hAll, 100)), peer: ms(percentile(dAll, 100))},
		})
	}
}

// herdRun makes herdChanges leadership changes in a fresh group with the
// given consumers attached (none for the baseline) and returns the packets
// per change and, per change, the time until every consumer knew.
func herdRun(b *testing.B, srv *zkserver.Server, addrs []string, what string, consumers func(string, chan<- learned, <-chan struct{}) func()) (float64, []time.Duration) {
	b.Helper()
	group := groupPath(b, what)
	leaders := alternate(b, addrs, group, 2)
	h := <-leaders
	out := make(chan learned, 4*herdConsumers)
	quit := make(chan struct{})
	n := 0
	if consumers != nil {
		stop := consumers(group, out, quit)
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
	before := packets(b, srv)
	start := time.Now()
	var all []time.Duration
	for range herdChanges {
		t0 := time.Now()
		if err := h.Resign(context.Background()); err != nil {
			b.Fatal(err)
		}
		h = <-leaders
		if n > 0 {
			all = append(all, waitAll(h.Node()).Sub(t0))
		}
	}
	// Let the re-campaign and the consumers' re-reads of the last change
	// land before counting (a measuring window, not ordering).
	time.Sleep(200 * time.Millisecond)
	elapsed := time.Since(start)
	after := packets(b, srv)
	return (float64(after-before-1) - idle*elapsed.Seconds()) / herdChanges, all
}

// natsConsumers runs one bridge on group and herdConsumers NATS
// subscriptions to its leader.elected subject, spread over 20 connections.
func natsConsumers(b *testing.B, url string, addrs []string, group string, out chan<- learned, quit <-chan struct{}) func() {
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
	br := startBridge(b, benchSessionTB(b, addrs), []string{group}, sink)
	return func() {
		br.stop()
		for _, nc := range conns {
			nc.Close()
		}
	}
}

// zkConsumers opens herdConsumers go-zookeeper sessions, each keeping a
// children watch on group and reporting its lowest node.
func zkConsumers(b *testing.B, addrs []string, group string, out chan<- learned, quit <-chan struct{}) func() {
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
	return func() {
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
