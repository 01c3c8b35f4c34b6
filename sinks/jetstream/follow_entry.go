package jetstream

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// entry turns one bucket entry into an update, unless the watch delivered
// it (or something newer) already.
func (f *ownerFollow) entry(ctx context.Context, e jetstream.KeyValueEntry, initial bool) error {
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
	if op := e.Operation(); op == jetstream.KeyValuePut {
		var o Owner
		if err := json.Unmarshal(e.Value(), &o); err != nil {
			f.w.skipped.Add(1)
			return nil
		}
		if o.Term < k.term {
			k.rev = e.Revision()
			f.known[e.Key()] = k
			return nil // a lower term than delivered: stale
		}
		u.Owner = &o
	}
	if k.reported && !k.has && u.Owner == nil {
		k.rev = e.Revision()
		f.known[e.Key()] = k
		return nil // still no owner
	}
	next := known{rev: e.Revision(), term: k.term, reported: true}
	if u.Owner != nil {
		next.term, next.has = u.Owner.Term, true
	}
	f.known[e.Key()] = next
	return f.send(ctx, u)
}

// endReplay finishes a watcher's replay. On the first, it reports "no
// owner" for a followed group the bucket never held and marks the watch
// synced. On later ones, a key delivered before and absent from the replay
// was purged meanwhile: its group has no owner now.
func (f *ownerFollow) endReplay(ctx context.Context, seen map[string]bool) error {
	if !f.synced {
		f.synced = true
		if f.group != "" && !seen[f.key] {
			f.known[f.key] = known{reported: true}
			if err := f.send(ctx, OwnerUpdate{Group: f.group, Initial: true}); err != nil {
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
			if err := f.send(ctx, OwnerUpdate{Group: g, Revision: k.rev}); err != nil {
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
