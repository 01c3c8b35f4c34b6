package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
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
// give back one lock, again and again: herald's elect.Lock, go-zookeeper's
// zk.Lock and Curator 5.4's InterProcessMutex (in one JVM, see
// CuratorBench.java) on the same server. Each side runs 10 s, in four
// 2.5 s slices interleaved with the others' in a balanced, mirrored order
// (every side twice in each half, and the second half the first one
// reversed), so that a server or machine growing slower or faster over
// the run, or a burst of noise, weighs on every side alike. The clients
// and their sessions live for the whole run, and every side first runs
// one unmeasured slice (2 s, Curator's 4 s): the JVM's JIT compilers have
// then compiled Curator's and the ZooKeeper client's hot paths, and the
// server has seen every side's requests.
//
// A cycle is one acquire and one release. herald's costs 6 requests
// (create; data watches on its own node, the node just below and the one
// two below, guessed in a steady rotation; the listing when the node two
// below goes; the delete that releases), the peers' 5 (create, listing,
// watch, a second listing after the wake-up, delete). The table also
// splits them by kind, from the server's own counters: the "reads of a
// gone node" are watches set on a node deleted meanwhile, and for herald
// guesses that named a node that never existed.
//
// The peers' handoff is a chain of two round trips: the release reaches
// the server, the event the waiter, and only the listing after it proves
// the waiter owns. herald's waiter next in line has listed before the
// release (when the node two below went), so the release's event alone
// hands over. It pays for that with more requests and fired watches off
// the chain, and with the server and the clients on the same two cores
// (the "CPU in use" row) those compete with the chain: how far ahead the
// short chain puts herald depends on how much CPU the server spends per
// request (BenchmarkServerCostPerRequest).
func BenchmarkLockHandoff(b *testing.B) {
	zkc := benchCluster(b)
	for range b.N {
		lockHandoff(b, zkc, zkc.Addrs(), 10, "", 0)
	}
}

// networkDelay is what BenchmarkLockHandoffAcrossANetwork adds each way.
const networkDelay = time.Millisecond

// BenchmarkLockHandoffAcrossANetwork: BenchmarkLockHandoff with every
// client's connection through a proxy that delays each packet by a
// millisecond each way (2.5 ms round trips here: Go's timers wake a little
// late), as between a client and a ZooKeeper server on different
// machines, a zone apart. On loopback a round trip costs less than the
// CPU a request takes, and the handoff chain's length hardly shows; here
// it sets the rate. The proxy's CPU is in the Go clients' figures, not
// Curator's.
func BenchmarkLockHandoffAcrossANetwork(b *testing.B) { lockAcrossANetwork(b, 10) }

// BenchmarkFreeLockAcrossANetwork: one client takes and gives back a lock
// nobody else wants, again and again, across the same delaying proxy as
// BenchmarkLockHandoffAcrossANetwork: what a lock costs when it is free,
// which across a network is round trips. herald sends the listing that
// proves its node the lowest right behind the create (one round trip to
// take, one to give back); zk.Lock and Curator wait for the create's
// reply before they list (two, and one).
func BenchmarkFreeLockAcrossANetwork(b *testing.B) { lockAcrossANetwork(b, 1) }

