package bridge

import (
	"context"
	"maps"
	"path"
	"slices"

	"github.com/zkherald/herald/publish"
)

// readReports gathers what was published last for each group before this
// run: Config.Resume, and the report of every sink that keeps one (the
// audit log, JetStream's owners bucket). A group's newest report counts,
// whoever wrote it: this bridge before a restart, another bridge before a
// full outage, another shard before the group moved here. The first
// snapshot of each group is then measured against it (see since), and
// says gap when an owner may have come and gone since.
//
// A sink that cannot say is logged and passed over: its groups' first
// snapshots can then not tell what they missed, as on a first start.
func (b *Bridge) readReports(ctx context.Context) {
	all := maps.Clone(b.cfg.Resume)
	if all == nil {
		all = map[string]Resume{}
	}
	for _, s := range b.cfg.Sinks {
		r, ok := s.(publish.Reporter)
		if !ok {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
		reports, err := r.LastReports(rctx)
		cancel()
		if err != nil {
			b.log.Warn("could not read what the sink published last; the first snapshots of its groups cannot tell what they missed",
				"sink", s.Name(), "err", err)
			continue
		}
		merge(all, reports)
		b.log.Info("read what the sink published last", "sink", s.Name(), "groups", len(reports))
	}
	// The bucket and topic hold every bridge's groups: keep only those
	// this one may observe.
	maps.DeleteFunc(all, func(group string, _ Resume) bool { return !b.mayObserve(group) })
	b.viewMu.Lock()
	b.resume = all
	b.viewMu.Unlock()
}

// mayObserve reports whether group is one this bridge observes, or would
// once it appears: watched, a single-node leader, a child of a discover
// root or matched by a pattern, and in the bridge's shard.
func (b *Bridge) mayObserve(group string) bool {
	if !b.cfg.Shard.Owns(group) {
		return false
	}
	if _, ok := b.cfg.Leaders[group]; ok || slices.Contains(b.cfg.Watch, group) {
		return true
	}
	for _, r := range b.cfg.Discover {
		if path.Dir(group) == r {
			return true
		}
	}
	for _, pt := range b.cfg.Patterns {
		if ok, _ := path.Match(pt.String(), group); ok {
			return true
		}
	}
	return false
}

// merge adds reports to all, keeping each group's newest.
func merge(all, reports map[string]publish.LastReport) {
	for g, r := range reports {
		if have, ok := all[g]; !ok || r.Zxid > have.Zxid {
			all[g] = r
		}
	}
}
