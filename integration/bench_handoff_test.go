package integration_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
)

// benchSessionTimeout is long so that idle pings stay rare next to the
// packets a benchmark counts.
const benchSessionTimeout = 60 * time.Second

func benchSession(b *testing.B, addrs []string) *elect.Session {
	b.Helper()
	return session(b, addrs, elect.WithSessionTimeout(benchSessionTimeout))
}

// BenchmarkLockHandoff: 10 clients, each with its own session, take and
// give back one lock for 10 s: herald's elect.Lock and go-zookeeper's
// zk.Lock on the same server. Each side runs in four 2.5 s slices, in the
// order herald, peer, peer, herald, peer, herald, herald, peer, so that a
// server or machine growing slower or faster over the run, or a burst of
// noise, weighs on both alike. The clients and their sessions live for the
// whole run.
func BenchmarkLockHandoff(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	const clients, slice, order = 10, 2500 * time.Millisecond, "hpphphhp"
	for range b.N {
		hp, gp := groupPath(b, "herald-lock"), groupPath(b, "gozk-lock")
		heraldCycles := make([]func(context.Context) error, clients)
		for i := range heraldCycles {
			l, err := elect.NewLock(benchSession(b, zkc.Addrs()), hp, elect.CreateParents(), elect.WithID(fmt.Sprint("h", i)))
			if err != nil {
				b.Fatal(err)
			}
			heraldCycles[i] = func(ctx context.Context) error {
				h, err := l.Acquire(ctx)
				if err != nil {
					return err
				}
				return h.Release(ctx)
			}
		}
		peerCycles := make([]func(context.Context) error, clients)
		for i := range peerCycles {
			l := zk.NewLock(rawConn(b, zkc.Addrs(), benchSessionTimeout), gp, zk.WorldACL(zk.PermAll))
			peerCycles[i] = func(context.Context) error {
				if err := l.Lock(); err != nil {
					return err
				}
				return l.Unlock()
			}
		}
		look := rawConn(b, zkc.Addrs(), benchSessionTimeout)
		var h, g loopFigures
		for _, side := range order {
			if side == 'h' {
				h = h.add(lockLoop(b, srv, heraldCycles, slice))
				emptied(b, look, hp)
			} else {
				g = g.add(lockLoop(b, srv, peerCycles, slice))
				emptied(b, look, gp)
			}
		}
		ratio := h.rate() / g.rate()
		b.ReportMetric(h.rate(), "herald-handoffs/s")
		b.ReportMetric(g.rate(), "gozk-handoffs/s")
		b.ReportMetric(ratio, "ratio")
		hs, gs := h.serverCPU(), g.serverCPU()
		hc, gc := h.clientCPU(), g.clientCPU()
		table(benchOut(), "Lock handoff throughput, 10 clients with their own sessions, 10 s each, one lock", []row{
			{what: "handoffs/s", herald: fmt.Sprintf("%.0f", h.rate()), peer: fmt.Sprintf("%.0f (go-zookeeper zk.Lock)", g.rate()),
				ratio: fmt.Sprintf("%.2fx", ratio), target: ">= 1.5x", verdict: met(ratio >= 1.5)},
			{what: "ZooKeeper packets per cycle", herald: fmt.Sprintf("%.2f", h.packetsPer()), peer: fmt.Sprintf("%.2f", g.packetsPer()),
				ratio: fmt.Sprintf("%.2fx", h.packetsPer()/g.packetsPer())},
			{what: "ZooKeeper CPU per cycle", herald: micros(hs), peer: micros(gs), ratio: fmt.Sprintf("%.2fx", float64(hs)/float64(gs))},
			{what: "client process CPU per cycle", herald: micros(hc), peer: micros(gc), ratio: fmt.Sprintf("%.2fx", float64(hc)/float64(gc))},
		})
	}
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// loopFigures is what lock loops measured: cycles and time, and the
// packets and CPU time of the server and of this process (the clients).
type loopFigures struct {
	cycles, packets int64
	elapsed         time.Duration
	server, client  time.Duration
}

func (f loopFigures) add(o loopFigures) loopFigures {
	return loopFigures{cycles: f.cycles + o.cycles, packets: f.packets + o.packets, elapsed: f.elapsed + o.elapsed, server: f.server + o.server, client: f.client + o.client}
}

func (f loopFigures) rate() float64            { return float64(f.cycles) / f.elapsed.Seconds() }
func (f loopFigures) packetsPer() float64      { return float64(f.packets) / float64(f.cycles) }
func (f loopFigures) serverCPU() time.Duration { return f.server / time.Duration(f.cycles) }
func (f loopFigures) clientCPU() time.Duration { return f.client / time.Duration(f.cycles) }

// cpuTimes reads the CPU time srv and this process have used so far.
func cpuTimes(b *testing.B, srv *zkserver.Server) (server, own time.Duration) {
	b.Helper()
	server, err := srv.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return server, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// emptied waits until the lock group has no nodes left: waiters cut off by
// the end of a slice remove theirs in the background, and that must not
// burden the next slice.
func emptied(b *testing.B, c *zk.Conn, group string) {
	b.Helper()
	eventually(b, 10*time.Second, group+" emptied after its slice", func() bool {
		children, _, err := c.Children(group)
		if err != nil && err != zk.ErrNoNode {
			b.Fatal(err)
		}
		return len(children) == 0
	})
}

// lockLoop runs each client's loop of take-and-release for window.
func lockLoop(b *testing.B, srv *zkserver.Server, cycles []func(context.Context) error, window time.Duration) loopFigures {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(cycles))
	before := packets(b, srv)
	srv0, own0 := cpuTimes(b, srv)
	start := time.Now()
	for _, cycle := range cycles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := cycle(ctx); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := packets(b, srv)
	srv1, own1 := cpuTimes(b, srv)
	close(errs)
	for err := range errs {
		b.Fatalf("lock loop: %v", err)
	}
	return loopFigures{cycles: n.Load(), packets: after - before - 1, elapsed: elapsed, server: srv1 - srv0, client: own1 - own0}
}

// BenchmarkElectionHandoff: 50 candidates, 40 handoffs (the leader resigns,
// the next leader's Campaign returns), against the raw floor of the same
// server: the time from a delete to its exists watch firing. It also counts
// ZooKeeper packets per handoff.
func BenchmarkElectionHandoff(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	const candidates, handoffs = 50, 40
	for range b.N {
		floor := deleteWatchFloor(b, zkc.Addrs(), handoffs)
		group := groupPath(b, "election")
		leaders := make(chan *elect.Handle, candidates)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range candidates {
			e, err := elect.NewElection(benchSession(b, zkc.Addrs()), group, elect.CreateParents())
			if err != nil {
				b.Fatal(err)
			}
			// Join one by one so the queue order is known and every
			// candidate waits before the measurement starts.
			joined := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				go func() {
					// The node exists once Participants lists it.
					for {
						ps, _ := e.Participants(ctx)
						if len(ps) > i || ctx.Err() != nil {
							close(joined)
							return
						}
						time.Sleep(time.Millisecond)
					}
				}()
				h, err := e.Campaign(ctx, fmt.Sprint("c", i))
				if err == nil {
					leaders <- h
				}
			}()
			<-joined
		}
		h := <-leaders
		idle := idleRate(b, srv)
		before := packets(b, srv)
		start := time.Now()
		lat := make([]time.Duration, 0, handoffs)
		for range handoffs {
			t0 := time.Now()
			if err := h.Resign(ctx); err != nil {
				b.Fatal(err)
			}
			h = <-leaders
			lat = append(lat, time.Since(t0))
		}
		elapsed := time.Since(start)
		after := packets(b, srv)
		cancel()
		_ = h.Resign(context.Background())
		wg.Wait()
		per := (float64(after-before-1) - idle*elapsed.Seconds()) / handoffs
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		f50, f99 := percentile(floor, 50), percentile(floor, 99)
		b.ReportMetric(msf(p50), "herald-p50-ms")
		b.ReportMetric(msf(p99), "herald-p99-ms")
		b.ReportMetric(msf(f50), "floor-p50-ms")
		b.ReportMetric(per, "packets/handoff")
		table(benchOut(), fmt.Sprintf("Election handoff, %d candidates, %d handoffs (peer = raw delete -> exists watch on the same server)", candidates, handoffs), []row{
			{what: "latency p50", herald: ms(p50), peer: ms(f50), ratio: fmt.Sprintf("%.2fx", float64(p50)/float64(f50)), target: "<= 2x floor", verdict: met(p50 <= 2*f50)},
			{what: "latency p99", herald: ms(p99), peer: ms(f99), ratio: fmt.Sprintf("%.2fx", float64(p99)/float64(f99)), target: "< 3 ms", verdict: met(p99 < 3*time.Millisecond)},
			{what: "ZooKeeper packets per handoff", herald: fmt.Sprintf("%.2f", per), target: "<= 3", verdict: met(per <= 3)},
		})
	}
}

