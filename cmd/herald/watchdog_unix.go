//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The watchdog: a small process, herald's own binary started with
// watchdogArg, that keeps run's and lock's command from outliving the
// runner's say-so. The runner writes a heartbeat byte down a pipe; the
// watchdog stops the command's process group when the beats stop (the
// runner is frozen: SIGSTOP, a debugger, a machine too starved to run it)
// or the pipe closes without a goodbye (the runner died, kill -9
// included: the kernel kills the direct child then, but not what the
// child started).
//
// A frozen runner cannot hear that its session expired, so without the
// watchdog its command runs on beside the next owner's until it thaws.
// The beats stop when it freezes; the watchdog sends SIGTERM once half the
// session timeout passed without one, which is before the servers can
// expire the session (at the soonest two thirds of the timeout after the
// freeze: the client's last ping may be a third of the timeout older), and
// SIGKILL after --grace, as a runner that lost its session would, but no
// later than the runner said (watchdogKillBy after its last beat, before
// the session can expire): a command that ignores SIGTERM must not run on
// beside the next owner. The command's fenced writes are refused from the
// next owner's first write either way.
//
// The watchdog joins the command's process group, so that the group, and
// with it the group id the watchdog signals, exists as long as the
// watchdog does: it cannot name some later process's group.
const watchdogArg = "__herald-watchdog"

// ownWaits holds the pids of the watchdogs running: children of herald's
// in the command's process group that their own exec.Cmd waits for, which
// the stray reaper must leave alone. A pid is added under the lock as the
// watchdog starts, so the reaper never sees it exit unlisted.
var ownWaits = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// watchdogFired is the watchdog's exit status when it stopped the command.
const watchdogFired = 3

// watchdog is the runner's side: the process and the heartbeat pipe.
type watchdog struct {
	cmd   *exec.Cmd
	beat  *os.File
	quit  chan struct{}
	done  chan struct{}
	fired atomic.Bool
	// heard: the runner has acted on the exit (see spent).
	heard bool
	log   *slog.Logger // the runner's
	// warnedStopped: resume warned of the stop it sees now (only the
	// beating goroutine reads and writes it).
	warnedStopped bool
	// watching is closed once it says it watches (see hear).
	watching chan struct{}
}

// startWatchdog starts the watchdog over c's process group as spec says
// (see watchdogSpec), and waits for it to say it watches. It fails when
// it cannot (the command already exited, herald's binary cannot be
// found, the watchdog stayed silent, or the wait was cut short); the
// caller logs that and goes on without it.
func startWatchdog(c *child, spec watchdogSpec) (*watchdog, error) {
	self, err := heraldBinary()
	if err != nil {
		return nil, fmt.Errorf("cannot find herald's own binary to start the watchdog: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// The watchdog says down this one that it fired: its exit status
	// cannot, when its own SIGKILL of the group ends it.
	fr, fw, err := os.Pipe()
	if err != nil {
		w.Close()
		return nil, err
	}
	args := []string{watchdogArg, strconv.Itoa(c.Pid()), spec.after.String(), spec.grace.String(), spec.killBy.String()}
	if spec.release != nil {
		release, _ := json.Marshal(spec.release)
		args = append(args, string(release))
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), spec.env...), watchRunIDVar+"="+c.runID, watchCgroupVar+"="+c.cg)
	cmd.ExtraFiles = []*os.File{r, fw}
	cmd.Stdout, cmd.Stderr = spec.stderr, spec.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: c.Pid()}
	ownWaits.Lock()
	err = cmd.Start()
	if err == nil {
		ownWaits.pids[cmd.Process.Pid] = true // before the stray reaper can see it exit
	}
	ownWaits.Unlock()
	fw.Close() // the watchdog's now: its exit ends the pipe
	if err != nil {
		w.Close()
		fr.Close()
		return nil, fmt.Errorf("cannot start the watchdog: %w", err)
	}
	d := &watchdog{cmd: cmd, beat: w, quit: make(chan struct{}), done: make(chan struct{}), log: spec.log}
	d.watching = make(chan struct{})
	go d.hear(fr, d.watching)
	// Beats from the start, while it gets ready: it counts the silence
	// from its own start, and one slow to say it watches (a starved
	// machine: up to watchdogReadyWait) fired at once on a runner that
	// had not begun to beat, killing the command it had just let go.
	// Beats it has not read yet are no silence (see waiting), and a beat
	// sends SIGCONT only once it watches (see awaitReady for one slow to).
	// The beats end when the pipe is closed (see awaitReady).
	go d.beating(spec.after / 6)
	if err := d.awaitReady(d.watching, spec); err != nil {
		return nil, err
	}
	return d, nil
}

