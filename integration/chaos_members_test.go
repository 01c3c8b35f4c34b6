package integration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestChaosSharedGroupMembers (HERALD_CHAOS=1, make chaos): shared groups
// on a 3-member ensemble whose members fail under them. A lock group holds
// two herald Locks, Curator's InterProcessMutex and go-zookeeper's zk.Lock;
// an election group two herald Elections and Curator's LeaderLatch. Each
// herald session is pinned to one member, so that every fault has a herald
// client on the member it hits; the others may use any member. Every 2–4 s
// one fault: the ensemble's leader killed with SIGKILL and started again, a
// follower cut off from the others for 2–6 s (Isolate), or a member frozen
// with SIGSTOP for 1–3 s. The last 10 s are quiet.
//
// The foreign clients hold as their own documentation asks of a tenure that
// must stay exclusive through connection trouble: they count it ended at
// the first disconnection (Curator's SUSPENDED; go-zookeeper's
// StateDisconnected), and start over on a new session. herald's ends when
// its Handle's Done closes, or its hold is over. No two tenures may
// overlap, and once the ensemble is whole again after a fault, no stretch
// without an owner may last longer than two session timeouts.
// HERALD_CHAOS_DURATION sets how long (default 45s). Every tenure is held
// 20–80 ms, but one in ten 2–5 s, longer than a session's timeout, so that
// faults find owners in the middle of their tenure.
//
// HERALD_CHAOS_BLIND=1 makes the foreign clients ignore their connection's
// state, as many programs do: they restart only when a call fails. An
// overlap then may be of the foreign recipe's own making (Curator 5.4's
// LeaderLatch can lead on a node its expired session no longer holds,
// CURATOR-696); HERALD_CHAOS_NOTES=1 keeps every event in a file either
// way.
func TestChaosSharedGroupMembers(t *testing.T) {
	if os.Getenv("HERALD_CHAOS") != "1" {
		t.Skip("chaos test: set HERALD_CHAOS=1 (make chaos); HERALD_CHAOS_DURATION sets how long (default 45s)")
	}
	duration := 45 * time.Second
	if v := os.Getenv("HERALD_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("HERALD_CHAOS_DURATION=%q: want a positive Go duration such as 45s or 5m", v)
		}
		duration = max(d, 20*time.Second) // faults end 10 s before the end
	}
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3, Isolatable: true})
	addrs := zkc.Addrs()
	pc := newPeerCtl(startCurator(t, zkc.ConnectString(), sharedPeerSession), "Curator")
	locks, elections := groupPath(t, "locks"), groupPath(t, "elections")
	lockLog, electionLog := newOwnLog(), newOwnLog()
	careful := "careful-"
	if os.Getenv("HERALD_CHAOS_BLIND") == "1" {
		careful = "blind-"
	}
	one := func(i int) []string { return []string{addrs[i]} }
	lockers := []cycler{
		heraldChaosCycler(one(0), locks, lockLog, false),
		heraldChaosCycler(one(1), locks, lockLog, false),
		peerCycler(t, pc, careful+"mutex", "curator-mutex", "Curator InterProcessMutex", locks, lockLog, duration),
		gozkChaosCycler(addrs, locks, lockLog),
	}
	electors := []cycler{
		heraldChaosCycler(one(1), elections, electionLog, true),
		heraldChaosCycler(one(2), elections, electionLog, true),
		peerCycler(t, pc, careful+"latch", "curator-latch", "Curator LeaderLatch", elections, electionLog, duration),
	}
	const quietTail = 10 * time.Second
	faults := &faultLog{counts: map[string]int{}}
	fctx, stopFaults := context.WithCancel(context.Background())
	var fwg sync.WaitGroup
	fwg.Add(1)
	go func() {
		defer fwg.Done()
		faults.run(t, fctx, zkc, time.Now().Add(duration-quietTail))
	}()
	start, until := runMix(t, duration, append(append([]cycler(nil), lockers...), electors...))
	stopFaults()
	fwg.Wait()
	t.Logf("faults: %v; %s", faults.counts, faults.timeline(lockLog))
	chaosReport(t, "locks", lockLog, lockers, faults, start, until)
	chaosReport(t, "elections", electionLog, electors, faults, start, until)
}

