package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// The shared-group tests put herald in one group with other clients and
// check, from what every participant logged, that no two ever owned at
// once and that nobody waited for ever.
//
// Every participant logs its own tenures with the wall clock in Unix
// nanoseconds (Go: time.Now().UnixNano(); Java: Instant.now(), microseconds
// on Linux; Python: time.time_ns(); shell: date +%s%N; all CLOCK_REALTIME
// of this one machine). It logs "acq" only after its acquire call returned
// and "rel" just before it calls release, so every logged interval lies
// inside the real one: two logged intervals that overlap are two owners at
// once, never an artefact of logging.

// ownEvent is one line of an ownership log, "KIND WHO VALUE". For queued,
// acq and rel VALUE is a wall-clock time in Unix nanoseconds; other kinds
// (the checkpoint puts of TestWriteToHolderNode) carry an exit status.
type ownEvent struct {
	kind string
	who  string
	v    int64
}

// ownLog gathers what the participants of one group logged: in-process
// clients add to it directly, peer processes through their peerCtl, shell
// children (the commands herald lock and herald run start) append lines to
// files it reads on every snapshot.
type ownLog struct {
	t0 int64 // printed times are relative to it

	mu     sync.Mutex
	events []ownEvent
	errs   []string
	notes  map[string][]string
	labels map[string]string
	files  []string
}

func newOwnLog() *ownLog {
	return &ownLog{t0: wallNow(), notes: map[string][]string{}, labels: map[string]string{}}
}

func wallNow() int64 { return time.Now().UnixNano() }

// name says which client who is, for messages.
func (l *ownLog) name(who, client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.labels[who] = client
}

// label is "who (client)".
func (l *ownLog) label(who string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.labels[who]; c != "" {
		return who + " (" + c + ")"
	}
	return who
}

func (l *ownLog) add(kind, who string, v int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ownEvent{kind: kind, who: who, v: v})
}

// mark logs kind for who now.
func (l *ownLog) mark(kind, who string) { l.add(kind, who, wallNow()) }

// fail records a participant's failure: awaits end at once, checks report it.
func (l *ownLog) fail(who, format string, args ...any) {
	msg := l.label(who) + ": " + fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, msg)
}

// note keeps a participant's last few remarks (what the classic client
// saw on its watches), printed when a check fails.
func (l *ownLog) note(who, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := append(l.notes[who], fmt.Sprintf("%s %s", l.at(wallNow()), fmt.Sprintf(format, args...)))
	if len(n) > 12 {
		n = n[len(n)-12:]
	}
	l.notes[who] = n
}

func (l *ownLog) addFile(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files = append(l.files, p)
}

// snapshot returns every event so far, ordered by time, and the failures.
func (l *ownLog) snapshot() ([]ownEvent, []string) {
	l.mu.Lock()
	evs := append([]ownEvent(nil), l.events...)
	errs := append([]string(nil), l.errs...)
	files := append([]string(nil), l.files...)
	l.mu.Unlock()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("read log %s: %v", f, err))
			continue
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1] // a line still being written waits for the next snapshot
		} else {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			v, err := strconv.ParseInt(fieldOr(fs, 2), 10, 64)
			if len(fs) != 3 || err != nil {
				errs = append(errs, fmt.Sprintf("log %s: malformed line %q", f, sc.Text()))
				continue
			}
			evs = append(evs, ownEvent{kind: fs[0], who: fs[1], v: v})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].v < evs[j].v })
	return evs, errs
}

func fieldOr(fs []string, i int) string {
	if i < len(fs) {
		return fs[i]
	}
	return ""
}

// at prints a wall-clock time relative to the log's start.
func (l *ownLog) at(ns int64) string {
	return fmt.Sprintf("+%.3fs", float64(ns-l.t0)/1e9)
}

// firstEvent returns who's first event of kind (any participant when who is "").
func firstEvent(evs []ownEvent, kind, who string) (ownEvent, bool) {
	for _, e := range evs {
		if e.kind == kind && (who == "" || e.who == who) {
			return e, true
		}
	}
	return ownEvent{}, false
}

func countEvents(evs []ownEvent, kind, who string) int {
	n := 0
	for _, e := range evs {
		if e.kind == kind && e.who == who {
			n++
		}
	}
	return n
}

// await polls the log until cond holds. It fails t after d, or at once
// when a participant reported a failure, printing the timeline.
func (l *ownLog) await(t testing.TB, d time.Duration, what string, cond func([]ownEvent) bool) []ownEvent {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		evs, errs := l.snapshot()
		if len(errs) > 0 {
			t.Fatalf("while waiting for %s:\n  %s\n%s", what, strings.Join(errs, "\n  "), l.timeline(evs))
		}
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v\n%s", what, d, l.timeline(evs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitAcq waits until who logged an acquisition and returns its time.
func (l *ownLog) awaitAcq(t testing.TB, who string, d time.Duration, why string) int64 {
	t.Helper()
	evs := l.await(t, d, l.label(who)+" owning "+why, func(evs []ownEvent) bool {
		_, ok := firstEvent(evs, "acq", who)
		return ok
	})
	e, _ := firstEvent(evs, "acq", who)
	return e.v
}

// timeline prints the log's last events and every participant's notes.
func (l *ownLog) timeline(evs []ownEvent) string {
	var b strings.Builder
	b.WriteString("ownership log (wall clock, relative to the start of the case):\n")
	if len(evs) > 40 {
		fmt.Fprintf(&b, "  … %d earlier events\n", len(evs)-40)
		evs = evs[len(evs)-40:]
	}
	for _, e := range evs {
		if e.kind == "queued" || e.kind == "acq" || e.kind == "rel" {
			fmt.Fprintf(&b, "  %s %-6s %s\n", l.at(e.v), e.kind, l.label(e.who))
		} else {
			fmt.Fprintf(&b, "  %-6s %s %d\n", e.kind, l.label(e.who), e.v)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	whos := make([]string, 0, len(l.notes))
	for w := range l.notes {
		whos = append(whos, w)
	}
	sort.Strings(whos)
	for _, w := range whos {
		fmt.Fprintf(&b, "notes of %s:\n  %s\n", w, strings.Join(l.notes[w], "\n  "))
	}
	return b.String()
}

// tenure is one logged ownership, from its acq to its rel.
type tenure struct {
	who      string
	from, to int64
	open     bool // no rel logged: to is the end of the check
}

// tenuresOf pairs every participant's acq and rel lines; a tenure still
// open ends at end. A participant that logs acq twice without rel, or rel
// without acq, is a problem of the participant's logging.
func tenuresOf(evs []ownEvent, end int64) (ts []tenure, problems []string) {
	open := map[string]int64{}
	for _, e := range evs {
		switch e.kind {
		case "acq":
			if _, ok := open[e.who]; ok {
				problems = append(problems, fmt.Sprintf("%s logged acq twice without rel", e.who))
			}
			open[e.who] = e.v
		case "rel":
			from, ok := open[e.who]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s logged rel without acq", e.who))
				continue
			}
			delete(open, e.who)
			ts = append(ts, tenure{who: e.who, from: from, to: e.v})
		}
	}
	for who, from := range open {
		ts = append(ts, tenure{who: who, from: from, to: max(end, from), open: true})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].from < ts[j].from })
	return ts, problems
}