// lockAcrossANetwork runs lockHandoff with clients each, through a proxy
// adding networkDelay each way.
func lockAcrossANetwork(b *testing.B, clients int) {
	zkc := benchCluster(b)
	p, err := faultproxy.New(zkc.Member(0).Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	p.Delay(networkDelay)
	rtt := roundTrip(b, p.Addr())
	for range b.N {
		lockHandoff(b, zkc, []string{p.Addr()}, clients, acrossANetwork(rtt), rtt)
	}
}

func acrossANetwork(rtt time.Duration) string {
	return fmt.Sprintf(", across a network (%v added each way: %v round trips)", networkDelay, rtt.Round(100*time.Microsecond))
}

// roundTrip is the median time a getData takes to answer at addr.
func roundTrip(b *testing.B, addr string) time.Duration {
	b.Helper()
	c := rawConn(b, []string{addr}, benchSessionTimeout)
	var rtts []time.Duration
	for range 21 {
		start := time.Now()
		if _, _, err := c.Get("/"); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}

// lockHandoff runs BenchmarkLockHandoff's three sides with clients each,
// connected to addrs, and prints the table (where says where they are;
// rtt, when known, is their round trip to the server). With one client a
// cycle hands the lock to nobody: the figures are cycles, and issue 18's
// targets, which are for handoffs, are not judged.
func lockHandoff(b *testing.B, zkc *zkserver.Cluster, addrs []string, clients int, where string, rtt time.Duration) {
	srv := zkc.Member(0)
	const slice, warm = 2500 * time.Millisecond, 2 * time.Second
	const order = "hpcphc" + "chpcph"
	hp, gp, cp := groupPath(b, "herald-lock"), groupPath(b, "gozk-lock"), groupPath(b, "curator-lock")
	heraldCycles := make([]func(context.Context) error, clients)
	for i := range heraldCycles {
		l, err := elect.NewLock(benchSession(b, addrs), hp, elect.CreateParents(), elect.WithID(fmt.Sprint("h", i)))
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
		l := zk.NewLock(rawConn(b, addrs, benchSessionTimeout), gp, zk.WorldACL(zk.PermAll))
		peerCycles[i] = func(context.Context) error {
			if err := l.Lock(); err != nil {
				return err
			}
			return l.Unlock()
		}
	}
	cur := startCuratorBench(b, strings.Join(addrs, ","), benchSessionTimeout, clients)
	look := rawConn(b, zkc.Addrs(), benchSessionTimeout)
	sides := map[rune]*lockSide{
		'h': {group: hp, run: goLoop(b, heraldCycles)},
		'p': {group: gp, run: goLoop(b, peerCycles)},
		'c': {group: cp, run: func(w time.Duration) (int64, time.Duration, time.Duration) { return cur.run(b, cp, w) }},
	}
	for _, k := range "hpc" {
		s, w := sides[k], warm
		if k == 'c' {
			w = 2 * warm
		}
		s.run(w)
		emptied(b, look, s.group)
	}
	for _, k := range order {
		s := sides[k]
		s.fig = s.fig.add(measureLoop(b, srv, s.run, slice))
		emptied(b, look, s.group)
	}
	h, g, c := sides['h'].fig, sides['p'].fig, sides['c'].fig
	rg, rc := h.rate()/g.rate(), h.rate()/c.rate()
	unit := "-handoffs/s"
	if clients == 1 {
		unit = "-cycles/s"
	}
	b.ReportMetric(h.rate(), "herald"+unit)
	b.ReportMetric(g.rate(), "gozk"+unit)
	b.ReportMetric(c.rate(), "curator"+unit)
	b.ReportMetric(rg, "ratio-gozk")
	b.ReportMetric(rc, "ratio-curator")
	b.ReportMetric(h.per(h.zk.packets), "herald-packets/cycle")
	figs := []loopFigures{h, g, c}
	each := func(f func(loopFigures) string) []string {
		var out []string
		for _, x := range figs {
			out = append(out, f(x))
		}
		return out
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}
	line := func(what string, v func(loopFigures) float64, format string) []string {
		r := append([]string{what}, each(func(x loopFigures) string { return fmt.Sprintf(format, v(x)) })...)
		return append(r, ratio(v(h), v(g)), ratio(v(h), v(c)))
	}
	count := func(field func(zkCounts) int64) func(loopFigures) float64 {
		return func(x loopFigures) float64 { return x.per(field(x.zk)) }
	}
	usec := func(d func(loopFigures) time.Duration) func(loopFigures) float64 {
		return func(x loopFigures) float64 { return float64(d(x)) / float64(time.Microsecond) }
	}
	mix := append([]string{"  of which writes + reads"}, each(func(x loopFigures) string {
		return fmt.Sprintf("%.2f + %.2f", x.per(x.zk.writes), x.per(x.zk.reads))
	})...)
	first, title := append(line("handoffs/s", loopFigures.rate, "%.0f"), ">= 1.25x / >= 2x", met(rg >= 1.25)+" / "+met(rc >= 2)),
		fmt.Sprintf("Lock handoff throughput, %d clients with their own sessions, one lock", clients)
	if clients == 1 {
		first, title = line("take-and-release cycles/s", loopFigures.rate, "%.0f"), "A free lock: one client takes and releases it"
	}
	rows := [][]string{first}
	if rtt > 0 {
		rows = append(rows, line("round trips per cycle", func(x loopFigures) float64 { return 1 / x.rate() / rtt.Seconds() }, "%.2f"))
	}
	rows = append(rows, [][]string{
		line("ZooKeeper requests per cycle", count(func(z zkCounts) int64 { return z.packets }), "%.2f"),
		mix,
		line("  listings (getChildren)", count(func(z zkCounts) int64 { return z.getChildren }), "%.2f"),
		append([]string{"  reads of a gone node (missed watch or guess)"}, each(func(x loopFigures) string { return fmt.Sprintf("%.3f", x.per(x.zk.gone())) })...),
		line("watches fired by deletes", count(func(z zkCounts) int64 { return z.deletedWatches }), "%.2f"),
		line("ZooKeeper CPU per cycle", usec(loopFigures.serverCPU), "%.0f µs"),
		line("client CPU per cycle (Curator: its JVM)", usec(loopFigures.clientCPU), "%.0f µs"),
		line("CPU in use, ZooKeeper + clients (2 cores)", loopFigures.busy, "%.2f"),
	}...)
	wideTable(benchOut(), fmt.Sprintf("%s, %v per side in %d interleaved slices%s", title, slice*time.Duration(len(order)/3), len(order)/3, where),
		[]string{"measure", "herald", "zk.Lock", "Curator", "herald/zk.Lock", "herald/Curator", "target", "result"}, rows)
}

// lockSide is one recipe's clients in BenchmarkLockHandoff: its group, a
// slice of its loop, and what its slices measured so far.
type lockSide struct {
	group string
	run   sliceRun
	fig   loopFigures
}

// sliceRun runs a side's clients for a window and returns the cycles they
// completed, the time that took and the CPU the clients used.
type sliceRun func(window time.Duration) (cycles int64, elapsed, clientCPU time.Duration)

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// loopFigures is what lock loops measured: cycles and time, the server's
// request counters and CPU time, and the clients' CPU time.
type loopFigures struct {
	cycles         int64
	zk             zkCounts
	elapsed        time.Duration
	server, client time.Duration
}

func (f loopFigures) add(o loopFigures) loopFigures {
	return loopFigures{cycles: f.cycles + o.cycles, zk: f.zk.add(o.zk), elapsed: f.elapsed + o.elapsed, server: f.server + o.server, client: f.client + o.client}
}

func (f loopFigures) rate() float64            { return float64(f.cycles) / f.elapsed.Seconds() }
func (f loopFigures) per(n int64) float64      { return float64(n) / float64(f.cycles) }
func (f loopFigures) serverCPU() time.Duration { return f.server / time.Duration(f.cycles) }
func (f loopFigures) clientCPU() time.Duration { return f.client / time.Duration(f.cycles) }
func (f loopFigures) busy() float64            { return (f.server + f.client).Seconds() / f.elapsed.Seconds() }

// serverCPU is the CPU time srv has used so far.
func serverCPU(b *testing.B, srv *zkserver.Server) time.Duration {
	b.Helper()
	d, err := srv.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return d
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

// measureLoop runs one slice of a side and reads the server's counters and
// CPU time around it.
func measureLoop(b *testing.B, srv *zkserver.Server, run sliceRun, window time.Duration) loopFigures {
	b.Helper()
	c0, s0 := counts(b, srv), serverCPU(b, srv)
	n, elapsed, client := run(window)
	s1, c1 := serverCPU(b, srv), counts(b, srv)
	return loopFigures{cycles: n, zk: c1.since(c0), elapsed: elapsed, server: s1 - s0, client: client}
}

// goLoop runs cycles, each client's take-and-release, in goroutines of
// this process for a window.
func goLoop(b *testing.B, cycles []func(context.Context) error) sliceRun {
	return func(window time.Duration) (int64, time.Duration, time.Duration) {
		b.Helper()
		own0 := ownCPU(b)
		ctx, cancel := context.WithTimeout(context.Background(), window)
		defer cancel()
		var n atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, len(cycles))
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
		own1 := ownCPU(b)
		close(errs)
		for err := range errs {
			b.Fatalf("lock loop: %v", err)
		}
		return n.Load(), elapsed, own1 - own0
	}
}

// BenchmarkElectionHandoff: 50 candidates, 40 handoffs (the leader resigns,
// the next leader's Campaign returns), in 10 rounds, against the raw floor
// of the same server, measured as often: the time from a delete to its
// exists watch firing. Issue 18's targets are a p50 within 2x that floor
// and a p99 under 3 ms. A single round's p99 would be its slowest of 40
// handoffs; 400 make it a percentile.
//
// A candidate leads only from proof. All but the second candidate joined
// behind two or more, so when its predecessor resigns it cannot tell from
// the NodeDeleted alone that nothing lower is left: it lists, and leads when
// the listing shows it lowest. A handoff is therefore the floor plus one
// round trip (the first one excepted: the second candidate listed while
// the leader was the only node below it, so the leader's deletion alone
// is its proof).
//
// It also counts ZooKeeper packets per handoff, idle pings taken off: the
// release (one multi that deletes the leader's node and records why in
// the group's office) and the successor's listing, so 2 (the first
// handoff 1). A leader that holds its office for a while sends one more,
// the data watch on its own node that brings its term; here each leader
// resigns the moment it leads, before its handle has sent that watch, so
// the figure does not include it (the server's counters show a getData
// or two in 40 handoffs).
func BenchmarkElectionHandoff(b *testing.B) {
	zkc := benchCluster(b)
	srv := zkc.Member(0)
	const candidates, handoffs, rounds = 50, 40, 10
	for range b.N {
		var lat, floor []time.Duration
		var per float64
		for range rounds {
			floor = append(floor, deleteWatchFloor(b, zkc.Addrs(), handoffs)...)
			l, p := electionRound(b, zkc, srv, candidates, handoffs)
			lat, per = append(lat, l...), per+p/rounds
		}
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		f50, f99 := percentile(floor, 50), percentile(floor, 99)
		b.ReportMetric(msf(p50), "herald-p50-ms")
		b.ReportMetric(msf(p99), "herald-p99-ms")
		b.ReportMetric(msf(f50), "floor-p50-ms")
		b.ReportMetric(per, "packets/handoff")
		table(benchOut(), fmt.Sprintf("Election handoff, %d candidates, %d handoffs, %d rounds (peer = raw delete -> exists watch on the same server)", candidates, handoffs, rounds), []row{
			{what: "latency p50", herald: ms(p50), peer: ms(f50), ratio: fmt.Sprintf("%.2fx", float64(p50)/float64(f50)), target: "<= 2x floor", verdict: met(p50 <= 2*f50)},
			{what: "latency p99", herald: ms(p99), peer: ms(f99), ratio: fmt.Sprintf("%.2fx", float64(p99)/float64(f99)), target: "< 3 ms", verdict: met(p99 < 3*time.Millisecond)},
			{what: "ZooKeeper packets per handoff (release + proof listing)", herald: fmt.Sprintf("%.2f", per), peer: "2 expected (+1 own-node watch if held)"},
		})
	}
}

// electionRound joins candidates to a new election, one by one, and
// measures handoffs of it: each leader resigns, and the time until the
// next one's Campaign returns is one latency. It also returns the
// ZooKeeper packets per handoff, idle pings taken off.
func electionRound(b *testing.B, zkc *zkserver.Cluster, srv *zkserver.Server, candidates, handoffs int) ([]time.Duration, float64) {
	b.Helper()
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
	return lat, (float64(after-before-1) - idle*elapsed.Seconds()) / float64(handoffs)
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
