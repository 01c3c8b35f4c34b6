package main

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Strays: processes the command started that left its process group, a
// daemon that forked and called setsid above all. Signals to the group miss
// them, and once their parent exits they are nobody's child of herald's: a
// runner that released ownership when the command's main process exited
// would leave the daemon running beside the next owner's.
//
// So the runner makes itself a child subreaper (PR_SET_CHILD_SUBREAPER):
// what the command orphans becomes the runner's child, not init's, and
// stays in the runner's tree, where /proc shows it. Whatever is stopped
// (the group's SIGTERM and SIGKILL), each stray gets too, and the runner
// waits for the strays as for the group before it releases. The watchdog,
// which must act when the runner is frozen or dead, keeps a list of the
// runner's strays as it last saw them, as the runner's death hands them
// to init.

// procInfo is a process as /proc shows it. Its start time (clock ticks after
// boot) tells it from a later process given the same pid.
type procInfo struct {
	pid, ppid, pgid int
	start           uint64
	zombie          bool
	stopped         bool // state T or t: SIGSTOP, a debugger
	name            string
}

func (p procInfo) String() string { return fmt.Sprintf("%d (%s)", p.pid, p.name) }

// readProc reads /proc/pid/stat; ok is false when the process is gone.
func readProc(pid int) (p procInfo, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...; comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procInfo{}, false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, start: start, zombie: f[0][0] == 'Z' || f[0][0] == 'X',
		stopped: f[0][0] == 'T' || f[0][0] == 't', name: string(b[open+1 : end])}, true
}

// readProcs is every process /proc shows, by pid.
func readProcs() map[int]procInfo {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make(map[int]procInfo, len(dir))
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	return out
}

// strayList is the live processes descended from roots (the roots
// themselves excluded) or among extra, that are not in process group
// pgid: what the command started outside its group. extra are strays seen
// before, which may have left the tree since (their subreaper died); those
// that are no longer the process they were are dropped.
func strayList(roots []int, pgid int, extra []procInfo) []procInfo {
	return straysIn(readProcs(), roots, pgid, extra)
}

// reapAndList is reapStrays and strayList for this process's strays, from
// one reading of /proc.
func reapAndList(pgid int) []procInfo {
	all := readProcs()
	reapIn(all, pgid)
	return straysIn(all, []int{os.Getpid()}, pgid, nil)
}