// overlap is two participants owning at once: b acquired while a held.
type overlap struct {
	a, b tenure
	d    time.Duration
}

// overlapsOf finds every tenure that began while another participant's
// was still running (against the one running the longest).
func overlapsOf(ts []tenure) []overlap {
	ts = append([]tenure(nil), ts...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].from < ts[j].from })
	var out []overlap
	longest := -1 // index of the tenure reaching furthest so far
	for i, t := range ts {
		if longest >= 0 && t.from < ts[longest].to && t.who != ts[longest].who {
			out = append(out, overlap{a: ts[longest], b: t, d: time.Duration(min(t.to, ts[longest].to) - t.from)})
		}
		if longest < 0 || t.to > ts[longest].to {
			longest = i
		}
	}
	return out
}

// gap is a stretch without an owner.
type gap struct{ from, to int64 }

// gapsOf finds the stretches between from and to longer than bound in
// which nobody owned (a group that stalls for good ends in one).
func gapsOf(ts []tenure, from, to int64, bound time.Duration) []gap {
	var out []gap
	covered := from
	for _, t := range ts {
		if time.Duration(t.from-covered) > bound {
			out = append(out, gap{from: covered, to: t.from})
		}
		covered = max(covered, t.to)
	}
	if time.Duration(to-covered) > bound {
		out = append(out, gap{from: covered, to: to})
	}
	return out
}

// longWaits finds every wait from a queued line to the participant's next
// acq that took longer than bound (an acq that never came waits until end).
func longWaits(evs []ownEvent, end int64, bound time.Duration) []string {
	queued := map[string]int64{}
	var out []string
	for _, e := range evs {
		switch e.kind {
		case "queued":
			queued[e.who] = e.v
		case "acq":
			if q, ok := queued[e.who]; ok {
				if w := time.Duration(e.v - q); w > bound {
					out = append(out, fmt.Sprintf("%s waited %v to own (bound %v)", e.who, w.Round(time.Millisecond), bound))
				}
				delete(queued, e.who)
			}
		}
	}
	for who, q := range queued {
		if w := time.Duration(end - q); w > bound {
			out = append(out, fmt.Sprintf("%s queued %v before the end and never owned (bound %v)", who, w.Round(time.Millisecond), bound))
		}
	}
	sort.Strings(out)
	return out
}

// checkExclusive fails t for every two participants the log shows owning
// at once, naming both and the overlap.
func (l *ownLog) checkExclusive(t testing.TB) {
	t.Helper()
	evs, errs := l.snapshot()
	ts, problems := tenuresOf(evs, wallNow())
	var msgs []string
	for _, o := range overlapsOf(ts) {
		until := l.at(o.a.to)
		if o.a.open {
			until = "the end (still owning)"
		}
		msgs = append(msgs, fmt.Sprintf("TWO OWNERS: %s acquired at %s while %s held (%s until %s): %.1f ms of overlap",
			l.label(o.b.who), l.at(o.b.from), l.label(o.a.who), l.at(o.a.from), until, float64(o.d)/1e6))
	}
	msgs = append(msgs, problems...)
	if len(msgs) > 0 {
		if len(msgs) > 10 {
			msgs = append(msgs[:10], fmt.Sprintf("… and %d more", len(msgs)-10))
		}
		if len(errs) > 0 {
			msgs = append(msgs, "participants' failures:\n  "+strings.Join(errs, "\n  "))
		}
		t.Errorf("%s\n%s", strings.Join(msgs, "\n"), l.timeline(evs))
	}
}

