package bridge

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// A standby bridge observes the same groups as the active one and holds
// the events it would have published, for the replay window. When it takes
// over it publishes them first, in order, then goes on live: whatever
// happened between the active bridge's last publish and the takeover
// (its session timeout, at least) reaches the sinks. Most of them were
// published already; they carry the same ids, so the JetStream stream
// drops them within its duplicate window and consumers drop them by id.
// A snapshot the standby took is held under its change's id
// (WithChangeID), not as its own sighting: replayed after newer changes,
// a sighting of its own would be stored as news of an older state.
// (Where the active bridge told the tenure only by its own snapshot, the
// held copy's change id is new to the stream and is stored: a
// restatement, which readers keep the tenure across.)
// The window is therefore the stream's duplicate window by default.

// heldEvent is an event a standby holds, and when it was observed.
type heldEvent struct {
	e  publish.Event
	at time.Time
}

// deliver publishes events while the bridge is active and holds them
// while it stands by. It reports whether they were published.
func (b *Bridge) deliver(ctx context.Context, events []publish.Event) (bool, error) {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	if !b.publishing {
		now := time.Now()
		for _, e := range events {
			b.held = append(b.held, heldEvent{e: e.WithChangeID(), at: now})
		}
		b.trimHeld(now)
		return false, nil
	}
	return true, b.pipe.Publish(ctx, events...)
}

// trimHeld drops held events older than the replay window, remembering
// their groups. b.pubMu must be held.
func (b *Bridge) trimHeld(now time.Time) {
	cut := 0
	for cut < len(b.held) && now.Sub(b.held[cut].at) > b.cfg.HAReplay {
		e := b.held[cut].e
		if b.trimmed == nil {
			b.trimmed = map[string]droppedState{}
		}
		b.trimmed[e.Group] = b.trimmed[e.Group].add(e)
		cut++
	}
	if cut > 0 {
		b.held = append(b.held[:0], b.held[cut:]...)
	}
}

// droppedState is what a bridge knows of a group's events it dropped
// unpublished: whether they can be accounted for at all, and the owner
// the newest of them that changed the owner left.
type droppedState struct {
	// untold: dropped from the sinks' backlogs when deposed (not kept),
	// or one of them said Gap itself.
	untold bool
	// changed: one of them changed the owner; owner is the node the
	// newest such left owning ("" none), term its term, zxid that
	// event's. gained: one of them named a new owner.
	changed, gained bool
	owner           string
	term, zxid      int64
	// recipe is the group's, as the newest of them that says one does.
	recipe elect.Recipe
}

// add is d with e dropped too (e after those before).
func (d droppedState) add(e publish.Event) droppedState {
	d.untold = d.untold || e.Gap
	if e.Recipe.Known() {
		d.recipe = e.Recipe
	}
	if e.Type.Gains() || e.Type.Loses() {
		d.changed, d.owner, d.term, d.zxid = true, "", 0, e.Zxid
		if e.Owner != nil {
			d.owner, d.term = e.Owner.Node, e.Term
		}
		d.gained = d.gained || e.Owner != nil
	}
	return d
}

