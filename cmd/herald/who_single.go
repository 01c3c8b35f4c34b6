package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
)

// herald who on single-node leaders: one node created by the winner
// (Kafka's /controller, HBase's /hbase/master, ...), its creator the
// owner. See elect.ObserveSingle.

// whoLeader is what who says beyond the owner of a single-node leader:
// the identity its system wrote, and its epoch.
type whoLeader struct {
	// Format decoded the owner's data; Fields are its parts.
	Format ident.Format      `json:"format"`
	Fields map[string]string `json:"fields,omitempty"`
	// Fallback says why the data did not decode in the format expected
	// (the owner's id is then its generic form).
	Fallback string `json:"fallback,omitempty"`
	// Epoch is the system's own epoch (Kafka's /controller_epoch).
	Epoch *int64 `json:"epoch,omitempty"`
	// Persistent: the leader node is not ephemeral (no session holds it),
	// as Kafka's /controller during a migration to KRaft.
	Persistent bool `json:"persistent,omitempty"`
	// Note says what else to know about this owner (elect.SingleView.Note).
	Note string `json:"note,omitempty"`
}

// noOwner is what who adds to "no owner" for a single-node leader: the
// last election's epoch, when the system keeps one, or why it is not
// known (Note): left out alone, it read as if the system kept none.
func (l *whoLeader) noOwner() string {
	switch {
	case l.Epoch != nil:
		return " (last epoch " + strconv.FormatInt(*l.Epoch, 10) + ")"
	case l.Note != "":
		return "; " + l.Note
	}
	return ""
}

// line renders l for people, one line.
func (l *whoLeader) line() string {
	var parts []string
	keys := make([]string, 0, len(l.Fields))
	for k := range l.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+l.Fields[k])
	}
	s := string(l.Format)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if l.Epoch != nil {
		s += "; epoch " + strconv.FormatInt(*l.Epoch, 10)
	}
	if l.Persistent {
		s += "; persistent node (no session holds it)"
	}
	if l.Fallback != "" {
		s += "; undecoded: " + l.Fallback
	}
	if l.Note != "" {
		s += "; " + l.Note
	}
	return s
}

// whoSingleZK reads group as a single-node leader when it is one: an
// ephemeral node (never a group: it can have no children), a node where a
// system keeps its leader (ident.ForPath, or sn when given) holding data
// of that system, or nothing yet at such a path. ok is false otherwise:
// group is a queue's parent, read as before.
func (a *app) whoSingleZK(ctx context.Context, s *elect.Session, group string, sn *elect.SingleNode) (whoReport, bool, error) {
	node := elect.SingleNodeFor(group)
	if sn != nil {
		node = *sn
	}
	sv, err := elect.ReadSingle(ctx, s, group, node)
	if err != nil {
		return whoReport{}, false, err
	}
	known := sn != nil || ident.ForPath(group) != ident.Generic
	switch {
	case sv.Owner == nil && known && !sv.ParentExists:
		// Not "no leader": nothing is there to lead (a wrong chroot, a
		// system not installed under this path), and a script would take
		// exit 5 for a leaderless cluster.
		return whoReport{}, false, fmt.Errorf("%s does not exist in ZooKeeper at %s, so %s cannot be there; check the path, and the chroot the system is configured with (Kafka's zookeeper.connect=zk1:2181/kafka puts its controller at /kafka/controller)",
			path.Dir(group), a.zk, group)
	case sv.NotLeaderNode != "" && known && sv.Children == 0:
		// Read as a group, as nothing else it is; but say why a node
		// where a system keeps its leader holds none (a breadcrumb, a
		// copy made by hand), which "no owner" alone hid.
		return whoReport{Notes: []string{group + " is not a leader node: " + sv.NotLeaderNode}}, false, nil
	case sv.NotLeaderNode != "":
		return whoReport{}, false, nil // read as a group, which it is or holds
	case sv.Owner != nil && sv.Owner.Session != 0:
	case sv.Owner != nil && known && sv.Children == 0 && !sv.Identity.Fallback:
	case sv.Owner == nil && known:
	default:
		return whoReport{}, false, nil
	}
	f := node.Format
	if f == "" || f == ident.Auto {
		f = ident.ForPath(group)
	}
	return singleReport(group, sv, f), true, nil
}

