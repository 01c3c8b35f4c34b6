package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkherald/herald/internal/spawn"
)

// child is the command run, lock and the demo run while they hold
// ownership. It runs in its own process group so that stopping it stops
// everything it started.
type child struct {
	cmd  *exec.Cmd
	tty  *terminal     // the terminal the child's group was given, or nil
	done chan struct{} // closed once the child has exited and been reaped
	code int           // valid after done
	// killed: stopping it took SIGKILL (set by the goroutine stopping it).
	killed bool
	// stopReaping ends the reaping of the strays handed to herald (see
	// strays_linux.go); called once the child is done with.
	stopReaping func()
	// gate starts the command held by the gate (see gateArg) when
	// written to; nil when the command started at once.
	gate *os.File
	// keeper is the watchdog's pid, 0 when none watches: it is in the
	// command's process group (see watchdog_unix.go) and watches on while
	// the command is stopped, so the stop does not count it as the
	// command's.
	keeper int
	// runID is the command's HERALD_RUN_ID (see runIDVar).
	runID string
	// cg is the command's cgroup, "" when it has none (see
	// cgroup_linux.go); why tells why not.
	cg, why string
	// stuck, when set, is told what is left of the command when a
	// SIGKILL did not end it (see killAll).
	stuck func(left []string)
}

// runIDVar names, in the command's environment, a value drawn for each
// command that herald run or lock starts. Whatever the command starts
// inherits it unless it clears its environment, so it tells the command's
// processes once nothing else can: after the runner's death (kill -9) its
// strays go to init, out of any tree herald can walk, and a process that
// then leaves the process group (setsid, a helper started at the
// watchdog's SIGTERM) is found by it alone (see commandGone).
const runIDVar = "HERALD_RUN_ID"

// cgroupVar, set to "off" (or 0, false, no) in herald's environment,
// keeps herald from making cgroups; "on" (1, true, yes) or unset makes
// them where it can.
const cgroupVar = "HERALD_CGROUP"

// cgroupSetting reads cgroupVar: whether it says to make no cgroups, or an
// error naming a value that is neither on nor off. A typo must not pass
// for either: "of" taken for on would keep a cgroup the user asked away,
// and a guess at off would drop the tracking a handoff relies on.
func cgroupSetting() (off bool, err error) {
	v := os.Getenv(cgroupVar)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "on", "1", "true", "yes":
		return false, nil
	case "off", "0", "false", "no":
		return true, nil
	}
	return false, usageErr("%s=%q in herald's environment: give off (make no cgroup for the command; herald then tracks it by process group and %s alone) or on (the default: a cgroup of its own where cgroup v2 is writable), or unset it", cgroupVar, v, runIDVar)
}

// watchCgroupVar hands the watchdog the command's cgroup.
const watchCgroupVar = "HERALD_WATCHDOG_CGROUP"

// runTag tells a command's processes once its runner is dead: its
// HERALD_RUN_ID, and the runner's start (clock ticks after boot, 0 when
// not known), before which none of them started.
type runTag struct {
	id    string
	since uint64
	// cg is the command's cgroup (see cgroup_linux.go), "" for none:
	// what is in it is the command's, read before anything else.
	cg string
}

// newRunID draws a command's HERALD_RUN_ID.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// subreaper makes herald, once, the process the command's orphans go to.
var subreaper sync.Once