// ---- participants that live through member failures ----

// tenureGate ends a tenure at most once, whichever comes first: the hold
// being over, or the connection's trouble (lost). A tenure begun after
// trouble its acquisition did not see is not begun at all.
type tenureGate struct {
	id  string
	log *ownLog

	mu      sync.Mutex
	epoch   int
	holding bool
}

func (g *tenureGate) now() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch
}

func (g *tenureGate) lost() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch++
	if g.holding {
		g.holding = false
		g.log.mark("rel", g.id)
	}
}

// begin logs acq unless there was trouble since epoch e0.
func (g *tenureGate) begin(e0 int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.epoch != e0 {
		return false
	}
	g.holding = true
	g.log.mark("acq", g.id)
	return true
}

func (g *tenureGate) holds() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding
}

// end logs rel unless lost did; it reports whether the tenure was kept.
func (g *tenureGate) end() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	kept := g.holding
	if kept {
		g.holding = false
		g.log.mark("rel", g.id)
	}
	return kept
}

// holdChaos is how long a tenure lasts: 20–80 ms, but one in ten 2–5 s,
// longer than a session's timeout, so that faults find owners in the
// middle of their tenure, which is when two may come to believe they own.
func holdChaos() time.Duration {
	if rand.IntN(10) == 0 {
		return time.Duration(2000+rand.IntN(3001)) * time.Millisecond
	}
	return holdRandom()
}

// heraldChaosCycler is a herald Lock (or Election) on servers, one object
// per session, a new session whenever one is lost.
func heraldChaosCycler(servers []string, group string, log *ownLog, election bool) cycler {
	short, name := "herald-lock", "herald Lock"
	if election {
		short, name = "herald-election", "herald Election"
	}
	id := newID(short)
	name += " on " + strings.Join(servers, ",")
	log.name(id, name)
	return cycler{id: id, name: name, run: func(ctx context.Context, until time.Time) {
		for time.Now().Before(until) && ctx.Err() == nil {
			s, err := elect.NewSession(ctx, servers, elect.WithSessionTimeout(sharedPeerSession), elect.WithConnectTimeout(time.Minute))
			if err != nil {
				pause(ctx, 100*time.Millisecond)
				continue
			}
			heraldTenures(ctx, until, s, group, id, log, election)
			_ = s.Close()
		}
	}}
}

func heraldTenures(ctx context.Context, until time.Time, s *elect.Session, group, id string, log *ownLog, election bool) {
	var take func() (*elect.Handle, error)
	if election {
		e, err := elect.NewElection(s, group, elect.CreateParents())
		if err != nil {
			log.note(id, "NewElection: %v", err)
			return
		}
		take = func() (*elect.Handle, error) { return e.Campaign(ctx, id) }
	} else {
		l, err := elect.NewLock(s, group, elect.CreateParents(), elect.WithID(id))
		if err != nil {
			log.note(id, "NewLock: %v", err)
			return
		}
		take = func() (*elect.Handle, error) { return l.Acquire(ctx) }
	}
	for time.Now().Before(until) && ctx.Err() == nil && s.Err() == nil {
		log.mark("queued", id)
		h, err := take()
		if err != nil {
			log.note(id, "acquire: %v", err)
			return
		}
		if h.Held() {
			log.mark("acq", id)
			timer := time.NewTimer(holdChaos())
			select {
			case <-timer.C:
			case <-h.Done():
				log.mark("state:lost", id)
				log.note(id, "lost %s: %s (%v)", h.Node(), h.Reason(), h.Err())
			}
			timer.Stop()
			log.mark("rel", id)
		}
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if election {
			err = h.Resign(rctx)
		} else {
			err = h.Release(rctx)
		}
		cancel()
		if err != nil || h.Err() != nil {
			return // lost, not released: a new session
		}
	}
}

