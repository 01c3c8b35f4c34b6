package bridge

import (
	"context"
	"maps"

	"github.com/zkherald/herald/publish"
)

// readReports gathers what was published last for each group before this
// run: Config.Resume, and the report of every sink that keeps one (the
// audit log, JetStream's owners bucket, Kafka's owners topic). The first
// snapshot of each group is then measured against it (see since), and
// says gap when an owner may have come and gone since.
//
// The sinks other bridges write too (the bucket, the topic) hold every
// bridge's last word: this bridge before a restart, another before a full
// outage, another shard before the group moved here. Of those, the one
// that lags counts: what it missed is missing from it, and the snapshot's
// gap is what says so. A group one of them holds no report of, it never
// got (or got as gone): measured against nothing, its snapshot says gap
// if the group holds anything. The audit log, which only this bridge
// writes, is ahead of them when their writes failed before a restart (it
// got what they did not); it is measured against only when no shared
// sink can say, as the newest report there is.
//
// A sink that cannot say is logged and passed over: its groups' first
// snapshots can then not tell what they missed, as on a first start.
func (b *Bridge) readReports(ctx context.Context) {
	newest := maps.Clone(b.cfg.Resume)
	if newest == nil {
		newest = map[string]Resume{}
	}
	var shared []map[string]publish.LastReport
	privates := map[string]map[string]publish.LastReport{} // by sink name
	b.lastReports(ctx, false, func(s publish.Sink, private bool, reports map[string]publish.LastReport, err error) bool {
		if err != nil {
			b.log.Warn("could not read what the sink published last; the first snapshots of its groups cannot tell what they missed",
				"sink", s.Name(), "err", err)
			return true
		}
		merge(newest, reports)
		if !private {
			shared = append(shared, reports)
		} else {
			privates[s.Name()] = reports
		}
		b.log.Info("read what the sink published last", "sink", s.Name(), "groups", len(reports))
		return true
	})
	measure := newest
	if len(shared) > 0 {
		measure = laggard(newest, shared)
	}
	// The bucket and topic hold every bridge's groups: keep only those
	// this one may observe.
	keep := func(group string, _ Resume) bool { return !b.mayObserve(group) }
	maps.DeleteFunc(newest, keep)
	maps.DeleteFunc(measure, keep)
	b.markPrivatesBehind(privates, measure)
	reported := make(map[string]reportedGroup, len(newest))
	for g, r := range newest {
		reported[g] = reportedGroup{high: r.Zxid, owned: r.Owner != ""}
	}
	b.viewMu.Lock()
	b.resume, b.reported = measure, reported
	b.viewMu.Unlock()
}

// markPrivatesBehind marks a gap, in a Private sink (an audit log) alone,
// before the first event of each group whose last report there is behind
// the one the first snapshots are measured against. Such a sink may fall
// behind the shared ones before the bridge stops (a write that failed, a
// directory gone, a drain cut short): the snapshot, unmarked against the
// shared store, followed in it the last owner it held, and the owners in
// between were missing from its history with no mark. A group it has no
// report of is not marked: it holds nothing earlier to miss.
func (b *Bridge) markPrivatesBehind(privates map[string]map[string]publish.LastReport, measure map[string]Resume) {
	for name, reports := range privates {
		for g, p := range reports {
			m, ok := measure[g]
			if !ok || (p.Zxid >= m.Zxid && p.Owner == m.Owner && p.Term == m.Term) {
				continue
			}
			b.log.Info("the sink is behind the others for a group: its next event of it carries a gap", "sink", name, "group", g)
			b.pipe.MarkGap(g, func(sink string, private bool) bool { return private && sink == name })
		}
	}
}

// lastReports reads what each sink that keeps a report (publish.Reporter)
// stored last, within ConnectTimeout each, in Config.Sinks order, and
// gives read the reports or why they could not be read, and whether only
// this bridge writes the sink (publish.Private); it stops when read says
// false. With sharedOnly, the Private ones are not read.
func (b *Bridge) lastReports(ctx context.Context, sharedOnly bool, read func(s publish.Sink, private bool, reports map[string]publish.LastReport, err error) bool) {
	for _, s := range b.cfg.Sinks {
		r, ok := s.(publish.Reporter)
		if !ok {
			continue
		}
		pv, ok := s.(publish.Private)
		if ok && pv.Private() && sharedOnly {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
		reports, err := r.LastReports(rctx)
		cancel()
		if !read(s, ok && pv.Private(), reports, err) {
			return
		}
	}
}

// mayObserve reports whether group is one this bridge observes, or would
// once it appears: watched, a single-node leader, a child of a discover
// root or matched by a pattern, and in the bridge's shard.
func (b *Bridge) mayObserve(group string) bool { return b.scope.Covers(group) }

// merge adds reports to all, keeping each group's newest.
func merge(all, reports map[string]publish.LastReport) {
	for g, r := range reports {
		if have, ok := all[g]; !ok || r.Zxid > have.Zxid {
			all[g] = r
		}
	}
}

// laggard is, for every group any report names, the report of the shared
// sink that lags: the lowest zxid among them, or nothing (zxid 0, no
// owner, the recipe newest knows) where one of them has none of a group
// the newest report names an owner of. A store holds nothing of a group
// it only ever saw without an owner (the owners bucket writes no key for
// it): such a group's newest report, no owner, counts.
func laggard(newest map[string]publish.LastReport, shared []map[string]publish.LastReport) map[string]publish.LastReport {
	out := make(map[string]publish.LastReport, len(newest))
	for g, n := range newest {
		var low publish.LastReport
		for i, reports := range shared {
			r, ok := reports[g]
			if !ok && n.Owner == "" {
				r = n
			} else if !ok {
				low = publish.LastReport{Recipe: n.Recipe}
				break
			}
			if i == 0 || r.Zxid < low.Zxid {
				low = r
			}
		}
		out[g] = low
	}
	return out
}
