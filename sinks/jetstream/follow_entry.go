package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// entry turns one bucket entry into an update, unless the watch delivered
// it (or something newer) already.
func (f *ownerFollow) entry(ctx context.Context, e jetstream.KeyValueEntry, initial bool) error {
	if e.Revision() > f.read.Load() {
		f.read.Store(e.Revision())
	}
	k := f.known[e.Key()]
	if e.Revision() <= k.rev {
		return nil // delivered before this watch was re-established
	}
	group, err := publish.GroupFromTokens(e.Key())
	if err != nil {
		f.w.skipped.Add(1)
		return nil
	}
	u := OwnerUpdate{Group: group, Revision: e.Revision(), Initial: initial}
	var writer string
	if op := e.Operation(); op == jetstream.KeyValuePut {
		var o Owner
		if err := json.Unmarshal(e.Value(), &o); err != nil || !o.valid(group) {
			f.w.skipped.Add(1)
			return nil
		}
		if o.Term < k.term && !o.NewEnsemble {
			k.rev = e.Revision()
			f.known[e.Key()] = k
			return nil // a lower term than delivered: stale
		}
		u.Owner, writer = &o, o.Source
	} else if len(e.Value()) > 0 {
		var v vacancy
		if json.Unmarshal(e.Value(), &v) == nil {
			writer, u.Note = v.Source, v.Note
		}
	}
	u.Freshness = f.judge(group, writer, u.Owner != nil)
	if k.reported && !k.has && u.Owner == nil {
		k.rev = e.Revision()
		f.known[e.Key()] = k
		// Still no owner, perhaps written by another bridge: deliver it
		// again only if that changes whether it is stale, or why nobody
		// holds it.
		if last := f.last[e.Key()].u; last.Stale != u.Stale || last.Note != u.Note {
			u.Initial = false
			return f.deliver(ctx, e.Key(), writer, u)
		}
		f.remember(e.Key(), writer, u)
		return nil
	}
	next := known{rev: e.Revision(), term: k.term, reported: true}
	if u.Owner != nil {
		next.term, next.has = u.Owner.Term, true
	}
	f.known[e.Key()] = next
	return f.deliver(ctx, e.Key(), writer, u)
}

// valid reports whether o, read under group's key, is an owner herald
// wrote: it names its group (the key's), a node, and a term (a czxid,
// never 0). JSON such as {} or null decodes without error into an owner
// with none of them, which is no owner at all.
func (o *Owner) valid(group string) bool {
	return o.Group == group && o.Owner.Node != "" && o.Term > 0
}

// judge judges a value of group written by writer (owned: one naming an
// owner), and arms the timer for when it turns stale.
func (f *ownerFollow) judge(group, writer string, owned bool) publish.Freshness {
	fr := f.judgeAt(time.Now(), group, writer, owned)
	if !fr.StaleAt.IsZero() && (f.next.IsZero() || fr.StaleAt.Before(f.next)) {
		f.arm(fr.StaleAt)
	}
	return fr
}

// judgeAt judges a value of group written by writer at now: by the
// heartbeats, and stale whatever they say while the bucket is gone.
func (f *ownerFollow) judgeAt(now time.Time, group, writer string, owned bool) publish.Freshness {
	var fr publish.Freshness
	switch {
	case writer == "" && owned:
		// An owner value that names no bridge (an older herald's).
		fr = f.bridges.JudgeUnsigned(now, group)
	case writer == "":
		// No key, or a deletion nobody signed: "no owner" only while a
		// bridge that observes the group confirms.
		fr = f.bridges.JudgeAbsent(now, group)
	default:
		fr = f.bridges.JudgeGroup(now, group, writer)
	}
	if f.gone != "" {
		fr.Stale, fr.StaleReason, fr.StaleAt = true, f.gone, time.Time{}
	}
	return fr
}

func (f *ownerFollow) arm(at time.Time) {
	f.next = at
	// A little after the bound, so that the value is stale when judged.
	f.timer.Reset(time.Until(at) + 5*time.Millisecond)
}

// lastValue is the last update delivered for a key, and the bridge that
// wrote it ("" when the value names none: not judged by heartbeats, but
// stale while the bucket is gone).
type lastValue struct {
	u      OwnerUpdate
	writer string
	// pending, when set, is why the value is stale whatever the
	// heartbeats say: it is from a bucket since made again, which has
	// not said yet what is current (startOver, endBefore).
	pending string
}