// gozkChaosCycler is go-zookeeper's zk.Lock, a new connection (and Lock)
// whenever the connection has trouble.
func gozkChaosCycler(servers []string, group string, log *ownLog) cycler {
	id := newID("gozk-lock")
	log.name(id, "go-zookeeper zk.Lock")
	return cycler{id: id, name: "go-zookeeper zk.Lock", run: func(ctx context.Context, until time.Time) {
		for time.Now().Before(until) && ctx.Err() == nil {
			c, ev, err := zk.Connect(servers, sharedPeerSession, zk.WithLogger(quiet{}))
			if err != nil {
				pause(ctx, 100*time.Millisecond)
				continue
			}
			stop := context.AfterFunc(ctx, c.Close) // LockWithData ignores contexts
			gozkTenures(ctx, until, c, ev, group, id, log)
			stop()
			c.Close()
		}
	}}
}

func gozkTenures(ctx context.Context, until time.Time, c *zk.Conn, ev <-chan zk.Event, group, id string, log *ownLog) {
	if !awaitSession(ctx, ev) {
		return
	}
	g := &tenureGate{id: id, log: log}
	go func() {
		for e := range ev {
			// Watches fire on this channel too; only the session's
			// state says whether we may still own.
			if e.Type == zk.EventSession && e.State != zk.StateHasSession && e.State != zk.StateConnected {
				log.mark("state:"+e.State.String(), id)
				if os.Getenv("HERALD_CHAOS_BLIND") != "1" {
					g.lost()
				}
			}
		}
	}()
	l := zk.NewLock(c, group, zk.WorldACL(zk.PermAll))
	for time.Now().Before(until) && ctx.Err() == nil {
		e0 := g.now()
		if c.State() != zk.StateHasSession {
			return
		}
		log.mark("queued", id)
		if err := l.LockWithData([]byte(id)); err != nil {
			log.note(id, "lock: %v", err)
			return
		}
		if g.begin(e0) {
			for end := time.Now().Add(holdChaos()); time.Now().Before(end) && g.holds(); {
				time.Sleep(5 * time.Millisecond)
			}
		}
		kept := g.end()
		if err := l.Unlock(); err != nil || !kept {
			log.note(id, "tenure kept %v, unlock: %v", kept, err)
			return
		}
	}
}

