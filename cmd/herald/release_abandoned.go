package main

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
)

func init() { register(newReleaseAbandonedCmd) }

// releaseArg is the hidden command a watchdog starts when its runner died
// while it owned (see watchdog_unix.go).
const releaseArg = "release-abandoned"

// abandoned is what the releaser needs: the dead runner's node and who
// it was, and how to tell that its command is gone.
type abandoned struct {
	node, id, recipe string
	// note is the dead runner's run note (elect.Handle.RunNote), or "".
	note   string
	term   int64
	pgid   int
	strays string
	tag    runTag
	within time.Duration
}

// newReleaseAbandonedCmd is run by the watchdog of a runner (herald run or
// lock) that died while it owned, once it has stopped the command: it
// waits until the command's process group and what it started apart from
// it are gone, then deletes the dead runner's node with a release on
// record (elect.ReleaseAbandoned), so that the next owner starts at once
// rather than after the dead session expired and its bound. Hidden: only
// the watchdog runs it.
func newReleaseAbandonedCmd(a *app) *cobra.Command {
	var o abandoned
	cmd := &cobra.Command{
		Use:    releaseArg,
		Short:  "Release the node of a runner that died, once its command is gone (started by the watchdog)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.releaseAbandoned(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.node, "node", "", "the dead runner's queue node")
	f.StringVar(&o.id, "id", "", "its id")
	f.StringVar(&o.recipe, "recipe", "", "its group's recipe")
	f.StringVar(&o.note, "note", "", "its run note")
	f.Int64Var(&o.term, "term", 0, "its term")
	f.IntVar(&o.pgid, "pgid", 0, "its command's process group")
	f.StringVar(&o.strays, "strays", "", "what the command started apart from its group, as pid:start,...")
	f.StringVar(&o.tag.id, "run-id", "", "its command's HERALD_RUN_ID")
	f.Uint64Var(&o.tag.since, "since", 0, "when the runner started, in clock ticks after boot")
	f.StringVar(&o.tag.cg, "cgroup", "", "its command's cgroup, if it had one")
	f.DurationVar(&o.within, "within", 10*time.Second, "how long to wait for the command to be gone")
	return cmd
}

func (a *app) releaseAbandoned(ctx context.Context, o abandoned) error {
	strays, err := parseStrays(o.strays)
	if o.tag.cg != "" && err == nil {
		err = validCgroup(o.tag.cg)
	}
	if err != nil || o.node == "" || o.pgid <= 1 {
		return usageErr("%s: internal use only (started by the watchdog of herald run and herald lock)", releaseArg)
	}
	for end := time.Now().Add(o.within); ; {
		left, ok := commandLeft(o.pgid, 0, strays, o.tag)
		if ok && len(left) == 0 {
			break
		}
		// The watchdog killed the command and what it saw of it: what
		// is left came after, and is killed here, as it would have been.
		killLeft(left, o.pgid, o.tag)
		if time.Now().After(end) {
			return fmt.Errorf("herald watchdog: the dead runner's command (process group %d) was not gone within %v; its node %s is left to its session's expiry", o.pgid, o.within, o.node)
		}
		time.Sleep(20 * time.Millisecond)
	}
	removeCgroup(o.tag.cg)
	s, err := a.openSession(ctx, false)
	if err != nil {
		return fmt.Errorf("herald watchdog: could not release %s, the node of a runner that died (it goes when its session expires): %w", o.node, err)
	}
	defer s.Close()
	rctx, cancel := context.WithTimeout(ctx, s.Timeout())
	defer cancel()
	// Vouches: the dead runner started its command, which the watchdog
	// watched, only once every owner before it had stopped.
	rec := elect.Release{Node: path.Base(o.node), ID: o.id, Term: o.term, Reason: elect.ReasonRunnerDied, Time: time.Now().UTC(), Vouches: true}
	deleted, err := elect.ReleaseAbandoned(rctx, s, o.node, rec, elect.Recipe(o.recipe))
	a.dropRunNote(ctx, s, o.note)
	switch {
	case err != nil:
		return fmt.Errorf("herald watchdog: could not release %s, the node of a runner that died (it goes when its session expires): %w", o.node, err)
	case deleted:
		a.log.Warn("herald watchdog: the runner died while it owned; its command is stopped, and its node is released for the next owner", "node", o.node, "id", o.id)
	}
	return nil
}

// dropRunNote deletes the dead runner's run note, if it had one: its
// command is gone, whether or not its node could be released, and a copy
// joining its group after a deleteall need not wait for the dead
// session's expiry.
func (a *app) dropRunNote(ctx context.Context, s *elect.Session, note string) {
	if note == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout())
	defer cancel()
	if err := elect.DropRunNote(ctx, s, note); err != nil {
		a.log.Warn("herald watchdog: could not delete the run note of a runner that died (it goes when its session expires; until then a copy joining its group after a deleteall waits)", "note", note, "err", err)
	}
}

// stray list: pid:start pairs, the start telling a pid reused.
func formatStrays(ps []procInfo) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p.pid) + ":" + strconv.FormatUint(p.start, 10)
	}
	return strings.Join(s, ",")
}

func parseStrays(v string) ([]procInfo, error) {
	var out []procInfo
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' }) {
		pid, start, ok := strings.Cut(f, ":")
		p, err1 := strconv.Atoi(pid)
		st, err2 := strconv.ParseUint(start, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad stray %q", f)
		}
		out = append(out, procInfo{pid: p, start: st})
	}
	return out, nil
}