// startChild starts args with env added to herald's environment, held
// until begin (see gateArg): start the watchdog in between. A command
// that cannot start gets the shell's exit codes: 127 not found, 126 not
// executable.
func startChild(args, env []string, stdin io.Reader, stdout, stderr io.Writer) (*child, error) {
	if len(args) == 0 {
		return nil, usageErr("no command given: put it after --, e.g. herald run --election /jobs/x -- ./job.sh")
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return nil, cannotStart(args[0], path, err)
	}
	runID := newRunID()
	cg, dir, why := commandCgroup(runID)
	tty := foregroundTerminal(stdin)
	subreaper.Do(func() { _ = becomeSubreaper() }) // Linux ≥ 3.4; else strays are found while their parent lives
	cmd, gate, err := startIn(path, args, env, runID, dir, tty, stdin, stdout, stderr)
	if err != nil && dir != nil {
		// Not for want of the command (the gate starts herald's own
		// binary): try without the cgroup.
		why = fmt.Errorf("the command could not start in cgroup %s, so it runs without one: %v", cg, cgroupStartErr(err))
		dir.Close()
		removeCgroup(cg)
		cg, dir = "", nil
		cmd, gate, err = startIn(path, args, env, runID, nil, tty, stdin, stdout, stderr)
	}
	if dir != nil {
		dir.Close()
	}
	if err != nil {
		return nil, cannotStart(args[0], path, err)
	}
	c := &child{cmd: cmd, tty: tty, done: make(chan struct{}), gate: gate, runID: runID, cg: cg}
	if why != nil {
		c.why = why.Error()
	}
	stop := reapStraysFor(cmd.Process.Pid)
	c.stopReaping = func() {
		stop()
		removeCgroup(cg) // empty by now, or left as it is
	}
	go func() {
		_ = cmd.Wait()
		c.code = exitCode(cmd.ProcessState)
		close(c.done)
	}()
	return c, nil
}

// startIn starts the command (see startChild), in the cgroup dir when
// not nil, held by its gate, which it returns.
func startIn(path string, args, env []string, runID string, dir *os.File, tty *terminal, stdin io.Reader, stdout, stderr io.Writer) (*exec.Cmd, *os.File, error) {
	cmd, held, gate := gated(path, args)
	cmd.Env = append(append(os.Environ(), env...), runIDVar+"="+runID)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = childProcAttr()
	if dir != nil {
		bornIn(cmd.SysProcAttr, dir)
	}
	cmd.WaitDelay = time.Second // do not hang on pipes a grandchild keeps open
	started := tty.giveTo(cmd.SysProcAttr)
	err := spawn.Start(cmd) // from a thread that never ends: see package spawn
	started()
	if held != nil {
		held.Close()
	}
	if err != nil && gate != nil {
		gate.Close()
	}
	return cmd, gate, err
}

// cgroupForLog is the command's cgroup for the log, or why it has none.
func (c *child) cgroupForLog() string {
	if c.cg != "" {
		return c.cg
	}
	return "none: " + c.why
}

// in reports whether list holds p: the same pid, started at the same time.
func (p procInfo) in(list []procInfo) bool {
	return slices.ContainsFunc(list, func(k procInfo) bool { return k.pid == p.pid && k.start == p.start })
}

// begin lets a held command start.
func (c *child) begin() {
	if c.gate != nil {
		_, _ = c.gate.Write([]byte{1})
		c.gate.Close()
		c.gate = nil
	}
}

// abandon lets the held command go without starting it: the gate reads
// end of file and exits (see runGate).
func (c *child) abandon() {
	if c.gate != nil {
		c.gate.Close()
		c.gate = nil
	}
}

// checkCommand fails early, before any campaign, when the command cannot
// be found, or the interpreter its #! line names, or HERALD_CGROUP says
// neither on nor off: a candidate that would win and then fail is worse
// than none.
func checkCommand(args []string) error {
	if len(args) == 0 {
		return usageErr("no command given: put it after --, e.g. herald run --election /jobs/x -- ./job.sh")
	}
	if _, err := cgroupSetting(); err != nil {
		return err
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return cannotStart(args[0], path, err)
	}
	if missingInterpreter(path) != "" { // the exec would fail with ENOENT
		return cannotStart(args[0], path, fs.ErrNotExist)
	}
	if noProgram(path) { // it would fail with ENOEXEC once elected
		return cannotStart(args[0], path, syscall.ENOEXEC)
	}
	return nil
}