// awaitSession waits for a new connection's session (20 s at most).
func awaitSession(ctx context.Context, ev <-chan zk.Event) bool {
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-ev:
			if !ok {
				return false
			}
			if e.State == zk.StateHasSession {
				return true
			}
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// ---- the faults ----

// faultLog records each fault from its start until the ensemble was whole
// again (every member leader or follower).
type faultLog struct {
	mu      sync.Mutex
	windows []faultWindow
	counts  map[string]int
}

type faultWindow struct {
	what         string
	from, healed int64
}

func (f *faultLog) record(what string, from int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.windows = append(f.windows, faultWindow{what: what, from: from, healed: wallNow()})
	f.counts[what]++
}

// run injects one fault at a time until end, each healed, and the
// ensemble whole again, before the next.
func (f *faultLog) run(t *testing.T, ctx context.Context, zkc *zkserver.Cluster, end time.Time) {
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for {
		pause(ctx, time.Duration(2000+rnd.IntN(2000))*time.Millisecond)
		if ctx.Err() != nil || time.Now().After(end) {
			return
		}
		from := wallNow()
		what, err := oneFault(ctx, zkc, rnd)
		if err == nil {
			err = whole(ctx, zkc)
		}
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		f.record(what, from)
	}
}

func oneFault(ctx context.Context, zkc *zkserver.Cluster, rnd *rand.Rand) (string, error) {
	switch rnd.IntN(3) {
	case 0:
		l, err := zkc.Leader(ctx)
		if err != nil {
			return "kill leader", err
		}
		if err := l.Kill(); err != nil {
			return "kill leader", err
		}
		pause(ctx, time.Duration(500+rnd.IntN(1500))*time.Millisecond)
		return "kill leader", l.Start(ctx)
	case 1:
		fs, err := zkc.Followers(ctx)
		if err != nil {
			return "isolate follower", err
		}
		i := fs[rnd.IntN(len(fs))]
		if err := zkc.Isolate(i, true); err != nil {
			return "isolate follower", err
		}
		pause(ctx, time.Duration(2000+rnd.IntN(4000))*time.Millisecond)
		return "isolate follower", zkc.Isolate(i, false)
	default:
		m := zkc.Member(rnd.IntN(zkc.Len()))
		if err := m.Pause(); err != nil {
			return "pause member", err
		}
		pause(ctx, time.Duration(1000+rnd.IntN(2000))*time.Millisecond)
		return "pause member", m.Resume()
	}
}

// whole waits until every member is leader or follower (a minute at most).
func whole(ctx context.Context, zkc *zkserver.Cluster) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var states []string
		ok := true
		for _, m := range zkc.Members() {
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := m.State(qctx)
			cancel()
			if err != nil || (st != "leader" && st != "follower") {
				ok = false
				states = append(states, fmt.Sprintf("zk%d %s %v", m.ID(), st, err))
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("ensemble not whole again: %s", strings.Join(states, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// timeline prints each fault's stretch, relative to log's start.
func (f *faultLog) timeline(log *ownLog) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, w := range f.windows {
		out = append(out, fmt.Sprintf("%s %s–%s", w.what, log.at(w.from), log.at(w.healed)))
	}
	return strings.Join(out, ", ")
}

// sinceHealed is where a stretch without an owner ending at to starts
// counting: at from, or when the ensemble was whole again after the last
// fault begun before to, whichever is later.
func (f *faultLog) sinceHealed(from, to int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.windows {
		if w.from < to {
			from = max(from, w.healed)
		}
	}
	return from
}

// chaosReport checks one group: no overlap (saying which clients), no
// stretch without an owner beyond two session timeouts once the ensemble
// was whole, every participant owning at least once. It logs the figures.
func chaosReport(t *testing.T, group string, log *ownLog, cs []cycler, faults *faultLog, start, until time.Time) {
	t.Helper()
	log.checkExclusive(t)
	evs, _ := log.snapshot()
	ts, _ := tenuresOf(evs, wallNow())
	bound := 2 * sharedPeerSession
	var widest, widestHealed time.Duration
	for _, g := range gapsOf(ts, start.UnixNano(), until.UnixNano(), 0) {
		widest = max(widest, time.Duration(g.to-g.from))
		healed := time.Duration(g.to - faults.sinceHealed(g.from, g.to))
		widestHealed = max(widestHealed, healed)
		if healed > bound {
			t.Errorf("%s: nobody owned from %s to %s, %v after the ensemble was whole (bound %v)\n%s", group, log.at(g.from), log.at(g.to),
				healed.Round(time.Millisecond), bound, log.timeline(eventsAround(evs, g.from, g.to)))
		}
	}
	var counts []string
	for _, c := range cs {
		n := countEvents(evs, "acq", c.id)
		counts = append(counts, fmt.Sprintf("%s %d", log.label(c.id), n))
		if n == 0 {
			t.Errorf("%s: %s never owned", group, log.label(c.id))
		}
	}
	_, errs := log.snapshot()
	for _, e := range errs {
		t.Errorf("%s: %s", group, e)
	}
	if t.Failed() || os.Getenv("HERALD_CHAOS_NOTES") == "1" {
		dumpChaos(t, group, log, faults)
		t.Logf("%s: %s", group, log.timeline(nil))
	}
	t.Logf("%s: %d tenures, %d overlaps, longest without an owner %v (%v after the ensemble was whole); %s", group, len(ts),
		len(overlapsOf(ts)), widest.Round(time.Millisecond), widestHealed.Round(time.Millisecond), strings.Join(counts, ", "))
}

// dumpChaos writes every event of a group, and the faults, to a file it
// keeps, for a failure's post-mortem.
func dumpChaos(t *testing.T, group string, log *ownLog, faults *faultLog) {
	t.Helper()
	f, err := os.CreateTemp("", "herald-chaos-members-"+group+"-*.log")
	if err != nil {
		t.Logf("keep the log: %v", err)
		return
	}
	defer f.Close()
	evs, errs := log.snapshot()
	for _, e := range evs {
		fmt.Fprintf(f, "%s %-24s %s\n", log.at(e.v), e.kind, log.label(e.who))
	}
	fmt.Fprintf(f, "faults: %s\nfailures: %v\n%s", faults.timeline(log), errs, log.timeline(nil))
	t.Logf("%s: every event is in %s", group, f.Name())
}