// startPublishing publishes what the bridge held while it stood by, then
// lets live events through; nothing observed meanwhile can overtake them.
//
// A group some of whose held events were dropped (older than the window,
// or dropped from the sinks' backlogs when this bridge was last deposed)
// is not passed over in silence. Where every shared sink that keeps a
// report (storedElsewhere) holds the owner the dropped events left, or a
// later state, the bridge before this one stored them: the group is read
// afresh (elect.Many.Refresh) without a gap, and only this bridge's own
// audit log, which never got them, marks its next event of the group
// (publish.Pipeline.MarkGap). Otherwise (the active bridge may have died
// before publishing them, or a sink cannot say) its first event still
// held says Gap, and it is read afresh and published as a Snapshot with
// Gap (elect.Many.Restate), which comes after the held events. Its events
// keep their ids, so where the active bridge did publish them the stream
// drops the copy. Until that snapshot, the pipeline holds no state for
// such a group: what it held from before standing by, and the events
// left after the dropped ones, may not say who owns it now.
//
// A group published as a gap that is no longer observed (deleted while
// this bridge stood by) has no observer to read it afresh: its end is
// published (endUnobserved), dated by its parent's last child change and
// marked as a gap, after the held events.
func (b *Bridge) startPublishing(ctx context.Context) {
	// A sink that lost its store of current state is told again the
	// groups observed now only (resend.go).
	b.pipe.Observed(b.observes)
	stored := b.storedElsewhere(ctx)
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	b.trimHeld(time.Now())
	trimmed := b.trimmed
	b.trimmed = nil
	marked := map[string]bool{}
	var confirmed []string
	for g, d := range trimmed {
		if stored(g, d) {
			confirmed = append(confirmed, g)
			marked[g] = true // not in the shared sinks: they hold it
			b.pipe.MarkGap(g, func(_ string, private bool) bool { return private })
		}
	}
	for i := range b.held {
		if g := b.held[i].e.Group; !marked[g] {
			if _, ok := trimmed[g]; ok {
				b.held[i].e.Gap = true
				marked[g] = true
			}
		}
	}
	b.refreshTrimmed(trimmed, confirmed)
	if gone := b.unobserved(trimmed, confirmed); len(gone) > 0 {
		// Read from ZooKeeper, then published after the held events.
		go b.endUnobserved(ctx, gone)
	}
	if n := len(b.held); n > 0 {
		events := make([]publish.Event, n)
		for i, h := range b.held {
			events[i] = h.e
		}
		if err := b.pipe.Publish(ctx, events...); err != nil && !errors.Is(err, publish.ErrClosed) {
			b.log.Error("could not publish the events held while standing by", "events", n, "err", err)
		} else {
			b.log.Info("published the events held while standing by", "events", n, "window", b.cfg.HAReplay)
		}
		b.replayed.Add(float64(n))
	}
	for g := range trimmed {
		b.pipe.Forget(g) // its afresh snapshot states it
	}
	b.held = b.held[:0]
	b.publishing = true
	b.leading.Store(true)
	b.pipe.Resume()
}

// refreshTrimmed has every group whose held events were dropped read
// afresh: those the shared sinks were found to hold (confirmed) without a
// gap of their own (their first event to this bridge's own audit log is
// marked, see startPublishing), the others published as a gap.
func (b *Bridge) refreshTrimmed(trimmed map[string]droppedState, confirmed []string) {
	if len(trimmed) == 0 {
		return
	}
	restate, refresh := b.restaters()
	done := make(map[string]bool, len(confirmed))
	for _, g := range confirmed {
		done[g] = true
		if refresh != nil {
			refresh(g)
		}
	}
	if len(confirmed) > 0 {
		b.log.Info("the shared sinks hold what this bridge dropped from what it held while standing by (the bridge before it stored it); reading those groups afresh, without a gap",
			"groups", len(confirmed), "window", b.cfg.HAReplay)
	}
	for g := range trimmed {
		if done[g] {
			continue
		}
		b.log.Warn("some of the group's changes may be unpublished (held while standing by longer than the replay window, or dropped when this bridge last stopped publishing); publishing the group afresh, marked as a gap", "group", g, "window", b.cfg.HAReplay)
		if restate != nil {
			restate(g)
		}
	}
}

// unobserved are the trimmed groups published as a gap (not confirmed)
// that the current observation does not observe: Restate ignores them.
func (b *Bridge) unobserved(trimmed map[string]droppedState, confirmed []string) map[string]droppedState {
	b.mu.Lock()
	observed := b.observing
	b.mu.Unlock()
	if observed == nil {
		return nil
	}
	out := map[string]droppedState{}
	for g, d := range trimmed {
		if !slices.Contains(confirmed, g) && !observed(g) {
			out[g] = d
		}
	}
	return out
}