// deliver sends u, the value of key that writer wrote, and remembers it,
// to deliver it again if only its freshness changes.
func (f *ownerFollow) deliver(ctx context.Context, key, writer string, u OwnerUpdate) error {
	f.remember(key, writer, u)
	return f.send(ctx, u)
}

func (f *ownerFollow) remember(key, writer string, u OwnerUpdate) {
	f.last[key] = lastValue{u: u, writer: writer}
}

// refresh judges again every value delivered (a heartbeat arrived, or the
// first fresh value reached its bound) and delivers again those whose
// judgement changed: stale or fresh, the bridge that confirms it, or that
// bridge's state (a value delivered before its bridge's first heartbeat is
// delivered again, confirmed, when that heartbeat comes). A heartbeat that
// only moves Confirmed on delivers nothing. It arms the timer for the next
// value to turn stale.
func (f *ownerFollow) refresh(ctx context.Context) error {
	now := time.Now()
	var next time.Time
	for key, l := range f.last {
		fr := f.judgeAt(now, l.u.Group, l.writer, l.u.Owner != nil)
		if l.pending != "" {
			fr = publish.Freshness{Stale: true, StaleReason: l.pending}
		}
		changed := fr.Differs(l.u.Freshness)
		l.u.Freshness = fr
		if changed {
			l.u.Initial = false
		}
		f.last[key] = l
		if changed {
			if err := f.send(ctx, l.u); err != nil {
				return err
			}
		}
		if !fr.StaleAt.IsZero() && (next.IsZero() || fr.StaleAt.Before(next)) {
			next = fr.StaleAt
		}
	}
	if next.IsZero() {
		f.timer.Stop()
		f.next = time.Time{}
	} else {
		f.arm(next)
	}
	return nil
}

// endReplay finishes a watcher's replay. On the first, it reports "no
// owner" for a followed group the bucket never held and marks the watch
// synced. On later ones, a key delivered before and absent from the replay
// was purged meanwhile: its group has no owner now. So has a key delivered
// from a bucket since made again that the new one lacks.
func (f *ownerFollow) endReplay(ctx context.Context, seen map[string]bool) error {
	if err := f.endBefore(ctx, seen); err != nil {
		return err
	}
	if !f.synced {
		f.synced = true
		if f.group != "" && !seen[f.key] && !f.known[f.key].reported {
			f.known[f.key] = known{reported: true}
			u := OwnerUpdate{Group: f.group, Initial: true, Freshness: f.judge(f.group, "", false)}
			if err := f.deliver(ctx, f.key, "", u); err != nil {
				return err
			}
		}
		close(f.w.synced)
		return nil
	}
	for key, k := range f.known {
		if !seen[key] && k.has {
			k.has = false
			f.known[key] = k
			g, _ := publish.GroupFromTokens(key)
			if err := f.deliver(ctx, key, "", OwnerUpdate{Group: g, Revision: k.rev, Freshness: f.judge(g, "", false)}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *ownerFollow) send(ctx context.Context, u OwnerUpdate) error {
	select {
	case f.w.ch <- u:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endBefore reports, at the end of the first replay of a bucket made
// again, each key delivered from the bucket before that the new one lacks
// as no owner (Revision 0: the new bucket never held it), stale: the
// bridge that made the bucket again writes every group's owner into it,
// and until it has written this one, its owner is not known. Saying "no
// owner" unjudged would call a group that has one ownerless.
func (f *ownerFollow) endBefore(ctx context.Context, seen map[string]bool) error {
	before := f.before
	f.before = nil
	reason := fmt.Sprintf("the owners bucket %s was made again and holds nothing of this group yet; a bridge writes every group's owner into it", f.cfg.bucket)
	for key, old := range before {
		if _, ok := f.known[key]; ok || seen[key] {
			continue // delivered from the new bucket already
		}
		f.known[key] = known{reported: true}
		u := OwnerUpdate{Group: old.Group, Freshness: publish.Freshness{Stale: true, StaleReason: reason}}
		f.last[key] = lastValue{u: u, pending: reason}
		if old.Owner == nil && old.Stale {
			continue // said so already
		}
		if err := f.send(ctx, u); err != nil {
			return err
		}
	}
	return nil
}