// Bytes the watchdog writes down its report pipe: that it watches (its
// signals set aside), and that it fired.
const (
	watchdogReady = 'r'
	watchdogFire  = 'f'
)

// watchdogReadyWait bounds the wait for the first watchdog to say it
// watches: the command is held meanwhile, and nothing of it runs. One
// started again while the command runs gets a twelfth of the session
// timeout (see keepWatchdog).
const watchdogReadyWait = 10 * time.Second

// hear reads the watchdog's report pipe r until the watchdog exits,
// closing ready when it says it watches, and then notes whether it fired
// and closes done.
func (d *watchdog) hear(r *os.File, ready chan struct{}) {
	fired, said, b := false, false, make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n > 0 && b[0] == watchdogReady && !said {
			said = true
			close(ready)
		}
		if n > 0 && b[0] == watchdogFire {
			fired = true
		}
		if err != nil {
			break
		}
	}
	r.Close()
	_ = d.cmd.Wait()
	ownWaits.Lock()
	delete(ownWaits.pids, d.cmd.Process.Pid)
	ownWaits.Unlock()
	d.fired.Store(fired || d.cmd.ProcessState != nil && d.cmd.ProcessState.ExitCode() == watchdogFired)
	close(d.done)
}

// awaitReady waits until the watchdog says it watches: it is in the
// command's process group, and until it has set SIGTERM and the like
// aside, a signal to that group kills it. It was let loose before that,
// so a command that signalled its group as it started, or the runner's
// own SIGTERM when ownership was lost within moments of the start,
// killed it, and a runner frozen then left its command running beside
// the next owner's (once in CI). The command is held until then (see
// gateArg), so nothing of it can signal the group first. A watchdog
// that exits or stays silent for spec.ready instead is no watchdog, and
// neither is one still silent when ownership ends or herald is told to
// stop (spec.abort, spec.cancel): the runner must act on those at once.
// It is killed, and the caller goes on without one, as when none can be
// started.
func (d *watchdog) awaitReady(ready <-chan struct{}, spec watchdogSpec) error {
	t := time.NewTimer(spec.ready)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-d.done:
		d.beat.Close()
		return fmt.Errorf("the watchdog exited as it started (%v)", d.cmd.ProcessState)
	case <-spec.abort:
		return d.giveUp("ownership ended while the watchdog started")
	case <-spec.cancel:
		return d.giveUp("herald was told to stop while the watchdog started")
	case <-t.C:
		return d.giveUp(fmt.Sprintf("the watchdog did not say it watches within %v (the machine starved?); it was killed", spec.ready))
	}
}

// giveUp kills a watchdog that has not said it watches, for why.
func (d *watchdog) giveUp(why string) error {
	_ = d.cmd.Process.Kill()
	<-d.done
	d.beat.Close()
	return errors.New(why)
}

// heraldBinary is the running binary itself, even when an upgrade has
// replaced or removed the file since herald started (Linux); elsewhere
// its path.
func heraldBinary() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}

// pid is the watchdog's process id, 0 when there is none.
func (d *watchdog) pid() int {
	if d == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// exited is closed once the watchdog process has exited, unless the
// runner already acted on that (spent); nil for none.
func (d *watchdog) exited() <-chan struct{} {
	if d == nil || d.heard {
		return nil
	}
	return d.done
}

// spent marks the watchdog's exit as acted on: exited no longer reports
// it.
func (d *watchdog) spent() *watchdog {
	d.heard = true
	return d
}

// hasFired reports whether the watchdog stopped the command.
func (d *watchdog) hasFired() bool { return d != nil && d.fired.Load() }

// beating writes a beat every period until stop, and resumes the
// watchdog should someone have stopped it (see resume).
func (d *watchdog) beating(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-d.quit:
			return
		case <-t.C:
			if _, err := d.beat.Write([]byte{'.'}); err != nil {
				return // the watchdog is gone; stop tells whether it acted
			}
			select {
			case <-d.watching:
				d.resume()
			default: // starting: awaitReady bounds the wait
			}
		}
	}
}