// storedElsewhere reads what the shared sinks that keep a report
// (publish.Reporter: the JetStream owners bucket, the Kafka owners topic)
// stored last, when this bridge dropped held events, and returns whether
// every one of them holds what a group's dropped events say: the owner
// the newest of them that changed the owner left (its node), or a state
// at that event's zxid or later. The bridge that was active then stored
// the changes this one dropped: its events are in order, so a later one
// stored means that one was, and one it could not store it marked as a
// gap there itself. Dropped events that changed no owner (candidates
// that came and went) hide no owner. It says no for events that cannot
// be accounted for (droppedState.untold), and for every group when there
// is no such sink or one of them cannot be read: the dropped events then
// count as unpublished. A sink that keeps no report (NATS subjects) was
// written live, and is not asked.
func (b *Bridge) storedElsewhere(ctx context.Context) func(group string, d droppedState) bool {
	no := func(string, droppedState) bool { return false }
	b.pubMu.Lock()
	b.trimHeld(time.Now())
	any := len(b.trimmed) > 0
	b.pubMu.Unlock()
	if !any {
		return no
	}
	var shared []map[string]publish.LastReport
	failed := false
	b.lastReports(ctx, true, func(s publish.Sink, _ bool, reports map[string]publish.LastReport, err error) bool {
		switch {
		case err != nil:
			b.log.Warn("could not read what the sink stored last; the groups whose held events outlived the replay window are published as gaps", "sink", s.Name(), "err", err)
			failed = true
			return false
		default:
			shared = append(shared, reports)
		}
		return true
	})
	if failed || len(shared) == 0 {
		return no
	}
	return func(group string, d droppedState) bool {
		if d.untold {
			return false
		}
		for _, reports := range shared {
			if r, ok := reports[group]; d.changed && !holds(r, ok, d) {
				return false
			}
		}
		return true
	}
}

// holds reports whether a store's last report of a group (r; ok false
// when it has none) holds what the group's dropped events say: a state at
// their zxid or later; the very tenure they left (the owner's node and
// term: a name alone may recur in a group made again); or, when they
// named no owner at all (a snapshot of an empty group, say), no owner,
// which a store that keeps no key of an ownerless group says by having
// none.
func holds(r publish.LastReport, ok bool, d droppedState) bool {
	switch {
	case !ok:
		return d.owner == "" && !d.gained
	case d.zxid != 0 && r.Zxid >= d.zxid:
		// Not at zxid 0: that is an event that could not be dated (a
		// group found gone), which every report would seem to hold.
		return true
	case d.owner != "":
		return r.Owner == d.owner && r.Term != 0 && r.Term == d.term
	}
	return !d.gained && r.Owner == ""
}

// holdForDrain stops publishing as a bridge that is stopping while it
// still leads: what it observes from now on is held (and dropped with the
// bridge), what the sinks have still to write they write, as the drain
// before the resign waits for.
func (b *Bridge) holdForDrain() {
	b.pubMu.Lock()
	b.publishing = false
	b.pubMu.Unlock()
}

// stopPublishing makes the bridge hold events again (it stands by). The
// pipeline keeps the groups' state as published, and writes nothing of it
// meanwhile: a sink that lost its store while the bridge stands by is
// told the truth by the active bridge, and by this one only once it has
// published what it held (publish.Pipeline.Pause).
//
// What the sinks other than the audit log had still to write is dropped
// (publish.Pipeline.Pause): written late, after the active bridge's
// writes, it would undo them. The active bridge publishes those changes
// from what it held; should this bridge lead again first, the groups
// whose changes it dropped are published afresh, marked as a gap, as
// those whose held events outlived the replay window are.
func (b *Bridge) stopPublishing() {
	b.pubMu.Lock()
	b.publishing = false
	b.leading.Store(false)
	// trimmed keeps what an earlier call recorded: campaigning again
	// stops publishing again, and drops nothing more then.
	for _, g := range b.pipe.Pause() {
		if b.trimmed == nil {
			b.trimmed = map[string]droppedState{}
		}
		b.trimmed[g] = droppedState{untold: true}
	}
	b.pubMu.Unlock()
}

// restaters are how to have a group read afresh and published as a
// Snapshot with Gap, and without one of its own: the current
// observation's Restate and Refresh (nil when none).
func (b *Bridge) restaters() (restate, refresh func(group string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.restate, b.refresh
}
