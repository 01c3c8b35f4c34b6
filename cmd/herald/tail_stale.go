package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	jsapi "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// A tail shows what bridges publish, and a bridge that is dead, frozen or
// cut off publishes nothing: without a word, its silence would read as
// "nothing changed". So tail follows the owners store beside the events
// (the KV bucket, the owners topic), whose values the bridges' heartbeats
// judge as they do for who, and says when no bridge confirms a tailed
// group any more, and when one does again.

// freshNote is whether a bridge confirms a group now, as the owners store
// and the heartbeats tell.
type freshNote struct {
	group string
	publish.Freshness
}

// staleMark is one line of tail: the groups that turned stale (or fresh
// again) together, confirmed last (or now) by the same bridge.
type staleMark struct {
	at     time.Time
	stale  bool
	by     string
	why    string // of the first group: Freshness.Describe, or its reason
	groups []string
}

// staleFlush is how long tail gathers groups that turn stale or fresh
// before it prints them: a bridge's groups all turn at once, and a tail of
// every group prints one line per bridge, not one per group.
const staleFlush = 200 * time.Millisecond

// followFreshness starts following the owners store of src for group (""
// for every group) and returns the marks to print, or nil with a warning
// when the store cannot be followed: tail then shows the events alone.
func (a *app) followFreshness(ctx context.Context, o tailOpts, js jsapi.JetStream, cfg kafkasink.Config, group string) <-chan staleMark {
	notes := make(chan freshNote, 64)
	send := func(n freshNote) bool {
		if len(o.groups) > 1 && !slices.Contains(o.groups, n.group) {
			return true
		}
		select {
		case notes <- n:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var err error
	if js != nil {
		err = followNATSFreshness(ctx, js, group, notes, send)
	} else {
		err = followKafkaFreshness(ctx, cfg, group, notes, send)
	}
	if err != nil {
		a.log.Warn("cannot follow the owners store: tail cannot say when no bridge confirms what it shows (herald who says it)", "err", err)
		return nil
	}
	marks := make(chan staleMark)
	go gatherMarks(ctx, notes, marks)
	return marks
}

func followNATSFreshness(ctx context.Context, js jsapi.JetStream, group string, notes chan freshNote, send func(freshNote) bool) error {
	w, err := jetstream.Follow(ctx, js, group)
	if err != nil {
		return err
	}
	go func() {
		defer close(notes)
		for u := range w.Updates() {
			if !send(freshNote{u.Group, u.Freshness}) {
				return
			}
		}
	}()
	return nil
}

func followKafkaFreshness(ctx context.Context, cfg kafkasink.Config, group string, notes chan freshNote, send func(freshNote) bool) error {
	st, err := kafkasink.FollowOwners(ctx, cfg, group)
	if err != nil {
		return err
	}
	go func() {
		defer close(notes)
		defer st.Close()
		for u := range st.C() {
			if !send(freshNote{u.Group, u.Freshness}) {
				return
			}
		}
	}()
	return nil
}

// gatherMarks turns notes into marks: a group's first note when it is
// stale (the tail starts while no bridge confirms it), and every later
// change of Stale, gathered for staleFlush and grouped by bridge. A change
// undone within that shows nothing.
func gatherMarks(ctx context.Context, notes <-chan freshNote, marks chan<- staleMark) {
	last := map[string]freshNote{}
	shown := map[string]bool{} // stale as last printed (absent: not stale)
	var pending []string
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	for {
		select {
		case n, ok := <-notes:
			if !ok {
				return
			}
			if _, was := last[n.group]; !was || last[n.group].Stale != n.Stale {
				if len(pending) == 0 {
					flush.Reset(staleFlush)
				}
				pending = append(pending, n.group)
			}
			last[n.group] = n
		case <-flush.C:
			var turned []freshNote
			for _, g := range pending {
				if n := last[g]; n.Stale != shown[g] {
					turned, shown[g] = append(turned, n), n.Stale
				}
			}
			pending = nil
			for _, m := range marksOf(turned, time.Now()) {
				select {
				case marks <- m:
				case <-ctx.Done():
					return
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

// marksOf groups notes (one per group) into marks by staleness and
// bridge, in the order they came.
func marksOf(notes []freshNote, now time.Time) []staleMark {
	var out []staleMark
	idx := map[[2]string]int{}
	for _, n := range notes {
		k := [2]string{fmt.Sprint(n.Stale), n.ConfirmedBy}
		i, ok := idx[k]
		if !ok {
			why := n.Describe(now)
			if why == "" {
				why = n.StaleReason
			}
			i, idx[k] = len(out), len(out)
			out = append(out, staleMark{at: now, stale: n.Stale, by: n.ConfirmedBy, why: why})
		}
		out[i].groups = append(out[i].groups, n.group)
	}
	return out
}

// line renders a mark as tail prints it, in the columns of eventLine.
func (m staleMark) line() string {
	groups := strings.Join(m.groups, " ")
	if len(m.groups) > 3 {
		groups = fmt.Sprintf("%d groups (%s …)", len(m.groups), strings.Join(m.groups[:3], " "))
	}
	head := m.at.UTC().Format("2006-01-02T15:04:05.000Z") + "  "
	if !m.stale {
		return head + padRight("CONFIRMED", 16) + "  " + groups + "  confirmed again by " + m.by + "; events are published again (GAP marks owners that may have come and gone unseen)"
	}
	it := "it"
	if len(m.groups) > 1 {
		it = "them"
	}
	return head + padRight("STALE", 16) + "  " + groups + "  no bridge confirms " + it + " now: " + m.why + "; changes may go unseen here until a bridge publishes again"
}

// printMark shows a mark: a line among the events, or with --json (whose
// lines are events only) a log record on standard error.
func (a *app) printMark(m staleMark, asJSON bool) error {
	if !asJSON {
		_, err := fmt.Fprintln(a.stdout, m.line())
		return err
	}
	groups := m.groups
	if len(groups) > 10 {
		groups = groups[:10] // and "count" says how many
	}
	if m.stale {
		a.log.Warn("no bridge confirms these groups now: changes may go unseen until a bridge publishes again", "count", len(m.groups), "groups", groups, "why", m.why)
	} else {
		a.log.Info("confirmed again", "count", len(m.groups), "groups", groups, "by", m.by)
	}
	return nil
}
