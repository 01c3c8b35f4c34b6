package main

import (
	"context"
	"errors"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// writersOf maps each group of events to the sources (bridges) that wrote
// of it, in the order they first did.
func writersOf(events []publish.Event) map[string][]string {
	writers := map[string][]string{}
	seen := map[[2]string]bool{}
	for _, e := range events {
		k := [2]string{e.Group, e.Source}
		if e.Source != "" && !seen[k] {
			seen[k] = true
			writers[e.Group] = append(writers[e.Group], e.Source)
		}
	}
	return writers
}

// markOutOfScope adds a stretch of missing owners (a Missing row, as a
// bridge's snapshot that finds a group empty after a stretch it did not
// observe adds) at the end of each group of ts whose bridges all left it
// out since: every source that wrote of the group has a heartbeat in
// bridges, and none of their scopes covers the group (restarted under the
// same source with a configuration without it, say). Their events end
// where they stopped observing it, and the heartbeats that went on say
// nothing of it: owners may have come and gone since, unseen. The
// stretch runs from when the group was last observed to the newest of
// those heartbeats, the latest moment known not to be observed. A group
// a source sent no heartbeat for (none in hand, or from a bridge that
// sends none: a nil scope covers all) is left as it is, and so is a group
// whose open last row the owners view (view, nil for audit logs) names
// and a bridge confirms now (stillHeld). ts is in History's order, each
// group's rows together.
func markOutOfScope(bridges *publish.Bridges, events []publish.Event, ts []audit.Tenure, view map[string]ownerNow) []audit.Tenure {
	if bridges == nil || len(ts) == 0 {
		return ts
	}
	writers := writersOf(events)
	out := make([]audit.Tenure, 0, len(ts))
	for i, t := range ts {
		out = append(out, t)
		if i+1 < len(ts) && ts[i+1].Group == t.Group {
			continue // not the group's last row
		}
		if stillHeld(view, t) {
			continue
		}
		if until, ok := unobservedSince(bridges, t.Group, writers[t.Group]); ok && until.After(lastKnown(t)) {
			out = append(out, audit.Tenure{Group: t.Group, Recipe: t.Recipe, Missing: true, Gap: true,
				From: lastKnown(t), FromSeen: true, Until: until, UntilSeen: true})
		}
	}
	return out
}

// stillHeld reports whether t, a group's open last row, is confirmed now
// by the owners view: it names t's owner node, judged fresh by a bridge
// whose heartbeat covers the group. The events need not name that bridge:
// one that took the group over (another shard's after a change of N)
// restates the same owner with an event of the same ID, which JetStream
// drops as a duplicate; and an owner node unchanged since the last event
// means no tenure came or went meanwhile. Before, history marked such a
// group "not observed: owners may be missing" after its owner's open row,
// for as long as the old bridge heartbeated, while that row said holding
// and who said fresh (TestHistoryGroupMovedToAnotherShardIsObserved).
func stillHeld(view map[string]ownerNow, t audit.Tenure) bool {
	n, ok := view[t.Group]
	return ok && t.Open() && !t.Missing && n.node != "" && n.node == t.Owner.Node &&
		!n.Stale && n.ConfirmedBy != "" && n.BridgeState != ""
}

// unobservedSince reports whether the heartbeats of every one of writers
// leave group out of their scope, and the newest of them.
func unobservedSince(bridges *publish.Bridges, group string, writers []string) (time.Time, bool) {
	var newest time.Time
	for _, w := range writers {
		h, ok := bridges.Get(w)
		if !ok || h.Scope.Covers(group) {
			return time.Time{}, false
		}
		if h.Time.After(newest) {
			newest = h.Time
		}
	}
	return newest, len(writers) > 0
}

// natsBridges reads the bridges' heartbeats from the JetStream bridges
// bucket; nil, with a warning, when it cannot (no stretch out of scope is
// then marked).
func (a *app) natsBridges(ctx context.Context, sf *sourceFlags) *publish.Bridges {
	jsc, closeNC, err := sf.jetStream(ctx, a.log)
	if err != nil {
		return nil
	}
	defer closeNC()
	rctx, cancel := context.WithTimeout(ctx, ownersRead)
	defer cancel()
	bridges := publish.NewBridges()
	kv, err := jsc.KeyValue(rctx, jetstream.DefaultBridgesBucket)
	if errors.Is(err, js.ErrBucketNotFound) {
		return bridges
	}
	var keys js.KeyLister
	if err == nil {
		keys, err = kv.ListKeys(rctx)
	}
	if err != nil {
		a.log.Warn("could not read the bridges' heartbeats: groups their bridges no longer observe are not marked as such", "bucket", jetstream.DefaultBridgesBucket, "err", err)
		return nil
	}
	for k := range keys.Keys() {
		e, err := kv.Get(rctx, k)
		if err != nil {
			continue // deleted meanwhile
		}
		h, err := publish.DecodeHeartbeat(e.Value())
		if err != nil || publish.BridgeKey(h.Source) != k {
			continue // not a heartbeat, or filed under another bridge's key
		}
		if c := e.Created(); !c.IsZero() && h.Time.After(c) {
			h.Time = c // no heartbeat is younger than the server's record of it
		}
		bridges.Put(h)
	}
	return bridges
}

// kafkaBridges reads the bridges' heartbeats from the Kafka bridges topic;
// nil, with a warning, when it cannot (no stretch out of scope is then
// marked).
func (a *app) kafkaBridges(ctx context.Context, sf *sourceFlags) *publish.Bridges {
	cfg, err := sf.kafkaConfig(a.log)
	if err != nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, ownersRead)
	defer cancel()
	bridges, err := kafkasink.ReadBridges(rctx, cfg)
	if err != nil {
		a.log.Warn("could not read the bridges' heartbeats: groups their bridges no longer observe are not marked as such", "topic", kafkasink.DefaultBridgesTopic, "err", err)
		return nil
	}
	return bridges
}

// scopeMarks returns what marks, in each batch, the groups their bridges
// no longer observe (markOutOfScope), with the heartbeats of src (audit
// logs' heartbeat files, the bridges bucket, or the bridges topic) and the
// owners view (owners, nil for audit logs), read at the first batch.
func (a *app) scopeMarks(ctx context.Context, sf *sourceFlags, src string, files []string, owners func() (map[string]ownerNow, error)) func([]publish.Event, []audit.Tenure) []audit.Tenure {
	var bridges *publish.Bridges
	var view map[string]ownerNow
	read := false
	return func(events []publish.Event, ts []audit.Tenure) []audit.Tenure {
		if !read {
			read = true
			switch src {
			case "":
				bridges = a.auditBridgesQuiet(files)
			case "nats":
				bridges = a.natsBridges(ctx, sf)
			case "kafka":
				bridges = a.kafkaBridges(ctx, sf)
			}
			if owners != nil {
				view, _ = owners() // unread: every mark stays
			}
		}
		return markOutOfScope(bridges, events, ts, view)
	}
}

// auditBridgesQuiet reads the heartbeats beside the audit logs in files,
// as auditBridges does but without its warnings (judge gives them).
func (a *app) auditBridgesQuiet(files []string) *publish.Bridges {
	bridges := publish.NewBridges()
	for _, f := range files {
		if h, found, err := audit.ReadHeartbeat(f); err == nil && found {
			bridges.Put(h)
		}
	}
	return bridges
}