// singleReport is who's report of a single-node leader read in format f.
func singleReport(group string, sv elect.SingleView, f ident.Format) whoReport {
	r := whoReport{Group: group, Recipe: sv.Recipe, Source: "zookeeper", Leader: &whoLeader{Format: f}}
	if sv.EpochKnown && sv.Epoch != 0 {
		e := sv.Epoch
		r.Leader.Epoch = &e
	}
	if sv.Owner == nil {
		// Why the last election's epoch is not known, if it is not.
		r.Leader.Note = sv.Note()
		return r
	}
	l := r.Leader
	l.Format, l.Fields, l.Persistent = sv.Identity.Format, sv.Identity.Fields, sv.Owner.Session == 0
	if sv.DecodeErr != nil {
		l.Fallback = sv.DecodeErr.Error()
	}
	l.Note = sv.Note()
	n := whoNode{ID: sv.Owner.ID, Node: sv.Owner.Node, Session: sv.Owner.SessionHex(), Term: sv.Owner.Czxid}
	since := sv.Since
	r.Owner, r.Queue, r.Since = &n, []whoNode{n}, &since
	return r
}

// whoPreset answers for every leader a preset names: which broker is the
// Kafka controller, which master is HBase's, which NameNode is active in
// each nameservice. It reads ZooKeeper only.
func (a *app) whoPreset(ctx context.Context, specs, args []string, sf *sourceFlags, asJSON bool) error {
	if len(args) > 0 {
		return usageErr("give a group PATH or --preset, not both")
	}
	if src, err := sf.which(); err != nil {
		return err
	} else if src != "" {
		return usageErr("--preset reads the leaders' nodes in ZooKeeper: give --zk, not --%s", src)
	}
	_, expanded, err := expandPresets(specs)
	if err != nil {
		return err
	}
	s, err := a.openSession(ctx, false)
	if err != nil {
		return unreachableExit(err)
	}
	defer s.Close()
	targets, err := presetTargets(ctx, s.Conn(), expanded)
	if err != nil {
		return unreachableExit(err)
	}
	var reports []whoReport
	var failed []string
	var readErr error // the first read that failed (not a leader missing)
	for _, t := range targets {
		if t.missing != "" {
			failed = append(failed, fmt.Sprintf("no %s found below %s", t.missing, t.path))
			continue
		}
		var r whoReport
		var ok bool
		var err error // each target's own: one that failed says nothing of the next
		if t.single != nil {
			r, ok, err = a.whoSingleZK(ctx, s, t.path, t.single)
		}
		if err == nil && !ok {
			r, err = a.whoZK(ctx, t.path, nil)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", t.path, err))
			if readErr == nil {
				readErr = fmt.Errorf("%s: %w", t.path, err)
			}
			continue
		}
		reports = append(reports, r)
	}
	if err := a.writeReports(reports, asJSON); err != nil {
		return err
	}
	for _, f := range failed {
		fmt.Fprintln(a.stderr, "herald:", f)
	}
	switch {
	case len(reports) == 0 && readErr != nil:
		// Found but not readable (an ACL that refuses this identity, a
		// server gone): say that, not that nothing is there.
		return unreachableExit(fmt.Errorf("could not read what the preset names: %w", readErr))
	case len(reports) == 0:
		return &exitError{code: 1, err: errors.New("nothing the preset names was found in ZooKeeper; check --zk and the preset's root (--preset NAME=ROOT)")}
	}
	return nil
}

// writeReports writes who's reports of several groups, as JSON or as text
// with a blank line between groups.
func (a *app) writeReports(reports []whoReport, asJSON bool) error {
	if asJSON {
		if reports == nil {
			reports = []whoReport{}
		}
		return writeJSON(a.stdout, reports)
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		if err := writeWho(a.stdout, r); err != nil {
			return err
		}
	}
	return nil
}