// resume sends SIGCONT to a watchdog that is stopped. It runs in the
// command's process group, so a kill -STOP of the group stops it too,
// and a kill -CONT of the command alone leaves it stopped: nothing then
// stopped the command should the runner freeze, and it ran beside the
// next owner's for as long as the freeze lasted (found by an adversarial
// test). The runner is running this very code, so it is not frozen.
//
// It is sent SIGCONT at every beat that finds it stopped: one stopped
// again between two beats, after it ran, looks the same as one still
// stopped, and skipping it left it stopped for good (found by a review).
// Only the warning is said once, until a beat finds it running: a
// watchdog a tracer holds stays stopped whatever it is sent.
func (d *watchdog) resume() {
	select {
	case <-d.done:
		return // exited: its pid may be someone else's by now
	default:
	}
	p, ok := readProc(d.pid())
	if !ok || !p.stopped {
		d.warnedStopped = false
		return
	}
	err := syscall.Kill(d.pid(), syscall.SIGCONT)
	if d.warnedStopped || d.log == nil {
		return
	}
	d.warnedStopped = true
	d.log.Warn("the watchdog was stopped (kill -STOP of the command's process group, or a debugger); sent it SIGCONT, as it must run to stop the command should herald freeze",
		"watchdog", d.pid(), "err", err)
}

// stop says goodbye (the runner stops the command itself from here) and
// waits briefly for the watchdog to exit. It reports whether the watchdog
// had stopped the command first.
func (d *watchdog) stop() bool {
	if d == nil {
		return false
	}
	select {
	case <-d.quit:
	default:
		close(d.quit)
		_, _ = d.beat.Write([]byte{'q'})
		d.beat.Close()
	}
	select {
	case <-d.done:
	case <-time.After(2 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	return d.fired.Load()
}

// runWatchdog is the watchdog process: args are the command's process
// group, the silence after which it stops it, the grace between SIGTERM
// and SIGKILL, and the time after the last beat by which the SIGKILL comes
// whatever the grace. The beats come on file descriptor 3; it writes to
// file descriptor 4 once it watches, and when it fires.
func runWatchdog(args []string, stderr io.Writer) int {
	var release []string
	if len(args) == 5 && json.Unmarshal([]byte(args[4]), &release) == nil && len(release) > 0 {
		args = args[:4]
	}
	if len(args) != 4 {
		fmt.Fprintln(stderr, "herald watchdog: internal use only (started by herald run and herald lock)")
		return exitUsage
	}
	pgid, err1 := strconv.Atoi(args[0])
	after, err2 := time.ParseDuration(args[1])
	grace, err3 := time.ParseDuration(args[2])
	killBy, err4 := time.ParseDuration(args[3])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || pgid <= 1 || after <= 0 || grace <= 0 || killBy <= 0 {
		fmt.Fprintf(stderr, "herald watchdog: bad arguments %q\n", args)
		return exitUsage
	}
	// The watchdog shares the command's group and so its signals, the
	// terminal's included when the command has it (Ctrl-Z must not stop
	// the watchdog); it answers to the runner's pipe only.
	// Its standard error is herald's: a pipe whose reader died must not
	// end it with SIGPIPE (it only says what it does there).
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE)
	report = os.NewFile(4, "report")
	const fd = 3
	beats := os.NewFile(fd, "heartbeat")
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	bye, gone := make(chan struct{}), make(chan struct{})
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := beats.Read(buf)
			if n > 0 {
				last.Store(time.Now().UnixNano())
				for _, b := range buf[:n] {
					if b == 'q' {
						close(bye)
						return
					}
				}
			}
			if err != nil {
				close(gone)
				return
			}
		}
	}()
	strays := watchStrays(pgid, os.Getenv(watchRunIDVar), os.Getenv(watchCgroupVar))
	_, _ = report.Write([]byte{watchdogReady}) // the runner lets the command start only now
	tick := time.NewTicker(max(after/10, 10*time.Millisecond))
	defer tick.Stop()
	var why string
	var releaser []string // only for a runner that died, not one that is silent
	for why == "" {
		select {
		case <-bye:
			return 0
		case <-gone:
			why, releaser = "herald exited without stopping its command", release
		case <-tick.C:
			strays.look(false)
			// Bytes waiting in the pipe are beats not read yet (this
			// process was not scheduled either), not silence.
			if quiet := time.Since(time.Unix(0, last.Load())); quiet > after && waiting(fd) == 0 {
				why = fmt.Sprintf("herald gave no sign of life for %v (frozen?) and cannot know whether it still owns", quiet.Round(time.Millisecond))
			}
		}
	}
	return fire(pgid, why, strays, time.Unix(0, last.Load()).Add(killBy), grace, bye, gone, release, releaser, stderr)
}

