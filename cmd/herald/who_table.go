package main

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkherald/herald/elect"
)

// writeWho renders a whoReport for people: a line about the group, then
// one row per node in line, owner first.
func writeWho(w io.Writer, r whoReport) error {
	recipe := string(r.Recipe)
	if recipe == "" {
		recipe = "unknown recipe"
	}
	if r.Owner == nil && r.Leader != nil { // a single-node leader (who_single.go)
		_, err := fmt.Fprintf(w, "%s (%s, from %s): no owner: no leader node%s\n", r.Group, recipe, r.Source, r.Leader.noOwner())
		return err
	}
	if r.Owner == nil {
		waiting, suspect := 0, ""
		for _, n := range r.Queue {
			if n.Suspect == "" {
				waiting++
			}
		}
		if k := len(r.Queue) - waiting; k > 0 {
			suspect = fmt.Sprintf(", %d suspect", k)
		}
		_, err := fmt.Fprintf(w, "%s (%s, from %s): no owner%s, %d waiting%s\n", r.Group, recipe, r.Source, r.ownerlessFor(), waiting, suspect)
		if err == nil && len(r.Below) > 0 {
			_, err = fmt.Fprintln(w, belowHint(r.Group, r.Below))
		}
		if err != nil || len(r.Queue) == 0 {
			return err
		}
		return writeQueue(w, r, r.Queue) // who waits, and behind what
	}
	state := ""
	if r.Ready {
		state = ", ready"
		if r.ReadyInfo != "" {
			state += " (" + r.ReadyInfo + ")"
		}
	}
	if r.Since != nil && !r.Since.IsZero() {
		state += ", since " + r.Since.UTC().Format(time.RFC3339)
		if r.SinceAtMost {
			state += " or earlier (first seen in a snapshot, or seen late)"
		}
	}
	state += changesLastHour(r)
	fmt.Fprintf(w, "%s (%s, from %s): owner %s%s\n", r.Group, recipe, r.Source, r.Owner.ID, state)
	if r.Leader != nil {
		fmt.Fprintln(w, "  "+r.Leader.line())
	}
	rows := r.Queue
	if len(rows) == 0 {
		rows = []whoNode{*r.Owner}
	}
	if err := writeQueue(w, r, rows); err != nil {
		return err
	}
	if len(r.Queue) == 0 && r.Source != "zookeeper" {
		_, err := fmt.Fprintf(w, "(the queue of waiting candidates is only known to ZooKeeper: herald who --zk HOSTS %s)\n", r.Group)
		return err
	}
	return nil
}

// writeQueue is the table of rows, one per node in line, with each node's
// role.
func writeQueue(w io.Writer, r whoReport, rows []whoNode) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tID\tNODE\tSESSION\tTERM\tROLE")
	for i, n := range rows {
		role := "waiting"
		switch {
		case n.Suspect != "":
			role = "suspect: " + n.Suspect
		case r.Owner != nil && n.Node == r.Owner.Node:
			role = "owner"
		case n.MayOwn:
			role = "waiting, but may believe it owns (see below)"
		}
		term := "-"
		if n.Term != 0 {
			term = strconv.FormatInt(n.Term, 10)
		}
		session := n.Session
		if session == "" {
			session = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, n.ID, n.Node, session, term, role)
	}
	return tw.Flush()
}

// ownerlessFor says since when the group has had no owner, when known.
func (r whoReport) ownerlessFor() string {
	if r.OwnerlessSince == nil {
		return ""
	}
	return fmt.Sprintf(" since %s (%s ago)", r.OwnerlessSince.UTC().Format(time.RFC3339), time.Since(*r.OwnerlessSince).Round(time.Second))
}

// notHeraldsOwn refuses a path that names one of herald's own nodes in a
// group (its office, its checkpoint), which hold no queue: it names the
// group to ask about instead.
func notHeraldsOwn(p string) error {
	switch path.Base(p) {
	case elect.OfficeNode:
		return usageErr("%s is herald's office of the group %s (its session nodes and release records), not a group: herald who %s", p, path.Dir(p), path.Dir(p))
	case elect.CheckpointNode:
		return usageErr("%s is the checkpoint of the group %s (herald checkpoint get reads it), not a group: herald who %s", p, path.Dir(p), path.Dir(p))
	}
	return nil
}

// sessionRoot reports whether names, not none, are all herald's session
// nodes (session-<id>-live) and run notes (run-<id>-<hash>-<n>-cmd): a
// session root's children. It counts each kind.
func sessionRoot(names []string) (ok bool, sessions, runs int) {
	for _, n := range names {
		switch {
		case elect.IsSessionNodeName(n):
			sessions++
		case elect.IsRunNoteName(n):
			runs++
		default:
			return false, 0, 0
		}
	}
	return len(names) > 0, sessions, runs
}

// belowHint names what to read instead of a group with no queue nodes but
// children. A Hadoop HA nameservice with no active node holds only the
// breadcrumb, the last active's record kept for fencing, which is no
// leader: the hint names the lock, where the next active will be.
func belowHint(group string, below []string) string {
	if slices.Contains(below, "ActiveBreadCrumb") || slices.Contains(below, "ActiveStandbyElectorLock") {
		return fmt.Sprintf("(a Hadoop HA nameservice: its active holds %s, and ActiveBreadCrumb only records the last active, for fencing; "+
			"herald who %s, or herald who --preset hadoop-ha for every nameservice)", path.Join(group, "ActiveStandbyElectorLock"), path.Join(group, "ActiveStandbyElectorLock"))
	}
	if ok, sessions, runs := sessionRoot(below); ok {
		return fmt.Sprintf("(herald's session root: session nodes of herald run or lock copies, %d now, each telling the next copy when its owner's session ended, and notes of running commands, %d now, each telling a copy that joins a group deleted whole to wait for it; no group: ask herald who about the group itself)", sessions, runs)
	}
	return fmt.Sprintf("(no queue nodes here; below it: %s — e.g. herald who %s)", strings.Join(below, ", "), path.Join(group, below[0]))
}
