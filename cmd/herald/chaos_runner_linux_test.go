package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sys/unix"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// chaosRunnerChild is the command every runner of TestChaosRunners starts.
// It ignores SIGTERM, so that only its runner's SIGKILL (or the watchdog's)
// ends it early, and it holds an flock on its group's lock file while it
// runs: a command that starts while another of its group still runs cannot
// take the flock and writes OVERLAP. It then sleeps for $HOLD seconds,
// the sleep keeping the flock.
const chaosRunnerChild = `trap "" TERM
exec 9>>"$MARKS.lock"
flock -n 9 || echo "OVERLAP $HERALD_ID pid=$$ term=$HERALD_TERM node=$HERALD_NODE at=$(date +%H:%M:%S.%N)" >> "$MARKS"
echo "start $HERALD_ID pid=$$ term=$HERALD_TERM node=$HERALD_NODE at=$(date +%H:%M:%S.%N)" >> "$MARKS"
exec sleep "$HOLD"`

// The flags every runner of the test gets: a session timeout short enough
// that some freezes outlast it, and a --grace far longer than the loss
// grace herald derives from the session timeout (a sixth of it), so that
// once ownership is lost it is that bound, not --grace, that must end a
// command ignoring SIGTERM before the next one starts.
const (
	chaosSessionTimeout = "2s"
	chaosGrace          = "5s"
)

// TestChaosRunners (HERALD_CHAOS=1, `make chaos`): real herald processes,
// four `herald run --rejoin` copies of one election and three loops of
// `herald lock` on one lock, while owners' nodes are deleted by hand
// (sometimes right before a new copy starts), runners are killed with
// SIGKILL, frozen with SIGSTOP for up to past their session timeout,
// told to stop with SIGTERM while a new copy starts beside them, and whole
// groups deleted (a deleteall) under them. Never two
// commands of one group at once, and both groups keep changing hands.
func TestChaosRunners(t *testing.T) {
	newRunnerChaos(t).run(nil)
}

// run runs the chaos for HERALD_CHAOS_RUNNERS_DURATION and checks what it
// must show (see check); beside, when not nil, starts more in the groups
// with the runners, and returns what stops it, before the runners are.
func (c *runnerChaos) run(beside func() (stop func())) {
	duration := chaosRunnersDuration(c.t)
	began := time.Now()
	stopGaps := c.watchGaps()
	c.startLoops()
	stopBeside := func() {}
	if beside != nil {
		stopBeside = beside()
	}
	c.inject(duration)
	recovery := c.recovers()
	gaps := stopGaps()
	stopBeside()
	c.stopAll()
	c.checkLeftovers()
	c.check(duration, time.Since(began), gaps, recovery)
}

// chaosRunnersDuration reads HERALD_CHAOS_RUNNERS_DURATION.
func chaosRunnersDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("HERALD_CHAOS_RUNNERS_DURATION")
	if v == "" {
		return 60 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("HERALD_CHAOS_RUNNERS_DURATION=%q: want a positive Go duration such as 90s or 5m", v)
	}
	return d
}

// chaosProc is one herald process of the test; its output goes to its own
// file, named by its id.
type chaosProc struct {
	id   string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	code int
	// hit names the signal a fault sent it to end it, "" if none did.
	hit string
}