// mixReport checks a random mix that ran from start until until: no
// overlap, no stretch without an owner longer than gapBound, no wait
// longer than waitBound, every participant owned at least once and none
// failed. It logs each participant's count.
func (l *ownLog) mixReport(t testing.TB, group string, whos []string, start, until time.Time, gapBound, waitBound time.Duration) {
	t.Helper()
	l.checkExclusive(t)
	evs, errs := l.snapshot()
	end := wallNow()
	ts, _ := tenuresOf(evs, end)
	for _, e := range errs {
		t.Errorf("%s: %s", group, e)
	}
	for _, g := range gapsOf(ts, start.UnixNano(), until.UnixNano(), gapBound) {
		t.Errorf("%s: nobody owned from %s to %s (%v, bound %v)\n%s", group, l.at(g.from), l.at(g.to),
			time.Duration(g.to-g.from).Round(time.Millisecond), gapBound, l.timeline(eventsAround(evs, g.from, g.to)))
	}
	for _, w := range longWaits(evs, end, waitBound) {
		t.Errorf("%s: %s", group, w)
	}
	var counts []string
	for _, w := range whos {
		n := countEvents(evs, "acq", w)
		counts = append(counts, fmt.Sprintf("%s %d", l.label(w), n))
		if n == 0 {
			t.Errorf("%s: %s never owned", group, l.label(w))
		}
	}
	var longest, widest, slowest time.Duration
	for _, tn := range ts {
		longest = max(longest, time.Duration(tn.to-tn.from))
	}
	for _, g := range gapsOf(ts, start.UnixNano(), until.UnixNano(), 0) {
		widest = max(widest, time.Duration(g.to-g.from))
	}
	queued := map[string]int64{}
	for _, e := range evs {
		if e.kind == "queued" {
			queued[e.who] = e.v
		} else if q, ok := queued[e.who]; ok && e.kind == "acq" {
			slowest = max(slowest, time.Duration(e.v-q))
			delete(queued, e.who)
		}
	}
	t.Logf("%s: %d tenures (longest %v), longest without an owner %v, longest wait %v; %s", group, len(ts),
		longest.Round(time.Millisecond), widest.Round(time.Millisecond), slowest.Round(time.Millisecond), strings.Join(counts, ", "))
}

// eventsAround keeps the events around [from, to] for a gap's report.
func eventsAround(evs []ownEvent, from, to int64) []ownEvent {
	var out []ownEvent
	for _, e := range evs {
		if e.v >= from-int64(time.Second) && e.v <= to+int64(time.Second) {
			out = append(out, e)
		}
	}
	return out
}

// ---- the shared environment: ZooKeeper, peers, the herald binary ----

// sharedEnv is what the shared-group tests share: one ZooKeeper, one JVM
// running Curator, one Python running Kazoo, a herald binary.
type sharedEnv struct {
	zk      *zkserver.Cluster
	addrs   []string
	connect string
	cur, kz *peerCtl
	bin     string
	dir     string
	probe   *zk.Conn       // lists groups and plays the third session
	obs     *elect.Session // reads groups as herald's observers do
}

// newSharedEnv starts what the test needs: the Curator JVM, the Kazoo
// process, the herald binary (built from this module).
func newSharedEnv(t *testing.T, curator, kazoo, bin bool) *sharedEnv {
	t.Helper()
	zkc := zktest.Shared(t)
	env := &sharedEnv{zk: zkc, addrs: zkc.Addrs(), connect: zkc.ConnectString(), dir: t.TempDir()}
	env.probe = rawConn(t, env.addrs, 10*time.Second)
	env.obs = session(t, env.addrs)
	if curator {
		env.cur = newPeerCtl(startCurator(t, env.connect, sharedPeerSession), "Curator")
	}
	if kazoo {
		env.kz = newPeerCtl(startKazoo(t, env.connect, sharedPeerSession), "Kazoo")
	}
	if bin {
		env.bin = buildHerald(t)
	}
	return env
}

// hazardOf is what herald's observers say of the group's mix of names:
// why two of its clients may each believe they own, "" when none can.
func hazardOf(t testing.TB, env *sharedEnv, group string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := elect.ReadGroup(ctx, env.obs, group)
	if err != nil {
		t.Fatalf("read %s as an observer: %v", group, err)
	}
	return v.Hazard
}

// sharedPeerSession is the session timeout of every participant.
const sharedPeerSession = 3 * time.Second

var idSeq atomic.Int64

// newID names a participant uniquely in the whole test binary (peer
// processes outlive subtests).
func newID(short string) string { return fmt.Sprintf("%s-%d", short, idSeq.Add(1)) }

// buildHerald builds cmd/herald of this module into t's temporary directory.
func buildHerald(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above the integration directory: %v", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH, needed to build cmd/herald: %v", err)
	}
	out := filepath.Join(t.TempDir(), "herald")
	cmd := exec.Command(goBin, "build", "-o", out, "./cmd/herald")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/herald: %v\n%s", err, b)
	}
	return out
}

// queueOf lists a group's queue nodes (names ending in a sequence),
// lowest sequence first.
func queueOf(c *zk.Conn, group string) ([]string, error) {
	children, _, err := c.Children(group)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var q []string
	for _, ch := range children {
		if _, ok := elect.ParseSequence(ch); ok {
			q = append(q, ch)
		}
	}
	sort.Slice(q, func(i, j int) bool {
		a, _ := elect.ParseSequence(q[i])
		b, _ := elect.ParseSequence(q[j])
		return elect.SeqLess(a, b)
	})
	return q, nil
}