// deleteWatchFloor measures n times how long ZooKeeper takes from a delete
// request to the exists watch on that node firing at another session.
func deleteWatchFloor(b *testing.B, addrs []string, n int) []time.Duration {
	b.Helper()
	del, watch := rawConn(b, addrs, benchSessionTimeout), rawConn(b, addrs, benchSessionTimeout)
	base := groupPath(b, "floor")
	mkdirs(b, del, base)
	out := make([]time.Duration, 0, n)
	for i := range n {
		p := fmt.Sprintf("%s/n%d", base, i)
		if _, err := del.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
		ok, _, ch, err := watch.ExistsW(p)
		if err != nil || !ok {
			b.Fatalf("exists watch on %s: %v %v", p, ok, err)
		}
		t0 := time.Now()
		if err := del.Delete(p, -1); err != nil {
			b.Fatal(err)
		}
		if ev := <-ch; ev.Type != zk.EventNodeDeleted {
			b.Fatalf("watch on %s fired with %v", p, ev.Type)
		}
		out = append(out, time.Since(t0))
	}
	return out
}

// idleRate measures the packets per second the server receives while the
// benchmark does nothing (the sessions' pings), to subtract them.
func idleRate(b *testing.B, srv interface {
	PacketsReceived(context.Context) (int64, error)
}) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const window = time.Second
	p0, err := srv.PacketsReceived(ctx)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(window) // a measuring window, not ordering
	p1, err := srv.PacketsReceived(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return float64(p1-p0-1) / time.Since(t0).Seconds()
}