// straysIn is strayList over the processes all.
func straysIn(all map[int]procInfo, roots []int, pgid int, extra []procInfo) []procInfo {
	kids := make(map[int][]int, len(all))
	for _, p := range all {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	seen := make(map[int]bool)
	var out []procInfo
	queue := append([]int(nil), roots...)
	for _, x := range extra {
		if p, ok := all[x.pid]; ok && p.start == x.start {
			queue = append(queue, x.pid)
			if !p.zombie && p.pgid != pgid {
				seen[x.pid] = true
				out = append(out, p)
			}
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			if seen[k] {
				continue
			}
			seen[k] = true
			queue = append(queue, k)
			if p := all[k]; !p.zombie && p.pgid != pgid {
				out = append(out, p)
			}
		}
	}
	return out
}

// stopStrays sends each of ps that is still the process it was SIGTERM and
// SIGCONT (a stopped process then hears it), or SIGKILL when kill.
func stopStrays(ps []procInfo, kill bool) {
	for _, p := range ps {
		if now, ok := readProc(p.pid); ok && now.start == p.start && !now.zombie {
			if kill {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
				continue
			}
			_ = syscall.Kill(p.pid, syscall.SIGTERM)
			_ = syscall.Kill(p.pid, syscall.SIGCONT)
		}
	}
}

// becomeSubreaper makes this process the one the command's orphans are
// handed to (see above).
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// reapStrays collects the exit status of this process's children that
// have exited, but for the command itself (whose pid is pgid; it may have
// left its group) and the watchdog (see ownWaits): those are waited for by
// their own exec.Cmd. Orphans handed to a subreaper are its to reap, or
// they stay zombies while it runs, and a zombie left in the command's
// group keeps the group alive to kill(-pgid, 0): a group whose last
// process died at SIGTERM would be waited on until its SIGKILL.
func reapStrays(pgid int) { reapIn(readProcs(), pgid) }

// reapIn is reapStrays over the processes all.
func reapIn(all map[int]procInfo, pgid int) {
	self := os.Getpid()
	for _, p := range all {
		if p.ppid != self || !p.zombie || p.pid == pgid {
			continue
		}
		ownWaits.Lock()
		if !ownWaits.pids[p.pid] {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
		ownWaits.Unlock()
	}
}

// reapStraysFor reaps, as they exit, the orphans handed to this process
// that are not in process group pgid, until the returned stop is called;
// stop returns once no reaping is under way, so that a later command's
// exit status, in a group of its own, is left to its exec.Cmd.
func reapStraysFor(pgid int) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer signal.Stop(ch)
		for {
			select {
			case <-quit:
				return
			case <-ch:
			}
			reapStrays(pgid)
			select { // SIGCHLDs meanwhile come as one
			case <-quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// commandGone reports whether nothing of a command is alive any more: no
// process of its group pgid but except (the caller itself, when it is in
// the group), and none of strays, is there unless as a zombie (dead, only
// not reaped yet).
func commandGone(pgid, except int, strays []procInfo, tag runTag) bool {
	left, ok := commandLeft(pgid, except, strays, tag)
	return ok && len(left) == 0
}

// commandLeft is what is left of a command (see commandGone): the live
// processes of its group pgid but except, of strays, and those that carry
// its tag. ok is false without /proc.
//
// With a cgroup (tag.cg), the cgroup first: it holds all of the command
// that did not move out of it, wherever it went, and nothing else (not
// the watchdog). Once it is empty the rest is read too: a process can be
// moved out (pam_systemd's session scope for su -l, systemd-run --scope,
// or the process itself, with herald's rights), and one that was ran
// beside the next owner's command when the empty cgroup alone decided
// (found by review).
func commandLeft(pgid, except int, strays []procInfo, tag runTag) (left []procInfo, ok bool) {
	if tag.cg != "" {
		if left, ok, known := cgroupLeft(tag.cg); known && (!ok || len(left) > 0) {
			return left, ok
		}
	}
	all := readProcs()
	if all == nil {
		return nil, false // no /proc: nothing can be confirmed
	}
	for _, p := range all {
		if p.pgid == pgid && p.pid != except && !p.zombie {
			left = append(left, p)
		}
	}
	for _, s := range strays {
		if p, ok := all[s.pid]; ok && p.start == s.start && !p.zombie && p.pgid != pgid {
			left = append(left, p)
		}
	}
	if len(left) > 0 {
		return left, true // the environments need not be read
	}
	return carriersIn(all, pgid, except, tag), true
}

// killLeft kills left, what commandLeft found of a command whose runner
// died and whose watchdog already sent its SIGKILL: what came after it (a
// process that left the group, a helper started meanwhile). Each is
// killed by pid, not the group by its id, which another group may have
// taken since.
func killLeft(left []procInfo, pgid int, tag runTag) {
	if tag.cg != "" {
		_ = cgroupKill(tag.cg) // all of it at once
	}
	for _, p := range left {
		if p.pgid != pgid || p.start >= tag.since {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// carriersIn is the live processes of all, outside process group pgid and
// other than except and herald itself, whose environment holds the
// command's HERALD_RUN_ID (runIDVar): the command's processes, wherever
// they went. None when the tag has no id. Only processes started since
// the tag's runner are read: none before it can be the command's, and a
// host's many older processes then cost nothing.
func carriersIn(all map[int]procInfo, pgid, except int, tag runTag) []procInfo {
	if tag.id == "" {
		return nil
	}
	want := []byte("\x00" + runIDVar + "=" + tag.id + "\x00")
	self := os.Getpid()
	var out []procInfo
	for _, p := range all {
		if p.zombie || p.pgid == pgid || p.pid == except || p.pid == self || p.pid <= 1 || p.start < tag.since {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
		if err == nil && bytes.Contains(append([]byte{0}, env...), want) {
			out = append(out, p)
		}
	}
	return out
}

// strayCarriers adds to known the processes outside process group pgid
// that carry the command's HERALD_RUN_ID (see carriersIn).
func strayCarriers(pgid int, tag runTag, known []procInfo) []procInfo {
	for _, p := range carriersIn(readProcs(), pgid, 0, tag) {
		if !p.in(known) {
			known = append(known, p)
		}
	}
	return known
}
