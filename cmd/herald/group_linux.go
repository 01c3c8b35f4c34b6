package main

import "sort"

// groupMembers names the processes in process group pgid, "pid (name)",
// as /proc shows them, so that the log can say what herald stopped.
func groupMembers(pgid int) []string {
	var out []string
	for _, p := range readProcs() {
		if p.pgid == pgid {
			out = append(out, p.String())
		}
	}
	sort.Strings(out)
	return out
}
