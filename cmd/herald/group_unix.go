//go:build unix && !linux

package main

// groupMembersBesides: without /proc, the processes in a group are not
// named; the log gives the group's id alone.
func groupMembersBesides(int, int) []string { return nil }

// groupAliveBesides: without /proc the watchdog cannot be told from the
// command's processes; see watchdogThroughStop.
func groupAliveBesides(pgid, _ int) bool { return groupAlive(pgid) }

// groupLiveBesides: without /proc a zombie cannot be told apart.
func groupLiveBesides(pgid, _ int) bool { return groupAlive(pgid) }

// watchdogThroughStop: here the watchdog says goodbye before the command
// is stopped, as the stop could not tell it from the command's processes
// and would wait its whole grace every time.
const watchdogThroughStop = false
