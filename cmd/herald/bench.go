package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
)

func init() { register(newBenchCmd) }

type benchOpts struct {
	path     string
	clients  int
	duration time.Duration
	handoffs int
	asJSON   bool
}

func newBenchCmd(a *app) *cobra.Command {
	var o benchOpts
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Measure lock and election handoffs on your ZooKeeper, against its own floor and go-zookeeper's lock",
		Long: `bench measures what herald's recipes get from the ZooKeeper at --zk, with the
same credentials, TLS and ACL flags every command takes:

  - the floor: how long the ensemble takes from a delete to the watch on that
    node firing at another session (--handoffs samples);
  - election handoffs: --clients candidates, each on its own session; the
    leader resigns the moment it leads and rejoins the line; the time from a
    resignation to the next leader, against the floor;
  - lock handoffs: --clients clients take and release one lock for
    --duration, then go-zookeeper's zk.Lock does the same for as long on
    the same sessions; handoffs per second of each, and the time from a
    release to the next holder;
  - a free lock: one client takes and releases a lock nobody else wants
    for --duration, herald's then zk.Lock's: what a lock costs when it is
    free, which across a network is mostly round trips (herald takes a
    free lock in one, zk.Lock in two).

While the locks change hands, bench checks that no two clients ever believe
they hold the lock at once, and exits 1 if they did.

Everything happens under a new node below --path, removed at the end with
the parents of it bench created (once empty); the sessions bench opens go
away with it. --duration runs each of the four lock phases, at most 1h. Run it where the load is welcome: each
lock phase keeps the ensemble as busy as it can.

Stopped by a signal, bench prints the figures of the phases that ended and
none of the one it cut short (with --json, none at all), removes what it
made, and exits 128+N: 130 for Ctrl-C, 143 for SIGTERM. A measure with no
samples says "no samples".`,
		Example: `  herald bench --zk zk1:2181,zk2:2181,zk3:2181
  herald bench --zk zk1:2181 --clients 20 --duration 30s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runBench(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.path, "path", "/herald-bench", "parent of the groups bench makes (each run makes its own node below it and removes it)")
	f.IntVar(&o.clients, "clients", 10, "participants, each with its own ZooKeeper session (2 to 200)")
	f.DurationVar(&o.duration, "duration", 5*time.Second, "how long each of the four lock phases runs (handoffs, then a free lock; herald's, then zk.Lock's), 100ms to 1h")
	f.IntVar(&o.handoffs, "handoffs", 50, "election handoffs to time, and floor samples")
	f.BoolVar(&o.asJSON, "json", false, "print the figures as JSON")
	return cmd
}

// benchReport is what bench prints.
type benchReport struct {
	Servers  string  `json:"servers"`
	Clients  int     `json:"clients"`
	Floor    latency `json:"floor"`
	Election struct {
		latency
		VsFloor float64 `json:"p50_vs_floor"`
	} `json:"election"`
	Locks struct {
		Herald   lockFigures `json:"herald"`
		GoZK     lockFigures `json:"gozk"`
		VsGoZK   float64     `json:"herald_vs_gozk"`
		NeverTwo bool        `json:"never_two_holders"`
		Overlaps int64       `json:"overlaps"`
		Checked  int64       `json:"tenures_checked"`
		Duration string      `json:"duration_each"`
	} `json:"locks"`
	// FreeLock: one client taking and releasing a lock nobody else
	// wants; a figure's release_to_next_holder is a whole cycle.
	FreeLock struct {
		Herald lockFigures `json:"herald"`
		GoZK   lockFigures `json:"gozk"`
		VsGoZK float64     `json:"herald_vs_gozk"`
	} `json:"free_lock"`
}

// latency is the spread of timed samples, in milliseconds.
type latency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
}

type lockFigures struct {
	Cycles   int64   `json:"cycles"`
	PerSec   float64 `json:"handoffs_per_s"`
	Handoff  latency `json:"release_to_next_holder"`
	Overlaps int64   `json:"overlaps"`
}

// validate refuses bench's flags out of their bounds, before it connects.
func (o benchOpts) validate() error {
	switch {
	case o.clients < 2 || o.clients > 200:
		return usageErr("--clients %d: give 2 to 200 (a handoff needs two; each client is a ZooKeeper session)", o.clients)
	case o.duration < 100*time.Millisecond:
		return usageErr("--duration %v: give at least 100ms, e.g. 5s", o.duration)
	case o.duration > maxBenchDuration:
		// A typo (5000m for 5000ms) would keep the ensemble busy for days.
		return usageErr("--duration %v: give at most %v: each of the four lock phases runs that long, %v in all (a typo for ms?); e.g. 5s",
			o.duration, maxBenchDuration, 4*o.duration)
	case o.handoffs < 1 || o.handoffs > 100000:
		return usageErr("--handoffs %d: give 1 to 100000", o.handoffs)
	}
	return groupArg("--path", o.path)
}

func (a *app) runBench(ctx context.Context, o benchOpts) error {
	if err := o.validate(); err != nil {
		return err
	}
	ctl, err := a.openSession(ctx, false)
	if err != nil {
		return err
	}
	defer ctl.Close()
	if err := benchPathFree(ctx, ctl, o.path); err != nil {
		return err
	}
	sessions := make([]*elect.Session, o.clients)
	for i := range sessions {
		if sessions[i], err = a.openSession(ctx, false); err != nil {
			return err
		}
		defer sessions[i].Close()
	}
	run := fmt.Sprintf("%s/run-%s-%d-%08x", strings.TrimSuffix(o.path, "/"), hostPart(), os.Getpid(), rand.Uint32())
	var made []string // the parents of run bench created, topmost first
	defer func() {
		for _, s := range sessions {
			s.Close() // their ephemeral nodes go with them
		}
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := removeTree(cctx, ctl.Conn(), run); err != nil {
			a.log.Warn("bench: could not remove what it made; delete it by hand", "path", run, "err", err)
			return
		}
		removeMade(cctx, a, ctl.Conn(), made)
	}()
	if made, err = makePath(ctx, ctl, run); err != nil {
		if ctx.Err() != nil {
			return interrupted(ctx, "bench interrupted before it measured anything")
		}
		return fmt.Errorf("bench: create %s: %w", run, err)
	}
	a.log.Info("bench: running", "under", run, "clients", o.clients)
	r, done, err := measure(ctx, a, ctl, sessions, run, o)
	if ctx.Err() != nil && done < len(benchPhases) {
		// A phase cut short measured nothing true: its figures are not
		// printed, only those of the phases that ran to their end.
		if !o.asJSON && done > 0 {
			printBench(a.stdout, r, o, done)
		}
		return interrupted(ctx, "bench interrupted during %s; nothing of it is reported", benchPhases[done])
	}
	if err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		printBench(a.stdout, r, o, len(benchPhases))
	}
	if !r.Locks.NeverTwo {
		return fmt.Errorf("bench: two clients believed they held the lock at once %d times; this must never happen: please report it with the ZooKeeper version and this output", r.Locks.Overlaps)
	}
	return nil
}

// benchPhases names bench's phases in the order they run.
var benchPhases = []string{"the floor", "the election handoffs", "herald's lock phase", "zk.Lock's lock phase", "herald's free lock phase", "zk.Lock's free lock phase"}

// measure runs the parts under run: the floor, the election handoffs, the
// two lock phases and the two free lock phases. done is how many of
// benchPhases ran to their end; r holds their figures only.
func measure(ctx context.Context, a *app, ctl *elect.Session, sessions []*elect.Session, run string, o benchOpts) (r benchReport, done int, err error) {
	r = benchReport{Servers: strings.Join(ctl.Servers(), ","), Clients: o.clients}
	a.log.Info("bench: measuring", "phase", benchPhases[0])
	floor, err := deleteWatchFloor(ctx, ctl, sessions[0], run+"/floor", o.handoffs)
	if err != nil {
		return r, 0, fmt.Errorf("bench: floor: %w", err)
	}
	r.Floor = spread(floor)
	a.log.Info("bench: measuring", "phase", benchPhases[1])
	el, err := electionHandoffs(ctx, sessions, run+"/election", o.handoffs)
	if err != nil {
		return r, 1, fmt.Errorf("bench: election: %w", err)
	}
	r.Election.latency = spread(el)
	r.Election.VsFloor = ratio(r.Election.P50, r.Floor.P50)
	a.log.Info("bench: measuring", "phase", benchPhases[2])
	h, err := lockLoop(ctx, sessions, o.duration, heraldLocker(sessions, run+"/lock"))
	r.Locks.Overlaps = h.Overlaps // two holders count even in a phase cut short
	if err != nil {
		return r, 2, fmt.Errorf("bench: herald lock: %w", err)
	}
	r.Locks.Herald = h
	r.Locks.Checked = h.Cycles
	a.log.Info("bench: measuring", "phase", benchPhases[3])
	p, err := lockLoop(ctx, sessions, o.duration, gozkLocker(sessions, run+"/gozk-lock"))
	r.Locks.Overlaps += p.Overlaps
	r.Locks.NeverTwo = r.Locks.Overlaps == 0
	if err != nil {
		return r, 3, fmt.Errorf("bench: zk.Lock: %w", err)
	}
	r.Locks.GoZK = p
	r.Locks.VsGoZK = ratio(h.PerSec, p.PerSec)
	r.Locks.Checked += p.Cycles
	r.Locks.Duration = o.duration.String()
	// A free lock: the first session alone, on groups of its own.
	a.log.Info("bench: measuring", "phase", benchPhases[4])
	hf, err := lockLoop(ctx, sessions[:1], o.duration, heraldLocker(sessions, run+"/free-lock"))
	if err != nil {
		return r, 4, fmt.Errorf("bench: herald free lock: %w", err)
	}
	r.FreeLock.Herald = hf
	a.log.Info("bench: measuring", "phase", benchPhases[5])
	pf, err := lockLoop(ctx, sessions[:1], o.duration, gozkLocker(sessions, run+"/gozk-free-lock"))
	if err != nil {
		return r, 5, fmt.Errorf("bench: zk.Lock free lock: %w", err)
	}
	r.FreeLock.GoZK = pf
	r.FreeLock.VsGoZK = ratio(hf.PerSec, pf.PerSec)
	return r, len(benchPhases), nil
}

// printBench prints the figures of the first done phases.
func printBench(w io.Writer, r benchReport, o benchOpts, done int) {
	fmt.Fprintf(w, "herald bench on %s: %d clients, each with its own session\n\n", r.Servers, r.Clients)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tp50\tp99\tmax\t")
	row := func(what string, l latency, extra string) {
		if l.Samples == 0 {
			fmt.Fprintf(tw, "%s\tno samples\t\t\t\n", what)
			return
		}
		fmt.Fprintf(tw, "%s\t%.2f ms\t%.2f ms\t%.2f ms\t%s\n", what, l.P50, l.P99, l.Max, extra)
	}
	row(fmt.Sprintf("floor: delete -> watch fired (%d)", r.Floor.Samples), r.Floor, "")
	if done > 1 {
		vs := ""
		if r.Floor.Samples > 0 {
			vs = fmt.Sprintf("%.2fx the floor", r.Election.VsFloor)
		}
		row(fmt.Sprintf("election: resign -> next leader (%d)", r.Election.Samples), r.Election.latency, vs)
	}
	if done > 2 {
		row("herald lock: release -> next holder", r.Locks.Herald.Handoff, "")
	}
	if done > 3 {
		row("zk.Lock: release -> next holder", r.Locks.GoZK.Handoff, "")
	}
	if done > 4 {
		row("herald free lock: release -> taken again", r.FreeLock.Herald.Handoff, "")
	}
	if done > 5 {
		row("zk.Lock free lock: release -> taken again", r.FreeLock.GoZK.Handoff, "")
	}
	tw.Flush()
	switch {
	case done > 3:
		vs := ""
		if r.Locks.Herald.PerSec > 0 && r.Locks.GoZK.PerSec > 0 {
			vs = fmt.Sprintf(" (herald %.2fx)", r.Locks.VsGoZK)
		}
		fmt.Fprintf(w, "\nlock handoffs/s over %v each: herald %.0f, go-zookeeper zk.Lock %.0f%s\n",
			o.duration, r.Locks.Herald.PerSec, r.Locks.GoZK.PerSec, vs)
	case done > 2:
		fmt.Fprintf(w, "\nlock handoffs/s over %v: herald %.0f\n", o.duration, r.Locks.Herald.PerSec)
	}
	switch f := r.FreeLock; {
	case done > 5:
		vs := ""
		if f.Herald.PerSec > 0 && f.GoZK.PerSec > 0 {
			vs = fmt.Sprintf(" (herald %.2fx)", f.VsGoZK)
		}
		fmt.Fprintf(w, "a free lock, one client taking and releasing it, cycles/s over %v each: herald %.0f, go-zookeeper zk.Lock %.0f%s\n",
			o.duration, f.Herald.PerSec, f.GoZK.PerSec, vs)
	case done > 4:
		fmt.Fprintf(w, "a free lock, one client taking and releasing it, cycles/s over %v: herald %.0f\n", o.duration, f.Herald.PerSec)
	}
	switch {
	case r.Locks.Overlaps > 0 && r.Locks.Checked == 0: // seen in a phase cut short
		fmt.Fprintf(w, "TWO HOLDERS AT ONCE: %d times\n", r.Locks.Overlaps)
	case r.Locks.Overlaps > 0:
		fmt.Fprintf(w, "TWO HOLDERS AT ONCE: %d times in %d tenures\n", r.Locks.Overlaps, r.Locks.Checked)
	case done > 2:
		fmt.Fprintf(w, "never two holders: checked at each of %d tenures\n", r.Locks.Checked)
	}
}

// deleteWatchFloor times n times how long the ensemble takes from a delete
// (by del) to the exists watch on that node firing at another session.
func deleteWatchFloor(ctx context.Context, del, watch *elect.Session, dir string, n int) ([]time.Duration, error) {
	if _, err := makePath(ctx, del, dir); err != nil { // under the run node, removed with it
		return nil, err
	}
	acl := del.DefaultACL()
	out := make([]time.Duration, 0, n)
	for i := range n {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p := fmt.Sprintf("%s/n%d", dir, i)
		if _, err := del.Conn().Create(p, nil, zk.FlagEphemeral, acl); err != nil {
			return nil, err
		}
		ok, _, ch, err := watch.Conn().ExistsW(p)
		if err != nil || !ok {
			return nil, fmt.Errorf("exists watch on %s: found %v, %v", p, ok, err)
		}
		t0 := time.Now()
		if err := del.Conn().Delete(p, -1); err != nil {
			return nil, err
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDeleted {
				return nil, fmt.Errorf("the watch on %s fired with %v, not its deletion", p, ev.Type)
			}
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("the watch on %s never fired", p)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// electionHandoffs times n handoffs: every session campaigns; the leader
// resigns the moment it leads and joins the line again; a sample is the
// time from the resignation to the next leader's Campaign returning.
func electionHandoffs(ctx context.Context, sessions []*elect.Session, group string, n int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaders := make(chan *elect.Handle)
	errs := make(chan error, len(sessions))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var first *elect.Election
	for i, s := range sessions {
		e, err := elect.NewElection(s, group, elect.CreateParents())
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = e
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			candidate(ctx, e, fmt.Sprintf("bench-%d", i), leaders, errs)
		}()
	}
	// Let every candidate queue before timing: the first leader waits here.
	var h *elect.Handle
	select {
	case h = <-leaders:
	case err := <-errs:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		ps, err := first.Participants(ctx)
		if err == nil && len(ps) == len(sessions) {
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d candidates queued within 10s", len(ps), len(sessions))
		}
		time.Sleep(5 * time.Millisecond)
	}
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := h.Resign(ctx); err != nil {
			return nil, err
		}
		select {
		case h = <-leaders:
		case err := <-errs:
			return nil, err
		case <-time.After(30 * time.Second):
			return nil, errors.New("no new leader within 30s of a resignation")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		out = append(out, time.Since(t0))
	}
	_ = h.Resign(ctx)
	return out, nil
}

// candidate campaigns again and again, handing each leadership to leaders
// and waiting for the timer to resign it, until ctx ends.
func candidate(ctx context.Context, e *elect.Election, id string, leaders chan<- *elect.Handle, errs chan<- error) {
	for ctx.Err() == nil {
		h, err := e.Campaign(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				errs <- err
			}
			return
		}
		select {
		case leaders <- h:
		case <-ctx.Done():
			_ = h.Resign(context.Background())
			return
		}
		select {
		case <-h.Done(): // the timer resigned it
		case <-ctx.Done():
			_ = h.Resign(context.Background())
			return
		}
	}
}

// locker makes client i's take-and-release: take returns once it holds,
// with a held func that reports whether this tenure still believes it
// holds (each tenure its own) and the release.
type locker func(i int) (take func(context.Context) (held func() bool, release func() error, err error))

func heraldLocker(sessions []*elect.Session, group string) locker {
	return func(i int) func(context.Context) (func() bool, func() error, error) {
		l, err := elect.NewLock(sessions[i], group, elect.CreateParents(), elect.WithID(fmt.Sprintf("bench-%d", i)))
		return func(ctx context.Context) (func() bool, func() error, error) {
			if err != nil {
				return nil, nil, err
			}
			h, err := l.Acquire(ctx)
			if err != nil {
				return nil, nil, err
			}
			return h.Held, func() error {
				// The phase may end meanwhile: the release still completes.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				return h.Release(rctx)
			}, nil
		}
	}
}

func gozkLocker(sessions []*elect.Session, group string) locker {
	return func(i int) func(context.Context) (func() bool, func() error, error) {
		l := zk.NewLock(sessions[i].Conn(), group, sessions[i].DefaultACL())
		return func(ctx context.Context) (func() bool, func() error, error) {
			if err := l.LockWithData(nil); err != nil {
				return nil, nil, err
			}
			// A flag of this tenure's own: a client that takes the lock
			// again right after releasing it is not beside itself.
			holding := new(atomic.Bool)
			holding.Store(true)
			return holding.Load, func() error { holding.Store(false); return l.Unlock() }, nil
		}
	}
}

// lockLoop runs every client's take-and-release for d and checks, at every
// take, that the previous holder no longer believes it holds. A phase that
// ctx cut short before d returns ctx's error, with only its overlaps.
func lockLoop(parent context.Context, sessions []*elect.Session, d time.Duration, mk locker) (lockFigures, error) {
	ctx, cancel := context.WithTimeout(parent, d)
	defer cancel()
	var (
		mu       sync.Mutex
		current  func() bool // the holder's belief, nil when free
		released time.Time   // when the last release began
		gaps     []time.Duration
		overlaps int64
		cycles   atomic.Int64
		wg       sync.WaitGroup
	)
	errs := make(chan error, len(sessions))
	start := time.Now()
	for i := range sessions {
		take := mk(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				held, release, err := take(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				mu.Lock()
				if current != nil && current() {
					overlaps++
				}
				if !released.IsZero() {
					gaps = append(gaps, time.Since(released))
				}
				current = held
				released = time.Now()
				mu.Unlock()
				err = release()
				if err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
				cycles.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if parent.Err() != nil {
		return lockFigures{Overlaps: overlaps}, parent.Err()
	}
	for err := range errs {
		return lockFigures{Overlaps: overlaps}, err
	}
	return lockFigures{Cycles: cycles.Load(), PerSec: float64(cycles.Load()) / elapsed.Seconds(), Handoff: spread(gaps), Overlaps: overlaps}, nil
}

// spread summarises samples in milliseconds.
func spread(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := min(max(int(p*float64(len(s))+0.5)-1, 0), len(s)-1)
		return float64(s[i]) / float64(time.Millisecond)
	}
	return latency{Samples: len(s), P50: at(0.50), P99: at(0.99), Max: float64(s[len(s)-1]) / float64(time.Millisecond)}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// hostPart is the host name as one path segment.
func hostPart() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "herald"
	}
	return strings.NewReplacer("/", "_", ".", "_").Replace(h)
}

// benchPathFree refuses, before anything is written, a --path bench
// cannot or must not make its run node under: an ephemeral node (or one
// below it), which cannot have children, and a group or a path inside one,
// where the run node (or a parent bench makes) would sit among the group's
// queue nodes for its clients to meet: go-zookeeper's Lock fails on a name
// it cannot parse, and a parent made there would stay.
func benchPathFree(ctx context.Context, s *elect.Session, p string) error {
	advice := "give a --path outside every group, e.g. the default /herald-bench"
	for at := p; at != "/"; at = path.Dir(at) {
		_, stat, err := s.Conn().Exists(at)
		switch {
		case err != nil:
			return fmt.Errorf("bench: read %s: %w", at, err)
		case stat == nil:
			continue
		case stat.EphemeralOwner != 0:
			return usageErr("--path %s: %s is an ephemeral node (a queue node, or a system's leader), which cannot have children; %s", p, at, advice)
		}
		v, err := elect.ReadGroup(ctx, s, at)
		if err != nil && !errors.Is(err, elect.ErrNoParent) {
			return fmt.Errorf("bench: read %s: %w", at, err)
		}
		// A recipe only guessed (herald's rule for a plain node) is no
		// group: /herald-bench itself reads as one; nor are persistent
		// children whose names end in ten digits (no session holds them).
		if (v.Recipe != "" && !v.RecipeGuessed()) || anyHeld(v.Queue) {
			return usageErr("--path %s: %s is a group (%s), and bench's nodes inside it would sit among its queue nodes, for its clients to meet; %s", p, at, recipeWord(v.Recipe), advice)
		}
	}
	return nil
}

// anyHeld reports whether a session holds one of the queue nodes q: a
// live group's.
func anyHeld(q []elect.Participant) bool {
	for _, p := range q {
		if p.Session != 0 {
			return true
		}
	}
	return false
}

// recipeWord names a group's recipe, or "a queue" when its nodes do not.
func recipeWord(r elect.Recipe) string {
	if r == "" {
		return "a queue"
	}
	return string(r)
}

// maxBenchDuration bounds --duration: the four lock phases run it each.
const maxBenchDuration = time.Hour

// makePath creates p and its missing parents with the session's default
// ACL, and returns the parents it created, topmost first (p is not one).
// A parent deleted under it (another bench removing the one it made) is
// made again.
func makePath(ctx context.Context, s *elect.Session, p string) (made []string, err error) {
	acl := s.DefaultACL()
	for try := 0; ; try++ {
		at := ""
		for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
			at += "/" + part
			if ctx.Err() != nil {
				return made, ctx.Err()
			}
			_, err = s.Conn().Create(at, nil, 0, acl)
			if err == nil && at != p {
				made = append(made, at)
			}
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				break
			}
			err = nil
		}
		if !errors.Is(err, zk.ErrNoNode) || try == 2 {
			break
		}
	}
	if err != nil {
		return made, fmt.Errorf("create %s: %w", p, err)
	}
	return made, nil
}

// removeMade deletes the parents bench created, deepest first, once
// empty: one another bench (or anyone) put a node in since stays, and
// so do those above it.
func removeMade(ctx context.Context, a *app, c *zk.Conn, made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		err := c.Delete(made[i], -1)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
		case errors.Is(err, zk.ErrNotEmpty):
			return // in use: it stays, and so do its parents
		default:
			a.log.Warn("bench: could not remove a parent of --path it created; delete it by hand", "path", made[i], "err", err)
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// removeTree deletes p and everything below it, deepest first.
func removeTree(ctx context.Context, c *zk.Conn, p string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	children, _, err := c.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		if err := removeTree(ctx, c, p+"/"+ch); err != nil {
			return err
		}
	}
	if err := c.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}
