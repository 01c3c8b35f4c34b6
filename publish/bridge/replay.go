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

// trimHeld drops held events older than the replay window. b.pubMu must
// be held.
func (b *Bridge) trimHeld(now time.Time) {
	cut := 0
	for cut < len(b.held) && now.Sub(b.held[cut].at) > b.cfg.HAReplay {
		cut++
	}
	if cut > 0 {
		b.held = append(b.held[:0], b.held[cut:]...)
	}
}

// startPublishing publishes what the bridge held while it stood by, then
// lets live events through; nothing observed meanwhile can overtake them.
func (b *Bridge) startPublishing(ctx context.Context) {
	b.pubMu.Lock()
	defer b.pubMu.Unlock()
	b.trimHeld(time.Now())
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
	b.held = b.held[:0]
	b.publishing = true
}

// stopPublishing makes the bridge hold events again (it stands by).
func (b *Bridge) stopPublishing() {
	b.pubMu.Lock()
	b.publishing = false
	b.pubMu.Unlock()
}
