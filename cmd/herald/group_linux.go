package main

import "sort"

// groupMembersBesides names the processes in process group pgid but
// except, "pid (name)", as /proc shows them, so that the log can say what
// herald stopped.
func groupMembersBesides(pgid, except int) []string {
	var out []string
	for _, p := range readProcs() {
		if p.pgid == pgid && p.pid != except {
			out = append(out, p.String())
		}
	}
	sort.Strings(out)
	return out
}

// groupAliveBesides reports whether process group pgid has a process
// other than except (a zombie not yet reaped counts, as for groupAlive).
// A process that forks and exits while /proc is read can hide its child
// from one reading, so the group is found empty only by two in a row.
func groupAliveBesides(pgid, except int) bool {
	if alive := groupAlive(pgid); except <= 0 || !alive {
		return alive
	}
	for range 2 {
		all := readProcs()
		if all == nil {
			return true // no /proc: the watchdog keeps the group alive
		}
		for _, p := range all {
			if p.pgid == pgid && p.pid != except {
				return true
			}
		}
	}
	return false
}

// groupLiveBesides is groupAliveBesides with zombies left out: a process
// that has exited holds nothing of the command's (its files and locks
// went at its exit), though its parent, or a tracer, has not collected
// its status. The end of a stop waits on this: a zombie that a stopped
// debugger kept uncollected held the handover for good (found by an
// adversarial test).
func groupLiveBesides(pgid, except int) bool {
	if !groupAlive(pgid) {
		return false
	}
	for range 2 {
		all := readProcs()
		if all == nil {
			return true // no /proc: as groupAliveBesides
		}
		for _, p := range all {
			if p.pgid == pgid && p.pid != except && !p.zombie {
				return true
			}
		}
	}
	return false
}

// watchdogThroughStop: the watchdog watches on while the runner stops the
// command, so that a runner frozen between its SIGTERM and its SIGKILL
// still has a command that ignores SIGTERM killed before the next owner
// can start.
const watchdogThroughStop = true