// cannotStart is the error of the command name (found at path) that could
// not start: exit 127 when it, or the interpreter its #! line names, does
// not exist, else 126, as a shell says.
func cannotStart(name, path string, err error) error {
	code := exitCannotExec
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code = exitNotFound
		if interp := missingInterpreter(path); interp != "" {
			err = fmt.Errorf("the interpreter its #! line names, %q, does not exist%s", interp, crHint(interp))
		}
	}
	switch {
	case errors.Is(err, syscall.ENOEXEC):
		err = fmt.Errorf("%w: it has no #! line, and is no program the system runs (a shell runs such a script with sh); begin it with a line such as #!/bin/sh, or give the command as: sh %s", err, name)
	case errors.Is(err, fs.ErrPermission):
		err = fmt.Errorf("%w (not executable? chmod +x %s, or give its interpreter first, e.g. sh %s)", err, name, name)
	}
	return &exitError{code: code, err: fmt.Errorf("cannot start %q: %w", name, err)}
}

// crHint says why an interpreter ending in \r is missing.
func crHint(interp string) string {
	if strings.HasSuffix(interp, "\r") {
		return " (the script has DOS line endings: the \\r is read as part of the name)"
	}
	return ""
}

// exited reports whether the child has exited (and been reaped).
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// takeTerminalBack gives herald the terminal back once the child's group
// is done with it (see terminal).
func (c *child) takeTerminalBack() { c.tty.takeBack(c.Pid()) }

// groupAlive reports whether the command's process group has a process
// left besides the watchdog.
func (c *child) groupAlive() bool { return groupAliveBesides(c.Pid(), c.keeper) }

// Pid is the child's process id.
func (c *child) Pid() int { return c.cmd.Process.Pid }

// stopPlan says when a process group told to stop (SIGTERM) is killed
// (SIGKILL): once grace has passed, or, should doubt close first (the
// ownership the command ran under is lost or in doubt, and the session may
// expire soon), once safe has passed since, whichever comes sooner.
type stopPlan struct {
	grace time.Duration
	doubt <-chan struct{}
	safe  time.Duration
	// handedOver, where set, is asked once doubt closes: true means the
	// next owner waits for nothing of ours, and nothing of safe is given.
	handedOver func() bool
	// now, closed, kills at once: a second signal to herald.
	now <-chan struct{}
}

// killBy is when the plan kills a group told to stop at start, as it
// stands while doubt is open (doubted false) or closed (true).
func (p stopPlan) killBy(start time.Time, doubted bool) time.Time {
	switch {
	case doubted && p.handedOver != nil && p.handedOver():
		return start
	case doubted:
		return start.Add(min(p.grace, p.safe))
	}
	return start.Add(p.grace)
}

// groupPoll is how often a group being stopped is looked at, and
// groupKillWait how long, after its SIGKILL, herald waits for it to be
// empty before it says that something of it is stuck (see killAll).
const (
	groupPoll     = 20 * time.Millisecond
	groupKillWait = 2 * time.Second
)

// stop asks the child's process group and its strays to end (SIGTERM),
// and kills them (SIGKILL) when p says. It returns the child's exit code
// once the child has exited and nothing is left in its group or among its
// strays: whatever the child started goes too.
func (c *child) stop(p stopPlan) int {
	c.endGroup(p)
	return c.code
}

// strays are the processes the command started that left its process
// group and still run (see strays_linux.go).
// With a cgroup, its members outside the group are strays too, wherever
// they went.
func (c *child) strays() []procInfo { return withMembers(reapAndList(c.Pid()), c.cg, c.Pid()) }

// inCgroup reports whether a process of the command's cgroup is alive;
// false without a cgroup, or when it cannot be read (the process group
// and the strays still tell).
func (c *child) inCgroup() bool {
	if c.cg == "" {
		return false
	}
	populated, err := cgroupPopulated(c.cg)
	return err == nil && populated
}

// sweep stops, as stop does, what the child, which has exited, left
// running, in its process group or apart from it, and returns what that
// was ("pid (name)" where the system tells names; nil when nothing was
// left), which it hands to before first, to be said while it waits. It
// returns once all that is gone or its SIGKILL came and went: run and
// lock release ownership after it, so that nothing the command started
// runs beside the next owner.
func (c *child) sweep(p stopPlan, before func(left []string)) []string {
	alive := c.groupAlive() // before the strays, as in endGroup
	if !alive && len(c.strays()) == 0 && !c.inCgroup() {
		return nil
	}
	left := c.leftNames()
	before(left)
	c.endGroup(p)
	return left
}