// fire stops the command's process group pgid and its strays for why:
// SIGTERM now, SIGKILL after grace or at killAt, whichever comes first,
// unless the runner says goodbye (bye) meanwhile. With a releaser (the
// runner died), the SIGKILL comes as soon as nothing of the command is
// left, and the releaser is started just before it (see startReleaser);
// a silent runner that dies meanwhile (gone) gets release as its releaser
// from then on, so that its node and run note go with its command, not
// with its session.
func fire(pgid int, why string, strays *strayWatch, killAt time.Time, grace time.Duration, bye, gone <-chan struct{}, release, releaser []string, stderr io.Writer) int {
	// The SIGKILL comes before the session can expire, --grace or not.
	now := time.Now()
	kill := now.Add(grace)
	if killAt.Before(kill) {
		kill = killAt
	}
	_, _ = report.Write([]byte{watchdogFire})
	// The signals before the look: once the runner is dead, a look reads
	// the environment of processes, which can stall (see lookWithin).
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	// Each process once: a second SIGTERM is "now" to some programs.
	told := withMembers(strays.lastSeen(), strays.tag.cg, pgid)
	stopStrays(told, false)
	also := ""
	if ps := strays.lookWithin(finalLook); len(ps) > 0 {
		also = fmt.Sprintf(" and what it started apart from it (%s)", procList(ps))
		stopStrays(without(ps, told), false)
	}
	// Said after the signals, and aside: a standard error nobody reads
	// (a full pipe) must not hold them up, nor the SIGKILL.
	said := make(chan struct{})
	go func() {
		fmt.Fprintf(stderr, "herald watchdog: %s; stopped the command's process group %d%s (SIGTERM, SIGKILL after %v, before its session can expire)\n",
			why, pgid, also, max(kill.Sub(now), 0).Round(time.Millisecond))
		close(said)
	}()
	if releaser != nil {
		gone = nil
	}
	ended := commandEnded(pgid, strays, releaser != nil, kill)
	// The deadline apart from ended, whose looks may stall.
	deadline := time.NewTimer(time.Until(kill))
	defer deadline.Stop()
	for waiting := true; waiting; {
		select {
		case <-bye: // the runner is back and stops the command itself
			select { // the line, unless standard error is blocked
			case <-said:
			case <-time.After(100 * time.Millisecond):
			}
			return watchdogFired
		case <-gone:
			gone, releaser = nil, release
			ended = commandEnded(pgid, strays, true, kill)
		case <-ended:
			waiting = false
		case <-deadline.C:
			waiting = false
		}
	}
	if strays.tag.cg != "" {
		_ = cgroupKill(strays.tag.cg) // all of it at once
	}
	left := strays.lookWithin(finalLook)
	stopStrays(left, true)
	if releaser != nil {
		startReleaser(releaser, pgid, left, strays.tag, stderr)
	}
	// The watchdog is in the group: this ends it too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return watchdogFired
}

// report is the watchdog process's pipe to the runner (file descriptor 4;
// see watchdogReady and watchdogFire), opened once: a second os.File
// over the descriptor would close it when collected.
var report *os.File

// finalLook bounds the looks that come before signals.
const finalLook = 250 * time.Millisecond

// commandEnded fires at kill, or, when early, as soon as nothing of the
// command but the watchdog is left: a runner that died is released as
// soon as its command is gone, not after its whole grace.
func commandEnded(pgid int, strays *strayWatch, early bool, kill time.Time) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTimer(time.Until(kill))
		defer t.Stop()
		var look <-chan time.Time
		if early {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			look = tick.C
		}
		for {
			select {
			case <-t.C:
				return
			case <-look:
				if commandGone(pgid, os.Getpid(), strays.look(false), strays.tag) {
					return
				}
			}
		}
	}()
	return ch
}