// BenchmarkServerCostPerRequest: what one request costs the server in CPU,
// a write (create, delete) against a read (getData), sent one at a time by
// one client. It explains the lock figures: a cycle's cost on the server
// follows its writes and reads, not its packet count alone.
func BenchmarkServerCostPerRequest(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	c := rawConn(b, zkc.Addrs(), benchSessionTimeout)
	base := groupPath(b, "cost")
	mkdirs(b, c, base)
	const n = 2000
	acl := zk.WorldACL(zk.PermAll)
	for range b.N {
		measure := func(f func(i int)) time.Duration {
			before, _ := cpuTimes(b, srv)
			for i := range n {
				f(i)
			}
			after, _ := cpuTimes(b, srv)
			return (after - before) / n
		}
		node := base + "/n"
		write := measure(func(i int) {
			if i%2 == 0 {
				if _, err := c.Create(node, []byte("h3"), zk.FlagEphemeral, acl); err != nil {
					b.Fatal(err)
				}
				return
			}
			if err := c.Delete(node, -1); err != nil {
				b.Fatal(err)
			}
		})
		read := measure(func(int) {
			if _, _, err := c.Get(base); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(write)/float64(time.Microsecond), "write-µs")
		b.ReportMetric(float64(read)/float64(time.Microsecond), "read-µs")
		table(benchOut(), fmt.Sprintf("ZooKeeper CPU per request, %d requests of each kind, one at a time", n), []row{
			{what: "write (create or delete)", herald: micros(write), ratio: fmt.Sprintf("%.2fx a read", float64(write)/float64(read))},
			{what: "read (getData)", herald: micros(read)},
		})
	}
}
