package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/zkherald/herald/publish"
)

// A standby bridge observes the same groups as the active one and holds
// the events it would have published, for the replay window. When it takes
// over it publishes them first, in order, then goes on live: whatever
// happened between the active bridge's last publish and the takeover
// (its session timeout, at least) reaches the sinks. Most of them were
// published already; they carry the same ids, so the JetStream stream
// drops them within its duplicate window and consumers drop them by id.
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
			b.held = append(b.held, heldEvent{e: e, at: now})
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
		if b.trimmed == nil {
			b.trimmed = map[string]bool{}
		}
		b.trimmed[b.held[cut].e.Group] = true
		cut++
	}
	if cut > 0 {
		b.held = append(b.held[:0], b.held[cut:]...)
	}
}

// startPublishing publishes what the bridge held while it stood by, then
// lets live events through; nothing observed meanwhile can overtake them.
//
// A group some of whose held events were dropped (older than the window:
// the active bridge may have died before publishing them) is not passed
// over in silence: its first event still held says Gap, and it is read
// afresh and published as a Snapshot with Gap (elect.Many.Restate),
// which comes after the held events. Its events keep their ids, so where
// the active bridge did publish them the stream drops the copy, and with
// it a gap that was none. Until that snapshot, the pipeline holds no
// state for such a group: what it held from before standing by, and the
// events left after the dropped ones, may not say who owns it now.
func (b *Bridge) startPublishing(ctx context.Context) {
	// A sink that lost its store of current state is told again the
	// groups observed now only (resend.go).
	b.pipe.Observed(b.observes)
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	b.trimHeld(time.Now())
	trimmed := b.trimmed
	b.trimmed = nil
	marked := map[string]bool{}
	for i := range b.held {
		if g := b.held[i].e.Group; trimmed[g] && !marked[g] {
			b.held[i].e.Gap = true
			marked[g] = true
		}
	}
	if len(trimmed) > 0 {
		restate := b.restater()
		for g := range trimmed {
			b.log.Warn("some of the group's changes may be unpublished (held while standing by longer than the replay window, or dropped when this bridge last stopped publishing); publishing the group afresh, marked as a gap", "group", g, "window", b.cfg.HAReplay)
			if restate != nil {
				restate(g)
			}
		}
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
			b.trimmed = map[string]bool{}
		}
		b.trimmed[g] = true
	}
	b.pubMu.Unlock()
}

// restater is how to have a group read afresh and published as a Snapshot
// with Gap: the current observation's Restate (nil when none).
func (b *Bridge) restater() func(group string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.restate
}
