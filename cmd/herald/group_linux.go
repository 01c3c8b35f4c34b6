package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// groupMembers names the processes in process group pgid, "pid (name)",
// as /proc shows them, so that the log can say what herald stopped.
func groupMembers(pgid int) []string {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and
		// parentheses, so the fields start after the last ')'.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			continue
		}
		f := bytes.Fields(b[end+1:])
		if len(f) < 3 {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid {
			out = append(out, fmt.Sprintf("%d (%s)", pid, b[open+1:end]))
		}
	}
	return out
}