// endGroup is stop and sweep. SIGCONT follows the SIGTERM so that a
// stopped process (Ctrl-Z, SIGTTIN) hears it too. A stray that appears
// while the group is being stopped gets its SIGTERM when it is seen.
func (c *child) endGroup(p stopPlan) {
	pg := c.cmd.Process
	var strays []procInfo
	gone := func() bool {
		// The group before the strays: a process that leaves the group
		// (setsid) while we look is a stray by the second look, for we
		// are its subreaper. Read the other way round, one that left
		// after the strays were read, its parent gone before the group
		// was, was in neither look, and ran on beside the next owner's
		// command (found by an adversarial test).
		ended := c.exited() && !c.groupAlive()
		strays = c.strays()
		// The cgroup last: it holds all of the command that did not
		// move out of it, even what changes its pid faster than /proc
		// is read (the group and the strays tell what moved out).
		return ended && len(strays) == 0 && !c.inCgroup()
	}
	if gone() {
		return
	}
	start := time.Now()
	_ = terminateGroup(pg)
	_ = continueGroup(pg)
	told := make(map[procInfo]bool)
	tell := func() {
		for _, s := range strays {
			if !told[s] {
				told[s] = true
				stopStrays([]procInfo{s}, false)
			}
		}
	}
	tell()
	doubt, doubted := p.doubt, false
	select {
	case <-doubt:
		doubt, doubted = nil, true
	default:
	}
	kill := time.NewTimer(time.Until(p.killBy(start, doubted)))
	defer kill.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for !gone() {
		tell()
		select {
		case <-doubt:
			doubt = nil
			kill.Reset(time.Until(p.killBy(start, true)))
		case <-kill.C:
			c.killAll(pg)
			return
		case <-p.now:
			c.killAll(pg)
			return
		case <-tick.C:
		}
	}
}

// killAll kills the child's group and its strays, and kills again every
// groupPoll, until nothing of the command is left: run and lock hand over
// only then. A process that the SIGKILL does not end is stuck in the
// kernel (I/O on a hung mount, a frozen cgroup), and still holds what the
// command held (its locks, its files, the write it was making): herald
// waits for it, however long, and calls stuck once groupKillWait has
// passed. It used to wait 2 s and hand over beside it (found by an
// adversarial test), and to wait, saying nothing, on a stuck first
// process.
func (c *child) killAll(pg *os.Process) {
	c.killed = true
	start, said, poll := time.Now(), false, groupPoll
	for {
		if c.cg != "" {
			_ = cgroupKill(c.cg) // all of it at once, a process that forks meanwhile too
		}
		stopStrays(c.strays(), true)
		if !c.exited() || c.groupAlive() {
			_ = killGroup(pg) // what the child started while it died too
		}
		alive := groupLiveBesides(c.Pid(), c.keeper) // before the strays, as in endGroup; zombies hold nothing
		strays := c.strays()
		if c.exited() && !alive && len(strays) == 0 && !c.inCgroup() {
			return
		}
		if !said && time.Since(start) > groupKillWait {
			said, poll = true, 250*time.Millisecond
			if c.stuck != nil {
				c.stuck(c.leftNames())
			}
		}
		time.Sleep(poll)
	}
}

// leftNames names what is left of the command: the processes of its
// group but the watchdog, and its strays, as "pid (name)" where the
// system tells names.
func (c *child) leftNames() []string {
	left := groupMembersBesides(c.Pid(), c.keeper)
	if len(left) == 0 && (!c.exited() || c.groupAlive()) {
		left = []string{fmt.Sprintf("process group %d", c.Pid())}
	}
	for _, s := range c.strays() {
		left = append(left, s.String())
	}
	if len(left) == 0 && c.inCgroup() {
		left = []string{"cgroup " + c.cg}
	}
	return left
}