// awaitQueue waits until the group holds at least n queue nodes.
func awaitQueue(t testing.TB, c *zk.Conn, group string, n int, d time.Duration, log *ownLog) []string {
	t.Helper()
	var q []string
	deadline := time.Now().Add(d)
	for {
		var err error
		if q, err = queueOf(c, group); err != nil {
			t.Fatalf("list %s: %v", group, err)
		}
		if len(q) >= n {
			return q
		}
		if evs, errs := log.snapshot(); len(errs) > 0 {
			t.Fatalf("while waiting for %d nodes in %s (have %v):\n  %s\n%s", n, group, q, strings.Join(errs, "\n  "), log.timeline(evs))
		}
		if time.Now().After(deadline) {
			evs, _ := log.snapshot()
			t.Fatalf("%s holds %v after %v; want %d queue nodes\n%s", group, q, d, n, log.timeline(evs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ---- peer processes shared by many cases ----

// peerCtl drives a peer process (Curator's JVM, Kazoo's Python) for many
// cases at once: its tenure lines go to the log of the participant they
// name, its control lines (released, dropped, done, revoked, error) to a
// channel per participant.
type peerCtl struct {
	p    *peer
	name string

	mu   sync.Mutex
	logs map[string]*ownLog
	ctl  map[string]chan string
	inMu sync.Mutex
}

func newPeerCtl(p *peer, name string) *peerCtl {
	c := &peerCtl{p: p, name: name, logs: map[string]*ownLog{}, ctl: map[string]chan string{}}
	p.setTap(c.route)
	return c
}

// register routes the lines about id to log and returns its control lines.
func (c *peerCtl) register(id string, log *ownLog) <-chan string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan string, 16)
	c.logs[id], c.ctl[id] = log, ch
	return ch
}

func (c *peerCtl) route(line string) bool {
	f := strings.Fields(line)
	if len(f) < 2 {
		return false
	}
	c.mu.Lock()
	log, ch := c.logs[f[1]], c.ctl[f[1]]
	c.mu.Unlock()
	if log == nil {
		return false
	}
	switch f[0] {
	case "queued", "acq", "rel":
		v, err := strconv.ParseInt(fieldOr(f, 2), 10, 64)
		if err != nil {
			log.fail(f[1], "%s printed a malformed line %q", c.name, line)
			return true
		}
		log.add(f[0], f[1], v)
		return true
	case "state": // "state ID STATE NANOS": the client's connection, for the record
		v, err := strconv.ParseInt(fieldOr(f, 3), 10, 64)
		if err != nil {
			log.fail(f[1], "%s printed a malformed line %q", c.name, line)
			return true
		}
		log.add("state:"+f[2], f[1], v)
		return true
	case "error":
		log.fail(f[1], "%s: %s", c.name, strings.Join(f[2:], " "))
	case "released", "dropped", "done", "revoked":
	default:
		return false
	}
	select {
	case ch <- line:
	default:
	}
	return true
}

func (c *peerCtl) send(line string) error {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	if _, err := io.WriteString(c.p.in, line+"\n"); err != nil {
		return fmt.Errorf("%s peer: send %q: %w\n%s", c.name, line, err, lastBytes(c.p.stderr.String()))
	}
	return nil
}

// wait returns id's next control line starting with prefix; an error line,
// the process ending or d passing is an error.
func (c *peerCtl) wait(ch <-chan string, prefix string, d time.Duration) (string, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case l := <-ch:
			if strings.HasPrefix(l, prefix+" ") {
				return l, nil
			}
			if strings.HasPrefix(l, "error ") {
				return "", fmt.Errorf("%s peer: %s", c.name, l)
			}
		case <-c.p.exited:
			return "", fmt.Errorf("%s peer exited while waiting for %q\n%s", c.name, prefix, lastBytes(c.p.stderr.String()))
		case <-timer.C:
			return "", fmt.Errorf("%s peer: no %q within %v", c.name, prefix, d)
		}
	}
}

// lastBytes keeps the end of a process's output for a message.
func lastBytes(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}

// ---- participants of the pairwise and write tests ----

// member is one participant of a case.
type member interface {
	// start queues for ownership and returns at once. The member logs
	// "queued", and "acq" once it owns; failures go to the log.
	start()
	// release logs "rel", gives ownership back and waits until it is back.
	release(t testing.TB)
	// holding is nil while the member still owns, as far as it knows.
	holding() error
	// stop gives up whatever the member has, in any state (cleanup).
	stop()
}

// kindSpec is a kind of participant: a client and its recipe. make
// creates one in group, named id, logging to log; d is the dialect a
// herald participant is forced to write ("" or auto: none forced).
type kindSpec struct {
	short string
	name  string
	make  func(t *testing.T, env *sharedEnv, group, id string, log *ownLog, d elect.Dialect) member
}

// forced is the option that forces d, none for the default.
func forced(d elect.Dialect) []elect.Option {
	if d == "" || d == elect.DialectAuto {
		return nil
	}
	return []elect.Option{elect.WithDialect(d)}
}

// goMember runs an in-process client's blocking acquire in a goroutine.
type goMember struct {
	id       string
	log      *ownLog
	acquire  func(ctx context.Context) error
	giveBack func(ctx context.Context) error
	held     func() error // nil: owning until released
	unblock  func()       // ends a blocked acquire that ignores ctx

	ctx      context.Context
	cancel   context.CancelFunc
	owned    chan struct{}
	done     chan struct{}
	started  atomic.Bool
	released atomic.Bool
}

func newGoMember(t testing.TB, id string, log *ownLog) *goMember {
	ctx, cancel := context.WithCancel(context.Background())
	m := &goMember{id: id, log: log, ctx: ctx, cancel: cancel, owned: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(m.stop)
	return m
}

func (m *goMember) start() {
	m.started.Store(true)
	go func() {
		defer close(m.done)
		m.log.mark("queued", m.id)
		if err := m.acquire(m.ctx); err != nil {
			if m.ctx.Err() == nil {
				m.log.fail(m.id, "acquire: %v", err)
			}
			return
		}
		m.log.mark("acq", m.id)
		close(m.owned)
	}()
}

func (m *goMember) release(t testing.TB) {
	t.Helper()
	select {
	case <-m.owned:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: told to release but it does not own", m.log.label(m.id))
	}
	m.log.mark("rel", m.id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.giveBack(ctx); err != nil {
		t.Errorf("%s: release: %v", m.log.label(m.id), err)
	}
	m.released.Store(true)
}

func (m *goMember) holding() error {
	select {
	case <-m.owned:
	default:
		return errors.New("does not own")
	}
	if m.released.Load() {
		return errors.New("released")
	}
	if m.held != nil {
		return m.held()
	}
	return nil
}

func (m *goMember) stop() {
	m.cancel()
	if m.unblock != nil {
		m.unblock()
	}
	if !m.started.Load() {
		return
	}
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		m.log.fail(m.id, "acquire did not return within 10s of being cancelled")
		return
	}
	select {
	case <-m.owned:
		if !m.released.Swap(true) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = m.giveBack(ctx)
			cancel()
		}
	default:
	}
}

// heraldLock is elect.NewLock + Acquire/Release, on a session of its own.
func heraldLock(t *testing.T, env *sharedEnv, group, id string, log *ownLog, d elect.Dialect) member {
	return heraldLib(t, env, group, id, log, d, false)
}

// heraldElection is elect.NewElection + Campaign/Resign.
func heraldElection(t *testing.T, env *sharedEnv, group, id string, log *ownLog, d elect.Dialect) member {
	return heraldLib(t, env, group, id, log, d, true)
}

func heraldLib(t *testing.T, env *sharedEnv, group, id string, log *ownLog, d elect.Dialect, election bool) *goMember {
	t.Helper()
	s := session(t, env.addrs, elect.WithSessionTimeout(sharedPeerSession))
	take := heraldTaker(t, s, group, id, d, election)
	m := newGoMember(t, id, log)
	var h *elect.Handle
	m.acquire = func(ctx context.Context) (err error) { h, err = take(ctx); return err }
	m.giveBack = func(ctx context.Context) error {
		if election {
			return h.Resign(ctx)
		}
		return h.Release(ctx)
	}
	m.held = func() error {
		if !h.Held() {
			return fmt.Errorf("lost ownership: %s (%v)", h.Reason(), h.Err())
		}
		return nil
	}
	return m
}

// heraldTaker returns the call that takes a herald lock or election.
func heraldTaker(t testing.TB, s *elect.Session, group, id string, d elect.Dialect, election bool) func(context.Context) (*elect.Handle, error) {
	t.Helper()
	if election {
		e, err := elect.NewElection(s, group, append([]elect.Option{elect.CreateParents()}, forced(d)...)...)
		if err != nil {
			t.Fatalf("NewElection(%s, dialect %q): %v", group, d, err)
		}
		return func(ctx context.Context) (*elect.Handle, error) { return e.Campaign(ctx, id) }
	}
	l, err := elect.NewLock(s, group, append([]elect.Option{elect.CreateParents(), elect.WithID(id)}, forced(d)...)...)
	if err != nil {
		t.Fatalf("NewLock(%s, dialect %q): %v", group, d, err)
	}
	return l.Acquire
}

// gozkLock is go-zookeeper's zk.Lock, on a connection of its own.
func gozkLock(t *testing.T, env *sharedEnv, group, id string, log *ownLog, _ elect.Dialect) member {
	t.Helper()
	c := rawConn(t, env.addrs, sharedPeerSession)
	l := zk.NewLock(c, group, zk.WorldACL(zk.PermAll))
	m := newGoMember(t, id, log)
	m.acquire = func(context.Context) error { return l.LockWithData([]byte(id)) }
	m.giveBack = func(context.Context) error { return l.Unlock() }
	m.unblock = c.Close
	return m
}

// classicLock and classicElection are the classic recipe (see
// classicAcquire) named "lock-" and "candidate-<sessionID>_".
func classicLock(t *testing.T, env *sharedEnv, group, id string, log *ownLog, _ elect.Dialect) member {
	return classicMember(t, env, group, id, log, func(*zk.Conn) string { return "lock-" })
}

func classicElection(t *testing.T, env *sharedEnv, group, id string, log *ownLog, _ elect.Dialect) member {
	return classicMember(t, env, group, id, log, func(c *zk.Conn) string { return fmt.Sprintf("candidate-%d_", c.SessionID()) })
}

func classicMember(t *testing.T, env *sharedEnv, group, id string, log *ownLog, prefix func(*zk.Conn) string) member {
	t.Helper()
	c := rawConn(t, env.addrs, sharedPeerSession)
	m := newGoMember(t, id, log)
	var node string
	m.acquire = func(ctx context.Context) (err error) {
		node, err = classicAcquire(ctx, c, group, prefix(c), []byte(id), func(f string, a ...any) { log.note(id, f, a...) })
		return err
	}
	m.giveBack = func(context.Context) error { return c.Delete(group+"/"+node, -1) }
	m.unblock = c.Close
	return m
}

// classicSeq reads the trailing 10-digit sequence, as the classic recipe
// does; other children are not part of its queue.
func classicSeq(name string) (int, bool) {
	if len(name) < 10 {
		return 0, false
	}
	s := name[len(name)-10:]
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// classicAcquire is the classic election recipe exactly as the seed text
// (/work/shared/seeds/000) gives it, acting on NodeDeleted only:
//
//  1. create group/prefix EPHEMERAL|SEQUENTIAL;
//  2. L = getChildren(group, false);
//  3. if ours has the lowest sequence in L, we own; otherwise
//     exists(M, true) on the node with the largest sequence below ours
//     (if it is already gone, back to 2);
//  4. on a notification of that node's deletion, back to 2. Any other
//     notification (NodeDataChanged when someone writes the node) is not a
//     deletion: we wait again on a fresh exists watch, without listing.
//
// So it is the client that never wakes when an owner writes its node and
// deletes it in one transaction: the write fires the one-shot watch, and
// the fresh watch on a node that is gone waits for its creation.
func classicAcquire(ctx context.Context, c *zk.Conn, group, prefix string, data []byte, note func(string, ...any)) (string, error) {
	var created string
	for {
		p, err := c.Create(group+"/"+prefix, data, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNoNode) {
			if err := mkParents(c, group); err != nil {
				return "", err
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create %s/%s: %w", group, prefix, err)
		}
		created = p
		break
	}
	me := path.Base(created)
	mine, _ := classicSeq(me)
	for {
		children, _, err := c.Children(group)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", group, err)
		}
		pred, predSeq := "", -1
		for _, ch := range children {
			if s, ok := classicSeq(ch); ok && ch != me && s < mine && s > predSeq {
				pred, predSeq = ch, s
			}
		}
		if pred == "" {
			note("%s is the lowest in %v: owner", me, children)
			return me, nil
		}
		ok, _, ev, err := c.ExistsW(group + "/" + pred)
		if err != nil {
			return "", fmt.Errorf("exists %s: %w", pred, err)
		}
		if !ok {
			note("%s: predecessor %s already gone; listing again", me, pred)
			continue
		}
		note("%s: watching predecessor %s for its deletion", me, pred)
		for {
			var e zk.Event
			select {
			case e = <-ev:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			if e.Type == zk.EventNodeDeleted {
				note("%s: NodeDeleted on %s; listing again", me, pred)
				break
			}
			if e.Err != nil || e.Type == zk.EventNotWatching {
				return "", fmt.Errorf("watch on %s ended: %v", pred, e.Err)
			}
			ok, _, ev, err = c.ExistsW(group + "/" + pred)
			if err != nil {
				return "", fmt.Errorf("exists %s: %w", pred, err)
			}
			if ok {
				note("%s: %s on %s, not a deletion; waiting again on a fresh watch", me, e.Type, pred)
			} else {
				note("%s: %s on %s, not a deletion; the fresh watch finds it gone and now waits for its creation, which never comes", me, e.Type, pred)
			}
		}
	}
}

// mkParents creates p and its parents as persistent nodes.
func mkParents(c *zk.Conn, p string) error {
	cur := ""
	for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + seg
		if _, err := c.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// peerMember is a participant in a peer process: "hold KIND" there.
type peerMember struct {
	pc                 *peerCtl
	kind, group, id    string
	log                *ownLog
	ctl                <-chan string
	released, stopping atomic.Bool
}

func newPeerMember(t *testing.T, pc *peerCtl, kind, group, id string, log *ownLog) member {
	t.Helper()
	if pc == nil {
		t.Fatal("peer process not started for this test")
	}
	m := &peerMember{pc: pc, kind: kind, group: group, id: id, log: log, ctl: pc.register(id, log)}
	t.Cleanup(m.stop)
	return m
}

func curatorKind(kind string) func(*testing.T, *sharedEnv, string, string, *ownLog, elect.Dialect) member {
	return func(t *testing.T, env *sharedEnv, group, id string, log *ownLog, _ elect.Dialect) member {
		return newPeerMember(t, env.cur, kind, group, id, log)
	}
}

func kazooKind(kind string) func(*testing.T, *sharedEnv, string, string, *ownLog, elect.Dialect) member {
	return func(t *testing.T, env *sharedEnv, group, id string, log *ownLog, _ elect.Dialect) member {
		return newPeerMember(t, env.kz, kind, group, id, log)
	}
}

func (m *peerMember) start() {
	if err := m.pc.send(fmt.Sprintf("hold %s %s %s", m.kind, m.group, m.id)); err != nil {
		m.log.fail(m.id, "%v", err)
	}
}

func (m *peerMember) release(t testing.TB) {
	t.Helper()
	if err := m.pc.send("release " + m.id); err != nil {
		t.Fatal(err)
	}
	if _, err := m.pc.wait(m.ctl, "released", 15*time.Second); err != nil {
		t.Fatalf("%s: %v", m.log.label(m.id), err)
	}
	m.released.Store(true)
}

func (m *peerMember) holding() error {
	evs, _ := m.log.snapshot()
	if _, ok := firstEvent(evs, "acq", m.id); !ok {
		return errors.New("does not own")
	}
	if _, ok := firstEvent(evs, "rel", m.id); ok {
		return errors.New("released")
	}
	return nil
}

func (m *peerMember) stop() {
	if m.released.Load() || m.stopping.Swap(true) {
		return
	}
	if m.pc.send("drop "+m.id) == nil {
		_, _ = m.pc.wait(m.ctl, "dropped", 15*time.Second)
	}
}

// cliMember is herald lock or herald run, a process of its own whose
// command logs to a file: "acq" when it starts (herald acquired before
// starting it), "rel" when the test tells it to end (herald releases after
// it exited).
type cliMember struct {
	id, what string
	log      *ownLog
	cmd      *exec.Cmd
	out      *lockedBuffer
	relFile  string

	exited              chan struct{}
	code                int
	releasing, stopping atomic.Bool
}

// holdScript is the command a herald CLI participant runs: it logs acq,
// holds until $OWN_REL exists (at most a minute, so that it never
// outlives the test), logs rel and exits, which makes herald release.
const holdScript = `printf 'acq %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"
i=0
while [ ! -e "$OWN_REL" ] && [ "$i" -lt 3000 ]; do sleep 0.02; i=$((i+1)); done
printf 'rel %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"`

func heraldLockCLI(t *testing.T, env *sharedEnv, group, id string, log *ownLog, d elect.Dialect) member {
	return newCLIMember(t, env, group, id, log, cliOpts{dialect: d, script: holdScript})
}

func heraldRunCLI(t *testing.T, env *sharedEnv, group, id string, log *ownLog, d elect.Dialect) member {
	return newCLIMember(t, env, group, id, log, cliOpts{dialect: d, run: true, script: holdScript})
}

// cliOpts shapes a herald CLI participant.
type cliOpts struct {
	dialect elect.Dialect // forced with --dialect unless "" or auto
	run     bool          // herald run; herald lock otherwise
	script  string        // the command, run with sh -c
	grace   time.Duration // --grace (default 5s)
	session time.Duration // --session-timeout (default sharedPeerSession)
	env     []string      // more environment for the command
}

// heraldArgs is the command line of herald lock (run false) or herald
// run for group, ending before the command; session 0 is sharedPeerSession.
func heraldArgs(env *sharedEnv, group, id string, d elect.Dialect, run bool, grace, session time.Duration) []string {
	if session <= 0 {
		session = sharedPeerSession
	}
	args := []string{"--zk", env.connect, "--session-timeout", session.String(), "--connect-timeout", "10s"}
	if run {
		args = append(args, "run", "--election", group)
	} else {
		args = append(args, "lock", "--lock", group)
	}
	if grace <= 0 {
		grace = 5 * time.Second
	}
	args = append(args, "--id", id, "--grace", grace.String())
	if d != "" && d != elect.DialectAuto {
		args = append(args, "--dialect", string(d))
	}
	return args
}

// cliEnv is this process's environment without HERALD_* (herald reads its
// flags from those), plus extra.
func cliEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERALD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func newCLIMember(t *testing.T, env *sharedEnv, group, id string, log *ownLog, o cliOpts) *cliMember {
	t.Helper()
	if env.bin == "" {
		t.Fatal("herald binary not built for this test")
	}
	m := &cliMember{id: id, what: "herald lock", log: log, out: &lockedBuffer{}, exited: make(chan struct{}),
		relFile: filepath.Join(env.dir, id+".release")}
	if o.run {
		m.what = "herald run"
	}
	logFile := filepath.Join(env.dir, id+".log")
	log.addFile(logFile)
	m.cmd = exec.Command(env.bin, append(heraldArgs(env, group, id, o.dialect, o.run, o.grace, o.session), "--", "sh", "-c", o.script)...)
	m.cmd.Env = cliEnv(append([]string{"OWN_ID=" + id, "OWN_LOG=" + logFile, "OWN_REL=" + m.relFile, "HERALD_BIN=" + env.bin}, o.env...)...)
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	// What herald leaves running (its command's children, its watchdog
	// within --grace) may hold the output open; herald's exit is what
	// counts.
	m.cmd.WaitDelay = 5 * time.Second
	t.Cleanup(m.stop)
	return m
}

func (m *cliMember) start() {
	m.log.mark("queued", m.id)
	if err := m.cmd.Start(); err != nil {
		m.log.fail(m.id, "start %s: %v", m.what, err)
		close(m.exited)
		return
	}
	go func() {
		_ = m.cmd.Wait()
		m.code = m.cmd.ProcessState.ExitCode()
		close(m.exited)
		if m.releasing.Load() || m.stopping.Load() {
			return
		}
		m.log.fail(m.id, "%s exited %d before it was told to release:\n%s", m.what, m.code, lastBytes(m.out.String()))
	}()
}

func (m *cliMember) release(t testing.TB) {
	t.Helper()
	m.releasing.Store(true)
	if err := os.WriteFile(m.relFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s %s did not exit within 15s of its command ending:\n%s", m.what, m.id, lastBytes(m.out.String()))
	}
	if m.code != 0 {
		t.Errorf("%s %s exited %d after its command ended, want 0:\n%s", m.what, m.id, m.code, lastBytes(m.out.String()))
	}
}

func (m *cliMember) holding() error {
	select {
	case <-m.exited:
		return fmt.Errorf("%s exited %d:\n%s", m.what, m.code, lastBytes(m.out.String()))
	default:
	}
	evs, _ := m.log.snapshot()
	if _, ok := firstEvent(evs, "acq", m.id); !ok {
		return errors.New("its command has not started")
	}
	if _, ok := firstEvent(evs, "rel", m.id); ok {
		return errors.New("its command ended")
	}
	return nil
}

// waitExit waits at most d for the process and returns its exit code.
func (m *cliMember) waitExit(d time.Duration) (int, bool) {
	select {
	case <-m.exited:
		return m.code, true
	case <-time.After(d):
		return 0, false
	}
}

func (m *cliMember) stop() {
	m.stopping.Store(true)
	if m.cmd.Process == nil {
		return
	}
	_ = os.WriteFile(m.relFile, nil, 0o644)
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			_ = m.cmd.Process.Signal(sig)
		}
		if _, ok := m.waitExit(5 * time.Second); ok {
			return
		}
	}
}

// ---- cyclers: the participants of the random mixes ----

// cycler is one participant of a random mix: tenure after tenure, each
// held 20–80 ms, until the run ends.
type cycler struct {
	id, name string
	// run cycles until until; it returns when the participant is done
	// (or ctx, a bound past until, ends). Failures go to the log.
	run func(ctx context.Context, until time.Time)
}

func holdRandom() time.Duration { return time.Duration(20+rand.IntN(61)) * time.Millisecond }

// goCycler cycles an in-process client: take blocks until it owns (the
// returned give hands ownership back; lost reports a loss while holding).
func goCycler(id, name string, log *ownLog, take func(ctx context.Context) (give func(context.Context) error, lost func() error, err error)) cycler {
	log.name(id, name)
	return cycler{id: id, name: name, run: func(ctx context.Context, until time.Time) {
		for time.Now().Before(until) && ctx.Err() == nil {
			log.mark("queued", id)
			give, lost, err := take(ctx)
			if err != nil {
				log.fail(id, "acquire: %v", err)
				return
			}
			log.mark("acq", id)
			time.Sleep(holdRandom())
			if lost != nil {
				if err := lost(); err != nil {
					log.fail(id, "lost ownership while holding: %v", err)
				}
			}
			log.mark("rel", id)
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = give(rctx)
			cancel()
			if err != nil {
				log.fail(id, "release: %v", err)
				return
			}
		}
	}}
}

// heraldCycler is a herald Lock or Election, one object for the whole run
// (so consecutive waits form herald's rotation).
func heraldCycler(t *testing.T, env *sharedEnv, group string, log *ownLog, d elect.Dialect, election bool) cycler {
	t.Helper()
	short, name := "herald-lock", "herald Lock"
	if election {
		short, name = "herald-election", "herald Election"
	}
	if d != "" && d != elect.DialectAuto {
		name += " (dialect " + string(d) + ")"
	}
	id := newID(short)
	s := session(t, env.addrs, elect.WithSessionTimeout(sharedPeerSession))
	take := heraldTaker(t, s, group, id, d, election)
	return goCycler(id, name, log, func(ctx context.Context) (func(context.Context) error, func() error, error) {
		h, err := take(ctx)
		if err != nil {
			return nil, nil, err
		}
		give := h.Release
		if election {
			give = h.Resign
		}
		return give, func() error {
			if !h.Held() {
				return fmt.Errorf("%s (%v)", h.Reason(), h.Err())
			}
			return nil
		}, nil
	})
}

// gozkCycler is go-zookeeper's zk.Lock, one Lock for the whole run.
func gozkCycler(t *testing.T, env *sharedEnv, group string, log *ownLog) cycler {
	t.Helper()
	id := newID("gozk-lock")
	c := rawConn(t, env.addrs, sharedPeerSession)
	l := zk.NewLock(c, group, zk.WorldACL(zk.PermAll))
	var stopOnce sync.Once
	return goCycler(id, "go-zookeeper zk.Lock", log, func(ctx context.Context) (func(context.Context) error, func() error, error) {
		stop := context.AfterFunc(ctx, func() { stopOnce.Do(c.Close) }) // LockWithData ignores contexts
		defer stop()
		if err := l.LockWithData([]byte(id)); err != nil {
			return nil, nil, err
		}
		return func(context.Context) error { return l.Unlock() }, nil, nil
	})
}

// classicCycler is the classic recipe (classicAcquire) with names made by
// prefix.
func classicCycler(t *testing.T, env *sharedEnv, group string, log *ownLog, name string, prefix func(*zk.Conn) string) cycler {
	t.Helper()
	id := newID("classic")
	c := rawConn(t, env.addrs, sharedPeerSession)
	return goCycler(id, name, log, func(ctx context.Context) (func(context.Context) error, func() error, error) {
		node, err := classicAcquire(ctx, c, group, prefix(c), []byte(id), func(f string, a ...any) { log.note(id, f, a...) })
		if err != nil {
			return nil, nil, err
		}
		return func(context.Context) error { return c.Delete(group+"/"+node, -1) }, nil, nil
	})
}

// peerCycler is "loop KIND" in a peer process.
func peerCycler(t *testing.T, pc *peerCtl, kind, short, name, group string, log *ownLog, duration time.Duration) cycler {
	t.Helper()
	if pc == nil {
		t.Fatal("peer process not started for this test")
	}
	id := newID(short)
	log.name(id, name)
	ch := pc.register(id, log)
	return cycler{id: id, name: name, run: func(ctx context.Context, until time.Time) {
		if err := pc.send(fmt.Sprintf("loop %s %s %s 20 80 %d", kind, group, id, duration.Milliseconds())); err != nil {
			log.fail(id, "%v", err)
			return
		}
		d := time.Until(until) + 20*time.Second
		if dl, ok := ctx.Deadline(); ok {
			d = time.Until(dl)
		}
		if _, err := pc.wait(ch, "done", d); err != nil {
			log.fail(id, "%v", err)
			if pc.send("drop "+id) == nil {
				_, _ = pc.wait(ch, "dropped", 15*time.Second)
			}
		}
	}}
}

// cliCycler runs herald lock (or herald run) again and again, each run's
// command holding 20–80 ms.
func cliCycler(t *testing.T, env *sharedEnv, group string, log *ownLog, run bool) cycler {
	t.Helper()
	short, name := "cli-lock", "herald lock"
	if run {
		short, name = "cli-run", "herald run"
	}
	id := newID(short)
	log.name(id, name)
	logFile := filepath.Join(env.dir, id+".log")
	log.addFile(logFile)
	script := `printf 'acq %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"
sleep "$OWN_HOLD"
printf 'rel %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"`
	return cycler{id: id, name: name, run: func(ctx context.Context, until time.Time) {
		for time.Now().Before(until) && ctx.Err() == nil {
			var out lockedBuffer
			cmd := exec.CommandContext(ctx, env.bin, append(heraldArgs(env, group, id, "", run, 0, 0), "--", "sh", "-c", script)...)
			cmd.Env = cliEnv("OWN_ID="+id, "OWN_LOG="+logFile, fmt.Sprintf("OWN_HOLD=%.3f", holdRandom().Seconds()))
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.WaitDelay = 5 * time.Second // as for cliMember
			log.mark("queued", id)
			if err := cmd.Run(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
				if ctx.Err() == nil {
					log.fail(id, "%s: %v\n%s", name, err, lastBytes(out.String()))
				}
				return
			}
		}
	}}
}

// runMix runs every cycler until duration passed and all are done (at
// most 30 s more: a participant that hangs is reported, not waited for).
// It returns when the run started and when the cyclers were to stop.
func runMix(t *testing.T, duration time.Duration, cyclers []cycler) (start, until time.Time) {
	t.Helper()
	start = time.Now()
	until = start.Add(duration)
	ctx, cancel := context.WithDeadline(context.Background(), until.Add(30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range cyclers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx, until)
		}()
	}
	wg.Wait()
	return start, until
}

// awaitWatched waits until a session other than the node's owner watches
// it: the waiter queued behind it has set its watch, so a write to the
// node now fires that watch.
func awaitWatched(t testing.TB, env *sharedEnv, node string, d time.Duration) {
	t.Helper()
	ok, st, err := env.probe.Exists(node)
	if err != nil || !ok {
		t.Fatalf("%s: exists %v, %v", node, ok, err)
	}
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := env.zk.Member(0).FourLetter(ctx, "wchp")
		cancel()
		if err != nil {
			t.Fatalf("wchp: %v", err)
		}
		in := false
		for _, line := range strings.Split(out, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "/"):
				in = line == node
			case in && line != "":
				if sid, err := strconv.ParseInt(strings.TrimPrefix(line, "0x"), 16, 64); err == nil && sid != st.EphemeralOwner {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody but its owner watches %s after %v; wchp:\n%s", node, d, lastBytes(out))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