func (p *chaosProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the herald process itself (not to its command's
// process group). os.Process refuses once the process was waited for, so
// a pid the kernel gave to someone else is never signalled.
func (p *chaosProc) signal(sig syscall.Signal) bool { return p.cmd.Process.Signal(sig) == nil }

// chaosSlot is one place in a group: a run copy, or a lock loop. When its
// herald exits, the slot starts another; a fault may also start one at
// once beside the one it signalled.
type chaosSlot struct {
	name  string // run-1, lock-2: the ids of its processes are name.N
	kind  string // "run" or "lock"
	group string
	wake  chan struct{}

	mu      sync.Mutex
	n       int
	cur     *chaosProc
	stopped bool
}

// runnerChaos is the test's state: the groups, the slots, every process
// started, and a journal of the faults.
type runnerChaos struct {
	t     *testing.T
	dir   string
	zk    []string
	conn  *zk.Conn
	group map[string]string // kind -> ZooKeeper path
	marks map[string]string // kind -> marks file
	// flocks names each group's lock file as /proc/locks does,
	// "maj:min:inode" -> kind.
	flocks map[string]string
	slots  []*chaosSlot
	seed   uint64
	stop   chan struct{}
	loops  sync.WaitGroup
	// stopLoops stops the slots' loops and waits for them.
	stopLoops func()
	thaws     sync.WaitGroup // SIGCONTs still to send

	rmu sync.Mutex
	rnd *rand.Rand

	mu      sync.Mutex
	procs   []*chaosProc
	faults  map[string]int
	journal []string
	exits   map[string]int // "run exit 143 after SIGTERM" -> count
	// unasked are the run copies that exited though no fault ended them:
	// a copy with --rejoin should not.
	unasked []*chaosProc
	stopped bool
	// minRun and minLock are the fewest tenures a minute each group must
	// show, and everyLeads the shortest run in which every run copy must
	// have led (see check).
	minRun, minLock int
	everyLeads      time.Duration
}

// newRunnerChaos sets up the runner chaos's groups and slots; it skips
// the test unless HERALD_CHAOS=1.
func newRunnerChaos(t *testing.T) *runnerChaos {
	if os.Getenv("HERALD_CHAOS") != "1" {
		t.Skip("chaos test: set HERALD_CHAOS=1 (make chaos); HERALD_CHAOS_RUNNERS_DURATION sets how long (default 60s)")
	}
	// Not t.TempDir: the logs and marks stay on disk when the test fails.
	dir, err := os.MkdirTemp("", "herald-chaos-runners-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	base := uniq(t)
	c := &runnerChaos{
		t: t, dir: dir, conn: rawZK(t), seed: seed, stop: make(chan struct{}),
		zk:     []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", chaosSessionTimeout, "--connect-timeout", "10s"},
		group:  map[string]string{"run": base + "-run", "lock": base + "-lock"},
		marks:  map[string]string{"run": filepath.Join(dir, "run.marks"), "lock": filepath.Join(dir, "lock.marks")},
		rnd:    rand.New(rand.NewPCG(seed, 11)),
		faults: map[string]int{}, exits: map[string]int{},
		minRun: 6, minLock: 50, everyLeads: time.Minute,
	}
	t.Cleanup(func() {
		c.stopAll()
		if t.Failed() {
			t.Logf("logs and marks kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	c.flocks = map[string]string{}
	for kind, m := range c.marks {
		// The lock files exist before any command, so that their locks
		// can be found in /proc/locks.
		var st unix.Stat_t
		if err := os.WriteFile(m+".lock", nil, 0o644); err != nil || unix.Stat(m+".lock", &st) != nil {
			t.Fatalf("lock file %s.lock: %v", m, err)
		}
		c.flocks[fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)] = kind
	}
	for i := 1; i <= 4; i++ {
		c.slots = append(c.slots, &chaosSlot{name: fmt.Sprintf("run-%d", i), kind: "run", group: c.group["run"], wake: make(chan struct{}, 1)})
	}
	for i := 1; i <= 3; i++ {
		c.slots = append(c.slots, &chaosSlot{name: fmt.Sprintf("lock-%d", i), kind: "lock", group: c.group["lock"], wake: make(chan struct{}, 1)})
	}
	t.Logf("seed %d, run group %s, lock group %s, files in %s", seed, c.group["run"], c.group["lock"], dir)
	return c
}

func (c *runnerChaos) intn(n int) int {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.rnd.IntN(n)
}

// between returns a random duration in [lo, hi], in milliseconds.
func (c *runnerChaos) between(lo, hi int) time.Duration {
	return time.Duration(lo+c.intn(hi-lo+1)) * time.Millisecond
}

// spawn starts the slot's next herald. A run copy's command runs until it
// is stopped; a lock's exits by itself after 50-400 ms, so that the lock
// changes hands often. Called with s.mu held; nil when it could not start.
func (c *runnerChaos) spawn(s *chaosSlot) *chaosProc {
	s.n++
	id := fmt.Sprintf("%s.%d", s.name, s.n)
	args := append(slices.Clone(c.zk), "run", "--election", s.group, "--rejoin")
	hold := "3600"
	if s.kind == "lock" {
		args = append(slices.Clone(c.zk), "lock", "--lock", s.group)
		hold = fmt.Sprintf("%.3f", c.between(50, 400).Seconds())
	}
	args = append(args, "--id", id, "--grace", chaosGrace, "--", "sh", "-c", chaosRunnerChild)
	p := &chaosProc{id: id, cmd: exec.Command(heraldBin, args...), log: filepath.Join(c.dir, "logs", id+".log"), done: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		c.t.Errorf("spawn %s: %v", id, err)
		return nil
	}
	defer out.Close()
	// CHAOS_RUNNERS marks every process of this test, herald's watchdogs
	// and commands included, for the search for leftovers at the end.
	p.cmd.Env = append(os.Environ(), "HERALD_BIN="+heraldBin, "MARKS="+c.marks[s.kind], "HOLD="+hold, "CHAOS_RUNNERS="+c.dir)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		c.t.Errorf("spawn %s: %v", id, err)
		return nil
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	go func() {
		_ = p.cmd.Wait()
		p.code = exitCode(p.cmd.ProcessState)
		c.mu.Lock()
		how := "by itself"
		if p.hit != "" {
			how = "after " + p.hit
		}
		c.exits[fmt.Sprintf("%s exit %d %s", s.kind, p.code, how)]++
		if s.kind == "run" && p.hit == "" {
			c.unasked = append(c.unasked, p)
		}
		c.mu.Unlock()
		close(p.done)
	}()
	return p
}

// startLoops starts every slot's loop; c.stopLoops stops them (they start
// no more processes) and waits for them.
func (c *runnerChaos) startLoops() {
	for _, s := range c.slots {
		c.loops.Add(1)
		go func() { defer c.loops.Done(); c.loop(s) }()
	}
	var once sync.Once
	c.stopLoops = func() {
		once.Do(func() {
			for _, s := range c.slots {
				s.mu.Lock()
				s.stopped = true
				s.mu.Unlock()
			}
			close(c.stop)
			c.loops.Wait()
		})
	}
}

// loop keeps a herald running in the slot: it starts one whenever the
// last has exited.
func (c *runnerChaos) loop(s *chaosSlot) {
	for {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		if s.cur == nil || s.cur.exited() {
			s.cur = c.spawn(s)
		}
		p := s.cur
		s.mu.Unlock()
		// A herald that could not start is tried again shortly.
		var done <-chan struct{}
		var retry <-chan time.Time
		if p != nil {
			done = p.done
		} else {
			retry = time.After(200 * time.Millisecond)
		}
		select {
		case <-done:
		case <-retry:
		case <-s.wake:
		case <-c.stop:
			return
		}
	}
}

// note writes a fault to the journal and counts it.
func (c *runnerChaos) note(kind, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults[kind]++
	c.journal = append(c.journal, time.Now().Format("15:04:05.000 ")+kind+": "+fmt.Sprintf(format, args...))
}

// inject injects a random fault every 0.3-1.5 s until d has passed, and
// waits for the frozen runners it still has to thaw.
func (c *runnerChaos) inject(d time.Duration) {
	defer c.thaws.Wait()
	end := time.Now().Add(d)
	for {
		time.Sleep(c.between(300, 1500))
		if !time.Now().Before(end) {
			return
		}
		s := c.target()
		switch c.intn(6) {
		case 0:
			what, ok := c.deleteOwner(s.kind)
			c.note(map[bool]string{true: "delete owner", false: "delete owner (nothing deleted)"}[ok], "%s", what)
		case 1:
			c.replace(s, syscall.SIGKILL, true)
		case 2:
			c.replace(s, syscall.SIGKILL, false)
		case 3:
			c.freeze(s)
		case 4:
			c.replace(s, syscall.SIGTERM, false)
		case 5:
			// A deleteall of the whole group: the next first node has
			// nobody before it in the group made anew, while a frozen
			// owner's command may still run (the run notes' case).
			if err := deleteTree(c.conn, c.group[s.kind]); err != nil {
				c.note("deleteall (failed)", "%s group: %v", s.kind, err)
			} else {
				c.note("deleteall", "%s group", s.kind)
			}
		}
	}
}

// target picks the slot a fault hits: half the time the one whose command
// started last in a group picked at random (its owner, most likely: a
// fault on a waiter changes no hands), else any slot.
func (c *runnerChaos) target() *chaosSlot {
	if c.intn(2) == 0 {
		kind := []string{"run", "lock"}[c.intn(2)]
		marks := c.marksOf(kind)
		for i := len(marks) - 1; i >= 0; i-- {
			if f := strings.Fields(marks[i]); len(f) >= 2 && f[0] == "start" {
				slot, _, _ := strings.Cut(f[1], ".")
				for _, s := range c.slots {
					if s.name == slot {
						return s
					}
				}
			}
		}
	}
	return c.slots[c.intn(len(c.slots))]
}

// ownerNode finds the group's lowest queue node: the owner's, or the node
// of the waiter about to own.
func (c *runnerChaos) ownerNode(group string) (string, error) {
	ch, _, err := c.conn.Children(group)
	if err != nil {
		return "", err
	}
	node, lowest := "", int32(0)
	for _, name := range ch {
		if info, ok := elect.ParseName(name); ok && (node == "" || info.Sequence < lowest) {
			node, lowest = name, info.Sequence
		}
	}
	if node == "" {
		return "", errors.New("no queue node")
	}
	return node, nil
}

// deleteOwner deletes the owner's node by hand, as an operator with
// zkCli's delete would, and says what it did.
func (c *runnerChaos) deleteOwner(kind string) (string, bool) {
	g := c.group[kind]
	node, err := c.ownerNode(g)
	if err == nil {
		err = c.conn.Delete(g+"/"+node, -1)
	}
	if err != nil {
		return fmt.Sprintf("%s group: nothing deleted (%v)", kind, err), false
	}
	return fmt.Sprintf("%s group: deleted %s", kind, node), true
}

// replace sends sig to the slot's herald and starts a new one in the slot
// at once; with deleteFirst, the owner's node of the slot's group is
// deleted by hand in between, just before the new copy joins.
func (c *runnerChaos) replace(s *chaosSlot, sig syscall.Signal, deleteFirst bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	fault := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig]
	old := "none running"
	if p := s.cur; p != nil && !p.exited() {
		c.mu.Lock()
		p.hit = fault
		c.mu.Unlock()
		if p.signal(sig) {
			old = p.id
		}
	}
	deleted := ""
	if deleteFirst {
		what, ok := c.deleteOwner(s.kind)
		deleted = ", " + what
		fault += "+delete owner"
		if !ok {
			fault += " (nothing deleted)"
		}
	}
	s.cur = c.spawn(s)
	next := "none"
	if s.cur != nil {
		next = s.cur.id
	}
	c.note(fault+"+new copy", "%s%s, then started %s", old, deleted, next)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// freeze stops the slot's herald with SIGSTOP for 0.2-3 s, past its
// session timeout at times, then lets it run again.
func (c *runnerChaos) freeze(s *chaosSlot) {
	s.mu.Lock()
	p := s.cur
	s.mu.Unlock()
	if p == nil || p.exited() || !p.signal(syscall.SIGSTOP) {
		return
	}
	d := c.between(200, 3000)
	c.note("SIGSTOP", "%s for %v", p.id, d)
	c.thaws.Add(1)
	go func() {
		defer c.thaws.Done()
		time.Sleep(d)
		p.signal(syscall.SIGCONT)
	}()
}

// recovers checks that both groups work again once the faults stop: a
// command of the election runs, and the lock changes hands three more
// times. It returns how long that took.
func (c *runnerChaos) recovers() time.Duration {
	from := time.Now()
	before, _ := countStarts(c.marksOf("lock"))
	var running bool
	var more int
	err := waitFor(20*time.Second, func() bool {
		running = heldFlocks(c.flocks)["run"]
		n, _ := countStarts(c.marksOf("lock"))
		more = n - before
		return running && more >= 3
	})
	if err != nil {
		c.t.Errorf("the groups did not work again within 20s of the last fault: a command of the election running: %v; lock tenures since: %d", running, more)
	}
	return time.Since(from)
}

// stopAll stops the loops, then kills every herald of the test that still
// runs (thawing it first) and waits for it. A command dies with its runner
// (the kernel's parent-death signal), and the watchdog stops the rest of
// its process group; checkLeftovers makes sure of it.
func (c *runnerChaos) stopAll() {
	if c.stopLoops != nil {
		c.stopLoops()
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	procs := slices.Clone(c.procs)
	c.mu.Unlock()
	for _, p := range procs {
		c.mu.Lock()
		if p.hit == "" {
			p.hit = "SIGKILL at the end"
		}
		c.mu.Unlock()
		p.signal(syscall.SIGCONT)
		p.signal(syscall.SIGKILL)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			c.t.Errorf("herald %s still runs 10s after SIGKILL", p.id)
		}
	}
}

// ours lists the processes whose environment carries this test's mark:
// commands and watchdogs its heralds left, pid -> command line.
func (c *runnerChaos) ours() map[int]string {
	mark := []byte("CHAOS_RUNNERS=" + c.dir + "\x00")
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, mark) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out[pid] = strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// checkLeftovers fails the test if a command or a watchdog outlives the
// heralds, killed a while ago: each must be gone within the watchdog's
// kill bound. Whatever is left is killed, through a pidfd opened before
// its environment is read again, so that no reused pid is hit.
func (c *runnerChaos) checkLeftovers() {
	var left map[int]string
	if waitFor(15*time.Second, func() bool { left = c.ours(); return len(left) == 0 }) == nil {
		return
	}
	c.t.Errorf("processes of the test still run 15s after every herald was killed: %v", left)
	for pid := range left {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if _, still := c.ours()[pid]; still {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// watchGaps follows, from /proc/locks, whether a command of each group
// holds its flock, without taking it: the function returned stops it and
// gives the longest stretch in each group without a running command, from
// the group's first command on (the whole run if none ever ran).
func (c *runnerChaos) watchGaps() func() map[string]time.Duration {
	quit, res := make(chan struct{}), make(chan map[string]time.Duration)
	began := time.Now()
	go func() {
		last, longest := map[string]time.Time{}, map[string]time.Duration{}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var now time.Time
			select {
			case <-quit:
				now = time.Now()
				for kind := range c.marks {
					from, ok := last[kind]
					if !ok {
						from = began
					}
					longest[kind] = max(longest[kind], now.Sub(from))
				}
				res <- longest
				return
			case now = <-tick.C:
			}
			for kind := range heldFlocks(c.flocks) {
				if from, ok := last[kind]; ok {
					longest[kind] = max(longest[kind], now.Sub(from))
				}
				last[kind] = now
			}
		}
	}()
	return func() map[string]time.Duration { close(quit); return <-res }
}

// heldFlocks reads /proc/locks and returns the kinds whose lock file has
// an flock on it.
func heldFlocks(want map[string]string) map[string]bool {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil
	}
	held := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 6 && f[1] == "FLOCK" {
			if kind, ok := want[f[5]]; ok {
				held[kind] = true
			}
		}
	}
	return held
}

// marksOf reads a group's marks file, one line a mark.
func (c *runnerChaos) marksOf(kind string) []string {
	b, err := os.ReadFile(c.marks[kind])
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		c.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// countStarts counts the commands started in a group, by the slot of the
// herald that started them.
func countStarts(marks []string) (total int, bySlot map[string]int) {
	bySlot = map[string]int{}
	for _, l := range marks {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "start" {
			total++
			slot, _, _ := strings.Cut(f[1], ".")
			bySlot[slot]++
		}
	}
	return total, bySlot
}

// check asserts what the run must show, and logs its figures: no overlap
// in either group, and both groups changing hands throughout.
func (c *runnerChaos) check(d, wall time.Duration, gaps map[string]time.Duration, recovery time.Duration) {
	t := c.t
	marks := map[string][]string{"run": c.marksOf("run"), "lock": c.marksOf("lock")}
	runN, runBy := countStarts(marks["run"])
	lockN, lockBy := countStarts(marks["lock"])
	c.mu.Lock()
	faults, exits, procs := tally(c.faults), tally(c.exits), len(c.procs)
	journal := strings.Join(c.journal, "\n")
	c.mu.Unlock()
	_ = os.WriteFile(filepath.Join(c.dir, "faults"), []byte(journal+"\n"), 0o644)
	t.Logf("runner chaos, %v (wall %v): run group %d tenures (%s), lock group %d tenures (%s); %d herald processes; faults: %s; longest stretch without a running command: run %v, lock %v; both groups working again %v after the last fault; exits: %s",
		d, wall.Round(time.Second), runN, tally(runBy), lockN, tally(lockBy), procs, faults,
		gaps["run"].Round(time.Millisecond), gaps["lock"].Round(time.Millisecond), recovery.Round(time.Millisecond), exits)
	c.logUnasked()
	overlaps := c.reportOverlaps("run", marks["run"]) + c.reportOverlaps("lock", marks["lock"])
	minutes := d.Minutes()
	// Most of the election's handoffs follow a node gone without a
	// release (a deletion by hand, a SIGKILL), after which the next copy
	// waits 11/12 of the 2 s session timeout, and a SIGKILL's the session
	// timeout first: 11 to 22 tenures a minute; 6 (minRun, for the runners
	// alone) still shows the group changing hands throughout.
	if want := int(float64(c.minRun) * minutes); runN < want {
		t.Errorf("run group: %d tenures in %v, want at least %d", runN, d, want)
	}
	if want := int(float64(c.minLock) * minutes); lockN < want {
		t.Errorf("lock group: %d tenures in %v, want at least %d", lockN, d, want)
	}
	for _, s := range c.slots {
		if s.kind == "run" && runBy[s.name] == 0 && d >= c.everyLeads {
			t.Errorf("no copy of %s ever led in %v", s.name, d)
		}
	}
	if overlaps == 0 && t.Failed() {
		c.mu.Lock()
		t.Logf("faults:\n%s", strings.Join(c.journal, "\n"))
		c.mu.Unlock()
	}
}

// logUnasked logs the end of the log of each run copy that exited though
// no fault ended it, to tell why.
func (c *runnerChaos) logUnasked() {
	c.mu.Lock()
	ps := slices.Clone(c.unasked)
	c.mu.Unlock()
	for _, p := range ps {
		b, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		c.t.Logf("run copy %s exited %d by itself; its last lines:\n%s", p.id, p.code, strings.Join(lines[max(0, len(lines)-6):], "\n"))
	}
}

// reportOverlaps fails the test for each OVERLAP mark of a group, showing
// the marks around it, the faults, and the logs of the heralds involved:
// the one whose command saw the flock taken and those whose commands
// started just before. It returns how many it found.
func (c *runnerChaos) reportOverlaps(kind string, marks []string) int {
	n := 0
	for i, l := range marks {
		if !strings.HasPrefix(l, "OVERLAP ") {
			continue
		}
		if n++; n > 3 {
			continue // the first ones tell the story
		}
		ids := []string{strings.Fields(l)[1]}
		lo := max(0, i-20)
		for j := i - 1; j >= lo && len(ids) < 4; j-- {
			if f := strings.Fields(marks[j]); len(f) >= 2 && f[0] == "start" && !slices.Contains(ids, f[1]) {
				ids = append(ids, f[1])
			}
		}
		c.t.Errorf("%s group: a command started while another of the group still ran: %s\nmarks around it:\n%s",
			kind, l, strings.Join(marks[lo:min(len(marks), i+6)], "\n"))
		for _, id := range ids {
			b, err := os.ReadFile(filepath.Join(c.dir, "logs", id+".log"))
			if err != nil {
				b = []byte(err.Error())
			}
			c.t.Logf("herald %s:\n%s", id, b)
		}
	}
	if n > 0 {
		c.mu.Lock()
		c.t.Logf("%s group: %d overlaps; faults:\n%s", kind, n, strings.Join(c.journal, "\n"))
		c.mu.Unlock()
	}
	return n
}

// tally writes counts as "key n, key n", keys sorted.
func tally(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