// startReleaser starts the releaser of a runner that died (see
// release_abandoned.go) in a session of its own, so that the SIGKILL of
// the command's group, which ends the watchdog, does not end it: it waits
// for the group and the strays left to be gone before it releases.
func startReleaser(args []string, pgid int, strays []procInfo, tag runTag, stderr io.Writer) {
	self, err := heraldBinary()
	if err != nil {
		fmt.Fprintf(stderr, "herald watchdog: could not start the release of the dead runner's node (it goes when its session expires): %v\n", err)
		return
	}
	cmd := exec.Command(self, append(slices.Clone(args), "--pgid", strconv.Itoa(pgid), "--strays", formatStrays(strays), "--run-id", tag.id, "--since", strconv.FormatUint(tag.since, 10), "--cgroup", tag.cg)...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "herald watchdog: could not start the release of the dead runner's node (it goes when its session expires): %v\n", err)
	}
}

// strayWatch is the watchdog's list of the command's strays (see
// strays_linux.go): processes it started outside its process group,
// which the runner's death hands to init, out of the runner's tree, so
// they are remembered as last seen.
type strayWatch struct {
	mu     sync.Mutex // one look at a time
	pgid   int
	runner procInfo // the runner as it was when the watchdog started
	// tag is the command's HERALD_RUN_ID (see runIDVar) and the
	// runner's start: once the runner is dead, what carries the id is
	// the command's too.
	tag   runTag
	known []procInfo
	last  time.Time
	// seen is known as of the last look that finished.
	seen atomic.Pointer[[]procInfo]
}

// watchRunIDVar hands the watchdog the command's HERALD_RUN_ID under
// another name: carrying runIDVar itself, it would be one of the
// command's processes.
const watchRunIDVar = "HERALD_WATCHDOG_RUN_ID"

// strayLookEvery bounds how often the watchdog reads /proc while all is well.
const strayLookEvery = 250 * time.Millisecond

func watchStrays(pgid int, runID, cg string) *strayWatch {
	w := &strayWatch{pgid: pgid}
	w.runner, _ = readProc(os.Getppid())
	w.tag = runTag{id: runID, since: w.runner.start, cg: cg}
	w.look(true)
	return w
}

// look updates the list, at most every strayLookEvery unless now, and
// returns it.
func (w *strayWatch) look(now bool) []procInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !now && time.Since(w.last) < strayLookEvery {
		return w.known
	}
	w.last = time.Now()
	var roots []int
	// A zombie runner is dead: its parent has not reaped it yet.
	if p, ok := readProc(w.runner.pid); ok && p.start == w.runner.start && !p.zombie && w.runner.pid > 1 {
		roots = []int{p.pid}
	}
	w.known = withMembers(strayList(roots, w.pgid, w.known), w.tag.cg, w.pgid)
	if len(roots) == 0 {
		// The runner is dead, and what its command started apart from
		// its group went to init: its cgroup tells it, and, for what
		// moved out of that, only the environment.
		w.known = strayCarriers(w.pgid, w.tag, w.known)
	}
	seen := slices.Clone(w.known)
	w.seen.Store(&seen)
	return w.known
}

// lastSeen is the list as the last look that finished left it.
func (w *strayWatch) lastSeen() []procInfo {
	if p := w.seen.Load(); p != nil {
		return *p
	}
	return nil
}

// lookWithin is look(true), or lastSeen should it not finish within d:
// reading a process's environment waits for its memory map, which a
// process stuck in the kernel (a hung NFS mount) may hold for good, and
// the signals that follow must not wait with it.
func (w *strayWatch) lookWithin(d time.Duration) []procInfo {
	ch := make(chan []procInfo, 1)
	go func() { ch <- slices.Clone(w.look(true)) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case ps := <-ch:
		return ps
	case <-t.C:
		return w.lastSeen()
	}
}

// procList is ps as "pid (name), ...".
func procList(ps []procInfo) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// without is ps less the processes in told.
func without(ps, told []procInfo) []procInfo {
	var out []procInfo
	for _, p := range ps {
		if !p.in(told) {
			out = append(out, p)
		}
	}
	return out
}
