package bridge

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// observe runs one observer per watched group and one discoverer per root
// until ctx ends, then waits for them all. role is what the bridge becomes
// once every group is registered, so readiness cannot be claimed before the
// snapshots are out ("" leaves the role to the caller).
func (b *Bridge) observe(ctx context.Context, s *elect.Session, role Role) {
	wait := b.startObserving(ctx, s)
	if role != "" {
		b.setRole(role)
	}
	<-ctx.Done()
	wait()
}

// startObserving registers every watched group as pending and every root
// as awaiting its listing, starts their observers and discoverers, and
// returns a function that waits for them once ctx has ended.
func (b *Bridge) startObserving(ctx context.Context, s *elect.Session) (wait func()) {
	b.markAll("") // groups of an earlier session come back as they are found
	b.syncLeader(ctx, s)
	gs := &groupSet{b: b, s: s, ctx: ctx, running: map[string]*follower{}}
	many, err := elect.ObserveMany(ctx, s, elect.Resync(b.cfg.Resync), elect.ResyncSooner(ResyncRate, ResyncFloor), elect.OnGroupError(b.cfg.MaxRetryWait, func(group string, err error, in time.Duration) {
		if errors.Is(err, elect.ErrNotAGroup) && gs.skipNotAGroup(group) {
			return
		}
		b.log.Warn("cannot read group, retrying", "group", group, "in", in.Round(time.Millisecond), "err", err)
		b.groupReadFailed(group, err)
		b.live.changed(group)
	}))
	if err != nil { // only a nil session: a bug, say so loudly
		b.log.Error("cannot observe groups", "err", err)
	}
	gs.many = many
	if many != nil {
		b.mu.Lock()
		b.restate, b.refresh = many.Restate, many.Refresh
		b.settle, b.observing = gs.settle, gs.observing
		b.mu.Unlock()
	}
	var wg sync.WaitGroup
	if many != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gs.publish(ctx)
		}()
	}
	for _, g := range b.cfg.Watch {
		gs.add(g, "")
	}
	for p := range b.cfg.Leaders {
		gs.add(p, "")
	}
	if len(b.cfg.Leaders) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.warnMissingParents(ctx, s)
		}()
	}
	roots := b.discoverRoots()
	for _, r := range roots {
		b.setDiscovering(r.Root, true)
		b.setUnlisted(r.Root, true)
	}
	for _, r := range roots {
		wg.Add(1)
		w := b.newListWatch(nil)
		go func() {
			defer wg.Done()
			b.discover(ctx, s, r.Root, r.Segs, gs, w)
		}()
	}
	if len(roots) > 0 {
		b.setAdopting(true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer b.setAdopting(false)
			b.adoptReported(ctx, gs)
		}()
	}
	return func() {
		wg.Wait()
		gs.wait()
		for _, r := range roots {
			b.setDiscovering(r.Root, false)
			b.setUnlisted(r.Root, false)
		}
	}
}

// warnMissingParents warns, once a session, of each --leader whose parent
// does not exist: it is observed, and published as having no leader,
// which a wrong chroot (/controller for Kafka under /kafka) would make
// look like a system without one.
func (b *Bridge) warnMissingParents(ctx context.Context, s *elect.Session) {
	for p := range b.cfg.Leaders {
		dir := path.Dir(p)
		missing := make(chan bool, 1)
		go func() {
			ok, _, err := s.Conn().Exists(dir)
			missing <- err == nil && !ok
		}()
		var m bool
		select {
		case <-ctx.Done():
			return // a silent connection must not hold up the observers' stop
		case m = <-missing:
		}
		if m {
			b.log.Warn("the parent of a --leader does not exist, so nothing can lead there yet: its events say no owner until it is made; check the path and the chroot the system is configured with (Kafka's zookeeper.connect=zk1:2181/kafka puts its controller at /kafka/controller)",
				"leader", p, "missing", dir)
		}
	}
}

// reportedOwner is the owner of the groups adoptReported observes.
const reportedOwner = "reported"

// adoptReported observes, once every discover root was listed, each group
// the sinks last reported with an owner (or this bridge published an owner
// of since, noteReported) that was not found under its root: it is gone
// (deleted while no bridge looked, or while this one had no session). Its observer
// publishes that, measured against the report (the owner's end, unseen,
// as a gap), instead of leaving the old owner in the sinks, where this
// bridge's heartbeats would confirm it.
func (b *Bridge) adoptReported(ctx context.Context, gs *groupSet) {
	for {
		b.mu.Lock()
		n := len(b.unlisted)
		b.mu.Unlock()
		if n == 0 {
			break
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return
		}
	}
	b.viewMu.Lock()
	var owned []string
	for g, r := range b.reported {
		if r.owned {
			owned = append(owned, g)
		}
	}
	b.viewMu.Unlock()
	for _, g := range owned {
		if !gs.observing(g) {
			b.log.Info("a group last reported with an owner is not under its root any more; observing it to publish its end", "group", g)
			gs.add(g, reportedOwner)
			gs.wg.Add(1)
			go gs.releaseReported(g)
		}
	}
}

// releaseReported lets go of a group adoptReported observes once its
// observer has published that nobody owns it (it is gone, most likely):
// a group that does not exist is not a group without an owner, whose
// ownerless time would grow, and alert, for ever. A root that wants the
// group meanwhile (made again) keeps it observed; one found owned stays
// observed, so that its owner's end is published too.
func (gs *groupSet) releaseReported(group string) {
	defer gs.wg.Done()
	for sleep(gs.ctx, 100*time.Millisecond) {
		gs.b.mu.Lock()
		st := gs.b.groups[group]
		gs.b.mu.Unlock()
		if st == GroupLive && gs.b.truthOwner(group) == "" {
			gs.remove(group, reportedOwner)
			return
		}
	}
}

// groupSet is the set of groups observed in one term of activity. A group
// may be wanted by --watch and by a discover root at once; it is observed
// once, for as long as anyone wants it.
type groupSet struct {
	b   *Bridge
	s   *elect.Session
	ctx context.Context

	// many observes every group and single-node leader; taken counts
	// the changes publish has taken from it and handled.
	many  *elect.Many
	taken atomic.Uint64

	mu      sync.Mutex
	running map[string]*follower
	wg      sync.WaitGroup
	// notGroups are discovered children found to be ephemeral nodes (a
	// broker's registration, a single-node leader), by the root that
	// found them: skipped until they leave its listing.
	notGroups map[string]string
	// warnedRoots: roots whose first such child was logged.
	warnedRoots map[string]bool
	// listed is, for a root with skipped children, its last listing.
	listed map[string]map[string]bool
}

type follower struct {
	cancel context.CancelFunc
	// owners want the group: "" for --watch, else a discover root
	// (usually one; a slice costs less than a map for each of 100,000).
	owners []string
	// leaving: no root wants the group, and it is observed until its
	// owner's end is published (see leave).
	leaving bool
}

// add observes group on behalf of owner ("" for Watch, else a root).
func (gs *groupSet) add(group, owner string) {
	if !gs.b.cfg.Shard.Owns(group) {
		return // another shard's
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.ctx.Err() != nil {
		return
	}
	if _, skip := gs.notGroups[group]; skip && owner != "" && owner != reportedOwner {
		return
	}
	if f, ok := gs.running[group]; ok {
		if !slices.Contains(f.owners, owner) {
			f.owners = append(f.owners, owner)
		}
		return
	}
	if gs.many != nil {
		gs.running[group] = &follower{owners: []string{owner}}
		gs.b.setGroup(gs.ctx, group, GroupPending)
		gs.b.log.Debug("observing group", "group", group, "root", owner)
		opts := gs.b.since(group, gs.b.cfg.recipeFor(group))
		var err error
		if sn, single := gs.b.leaderNode(group); single {
			err = gs.many.AddSingle(group, gs.b.counted(sn), opts...)
		} else {
			err = gs.many.Add(group, opts...)
		}
		if err != nil {
			gs.b.log.Error("cannot observe group", "group", group, "err", err)
			gs.b.setGroup(gs.ctx, group, GroupUnknown)
		}
		return
	}
	ctx, cancel := context.WithCancel(gs.ctx)
	gs.running[group] = &follower{cancel: cancel, owners: []string{owner}}
	gs.b.setGroup(ctx, group, GroupPending)
	gs.b.log.Info("observing group", "group", group, "root", owner)
	gs.wg.Add(1)
	go func() {
		defer gs.wg.Done()
		gs.b.follow(ctx, gs.ctx, gs.s, group, gs.b.cfg.recipeFor(group))
	}()
}

// remove stops observing group on behalf of owner; the group is dropped
// when nobody wants it any more.
func (gs *groupSet) remove(group, owner string) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	f, ok := gs.running[group]
	if !ok || gs.ctx.Err() != nil {
		// The term is ending (and with it every observation): the group's
		// state and last view stay for the next term to measure against.
		return
	}
	f.owners = slices.DeleteFunc(f.owners, func(o string) bool { return o == owner })
	if len(f.owners) > 0 || f.leaving {
		return
	}
	if gs.b.truthOwner(group) != "" {
		// A group that left its root's listing (deleted, most likely)
		// while it had an owner: its observer, which reads the group
		// gone, has the owner's end to publish, and cancelling it now
		// would leave that owner in the sinks, confirmed by every
		// heartbeat. It goes once the end is published, or after
		// goneWait.
		f.leaving = true
		gs.wg.Add(1)
		go gs.leave(group, owner, f)
		return
	}
	gs.drop(group, owner, f)
}

// goneWait bounds how long a group that left its root's listing with an
// owner is still observed for its observer to publish the owner's end.
var goneWait = 5 * time.Second

// leave drops group, which no root wants any more, once the bridge holds
// no owner for it (its observer published the end), after goneWait at
// the most, unless a root wants it again meanwhile (made again).
func (gs *groupSet) leave(group, owner string, f *follower) {
	defer gs.wg.Done()
	deadline := time.Now().Add(goneWait)
	for gs.b.truthOwner(group) != "" && time.Now().Before(deadline) {
		if !sleep(gs.ctx, 20*time.Millisecond) {
			return // the term ends: the next one measures against the last view
		}
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	f.leaving = false
	if gs.running[group] != f || len(f.owners) > 0 || gs.ctx.Err() != nil {
		return // wanted again, or the term ended
	}
	if o := gs.b.truthOwner(group); o != "" {
		gs.b.log.Warn("stopped observing a group that left its root's listing before its observer published its owner's end; the owners store may still name that owner", "group", group, "owner", o, "waited", goneWait)
	}
	gs.drop(group, owner, f)
}

// drop stops observing group for good. gs.mu is held.
func (gs *groupSet) drop(group, owner string, f *follower) {
	if f.cancel != nil {
		f.cancel()
	} else {
		gs.many.Remove(group)
	}
	delete(gs.running, group)
	gs.b.dropGroup(group)
	gs.b.log.Info("stopped observing group", "group", group, "root", owner)
}

// skipNotAGroup stops observing group, an ephemeral node, when only
// discover roots want it: an ephemeral child of a root (Kafka's
// /brokers/ids/1 under --discover /brokers/ids) is a registration or a
// single-node leader, not a group, and is skipped quietly, once logged per
// root, until it leaves the root's listing. A group given to Watch is
// still refused loudly (false): that is a mistake to fix.
func (gs *groupSet) skipNotAGroup(group string) bool {
	gs.mu.Lock()
	f, ok := gs.running[group]
	if !ok || gs.ctx.Err() != nil || slices.Contains(f.owners, "") || slices.Contains(f.owners, reportedOwner) {
		gs.mu.Unlock()
		return ok && gs.ctx.Err() != nil
	}
	if gs.notGroups == nil {
		gs.notGroups, gs.warnedRoots = map[string]string{}, map[string]bool{}
	}
	root := f.owners[0]
	gs.notGroups[group] = root
	first := !gs.warnedRoots[root]
	gs.warnedRoots[root] = true
	owners := slices.Clone(f.owners)
	gs.wg.Add(1) // recheckWhenChanged, below
	gs.mu.Unlock()
	for _, o := range owners {
		gs.remove(group, o)
	}
	msg := "a discover root's child is an ephemeral node, not a group (a registration or a single-node leader); skipping it and any like it under this root (observe a leader node with --leader PATH or a --preset)"
	if first {
		gs.b.log.Info(msg, "root", root, "child", group)
	} else {
		gs.b.log.Debug(msg, "root", root, "child", group)
	}
	go func() {
		defer gs.wg.Done()
		gs.recheckWhenChanged(group, root)
	}()
	return true
}

// recheckWhenChanged waits for the skipped node to change (deleted, or
// written), then forgets the skip and, when the node is there and its
// root last listed it, observes it again: a registration that went and
// came back as a group between two of the root's listings is not skipped
// for good.
func (gs *groupSet) recheckWhenChanged(group, root string) {
	forget := func() (listed bool) {
		gs.mu.Lock()
		defer gs.mu.Unlock()
		if gs.notGroups[group] == root {
			delete(gs.notGroups, group)
		}
		return gs.listed[root][topChild(root, group)]
	}
	ok, ch, err := existsW(gs.ctx, gs.s.Conn(), group)
	if err != nil || !ok {
		forget() // the root's next listing looks again
		return
	}
	select {
	case <-ch:
	case <-gs.ctx.Done():
		return
	}
	if forget() {
		if ok, _, _ := existsW(gs.ctx, gs.s.Conn(), group); ok {
			gs.add(group, root)
		}
	}
}

// topChild is the child of root that group is, or is below.
func topChild(root, group string) string {
	return path.Join(root, strings.Split(strings.TrimPrefix(group, root+"/"), "/")[0])
}

// forgetNotGroups forgets the skipped children of root that are no longer
// in its listing (want), so that a node made again under that name is
// looked at again.
func (gs *groupSet) forgetNotGroups(root string, want map[string]bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	skips := false
	for g, r := range gs.notGroups {
		if r != root {
			continue
		}
		if !want[topChild(root, g)] {
			delete(gs.notGroups, g)
		} else {
			skips = true
		}
	}
	if skips {
		if gs.listed == nil {
			gs.listed = map[string]map[string]bool{}
		}
		gs.listed[root] = want
	} else {
		delete(gs.listed, root)
	}
}

// owned lists the groups a root owns.
func (gs *groupSet) owned(owner string) map[string]bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	out := map[string]bool{}
	for g, f := range gs.running {
		if slices.Contains(f.owners, owner) {
			out[g] = true
		}
	}
	return out
}

// publish applies the changes of every group observed through many,
// until it stops, then keeps each group's last view for the next session.
func (gs *groupSet) publish(ctx context.Context) {
	for c := range gs.many.Changes() {
		if gs.observing(c.Group) {
			gs.b.apply(ctx, ctx, c)
		}
		gs.taken.Add(1)
	}
	views := gs.many.Lasts()
	gs.b.viewMu.Lock()
	defer gs.b.viewMu.Unlock()
	if gs.b.lastViews == nil {
		gs.b.lastViews = make(map[string]elect.View, len(views))
	}
	for g, v := range views {
		gs.b.lastViews[g] = v
	}
}

// settle returns once every change the session heard before the call is
// published (handed to the pipeline, or held while standing by): the
// observers have read every group it queued (elect.Many.Settle), and this
// loop has handled every change they sent. False when ctx ends first.
func (gs *groupSet) settle(ctx context.Context) bool {
	if !gs.many.Settle(ctx) {
		return false
	}
	sent := gs.many.Sent()
	for gs.taken.Load() < sent {
		select {
		case <-ctx.Done():
			return false
		case <-gs.many.Done():
			return false
		case <-time.After(2 * time.Millisecond): // polling interval, not ordering
		}
	}
	return true
}

// observing reports whether group is still wanted: a change read just
// before its group was dropped is not published.
func (gs *groupSet) observing(group string) bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	_, ok := gs.running[group]
	return ok
}

func (gs *groupSet) wait() {
	gs.mu.Lock()
	for _, f := range gs.running {
		if f.cancel != nil { // groups of many ended with it
			f.cancel()
		}
	}
	gs.mu.Unlock()
	gs.wg.Wait()
}

// follow observes one group until ctx ends or the session is lost,
// restarting the observer (with backoff) after any other failure.
func (b *Bridge) follow(ctx, term context.Context, s *elect.Session, group string, opts []elect.ObserveOption) {
	bo := b.backoff(200*time.Millisecond, b.cfg.MaxRetryWait)
	for {
		o, err := b.observeOne(ctx, s, group, b.since(group, opts))
		if err != nil {
			b.log.Error("cannot observe group", "group", group, "err", err)
			b.setGroup(ctx, group, GroupUnknown)
			return
		}
		for c := range o.Changes() {
			// Published as long as the term lasts: a change read before
			// the group was dropped (see groupSet.leave) is still true.
			if b.apply(ctx, term, c) {
				bo.Reset()
			}
		}
		b.keepView(group, o)
		err = o.Err()
		if ctx.Err() != nil || errors.Is(err, elect.ErrSessionLost) || errors.Is(err, elect.ErrSessionClosed) {
			return
		}
		wait := bo.NextBackOff()
		b.setGroup(ctx, group, GroupUnknown)
		b.log.Warn("observer stopped, restarting", "group", group, "in", wait.Round(time.Millisecond), "err", err)
		if !sleep(ctx, wait) {
			return
		}
	}
}

// apply records what a change says about its group (while ctx, the
// group's observation, lasts) and publishes its events, unless pub, the
// term, has ended (leadership or session lost): a bridge that may no
// longer know the truth publishes nothing. It reports whether it
// published.
func (b *Bridge) apply(ctx, pub context.Context, c elect.Change) bool {
	if pub.Err() != nil {
		return false
	}
	defer b.live.changed(c.Group)
	switch c.Kind {
	case elect.Unknown:
		b.setGroup(ctx, c.Group, GroupUnknown)
		b.log.Debug("group state unknown until reconnected", "group", c.Group)
		return false
	case elect.Snapshot:
		b.setGroup(ctx, c.Group, GroupLive)
		b.dateGone(pub, &c)
	}
	replaced := b.replacedEnsemble(c)
	c.Gap = c.Gap || replaced
	if ctx.Err() == nil { // a group dropped meanwhile keeps no figures
		b.countSuspects(c)
		if b.truth.see(c) {
			if c.Hazard != "" {
				b.log.Warn("two owners possible in a group: its clients misorder each other's nodes", "group", c.Group, "why", c.Hazard)
			} else {
				b.log.Info("a group's clients order each other's nodes again", "group", c.Group)
			}
		}
	}
	events := publish.Translate(c, b.cfg.Source, time.Now())
	if replaced {
		publish.MarkNewEnsemble(events)
	}
	b.live.record(events)
	published, err := b.deliver(pub, events)
	if err != nil {
		if pub.Err() == nil && !errors.Is(err, publish.ErrClosed) {
			b.log.Error("dropping a change the pipeline refused", "group", c.Group, "kind", c.Kind, "err", err)
		}
		return false
	}
	b.noteReported(c)
	b.noteZxid(c, replaced)
	if published {
		b.log.Debug("published", "group", c.Group, "kind", c.Kind, "events", len(events))
	}
	return true
}

// countSuspects counts the suspect nodes a change brings to light: each
// once as it joins, and those a snapshot finds.
func (b *Bridge) countSuspects(c elect.Change) {
	switch {
	case c.Kind == elect.Joined && c.Candidate != nil && c.Candidate.Suspect != "":
		b.suspects.Inc()
		b.log.Warn("suspect node in a group; not taken for an owner", "group", c.Group, "node", c.Candidate.Node, "why", c.Candidate.Suspect)
	case c.Kind == elect.Snapshot:
		for _, p := range c.Queue {
			if p.Suspect != "" {
				b.suspects.Inc()
				b.log.Warn("suspect node in a group; not taken for an owner", "group", c.Group, "node", p.Node, "why", p.Suspect)
			}
		}
	}
}

// since continues the group's last observation, if there was one (an
// observer on an earlier session, or one that failed, or what an earlier
// run or another bridge published, see resume.go): its first snapshot
// then says whether an owner may have come and gone in between. A report's
// epoch (0: it carried none) lets a single-node leader with one count the
// elections since exactly: one Kafka controller election while the bridge
// was down is then no gap.
func (b *Bridge) since(group string, opts []elect.ObserveOption) []elect.ObserveOption {
	b.viewMu.Lock()
	defer b.viewMu.Unlock()
	if v, ok := b.lastViews[group]; ok {
		return append(append([]elect.ObserveOption(nil), opts...), elect.Since(v))
	}
	if r, ok := b.resume[group]; ok {
		out := append(append([]elect.ObserveOption(nil), opts...), elect.AfterReport(r.Owner, r.Zxid, r.Recipe))
		if r.Epoch > 0 {
			out = append(out, elect.ReportEpoch(r.Epoch))
		}
		if r.OwnerID != "" {
			out = append(out, elect.ReportOwnerID(r.OwnerID))
		}
		return out
	}
	return opts
}

// keepView remembers the last view of an observer that ended.
func (b *Bridge) keepView(group string, o *elect.Observer) {
	v, ok := o.Last()
	if !ok {
		return
	}
	b.viewMu.Lock()
	defer b.viewMu.Unlock()
	if b.lastViews == nil {
		b.lastViews = map[string]elect.View{}
	}
	b.lastViews[group] = v
	delete(b.resume, group) // the view is newer
}

// discoverRoots are the roots whose descendants are found as they
// appear: each --discover root (every child a group) and each pattern.
func (b *Bridge) discoverRoots() []Pattern {
	var out []Pattern
	for _, r := range b.cfg.Discover {
		out = append(out, Pattern{Root: r, Segs: []string{"*"}})
	}
	return append(out, b.cfg.Patterns...)
}

// leaderNode says how to read group when it is a single-node leader.
func (b *Bridge) leaderNode(group string) (elect.SingleNode, bool) {
	if sn, ok := b.cfg.Leaders[group]; ok {
		return sn, true
	}
	for _, pt := range b.cfg.Patterns {
		if ok, _ := path.Match(pt.String(), group); ok && pt.Leader != nil {
			return *pt.Leader, true
		}
	}
	return elect.SingleNode{}, false
}

// counted is sn with its data that does not decode counted and logged,
// and a node there that is not taken for a leader's logged: its events
// say no owner, which alone read as if nothing stood there.
func (b *Bridge) counted(sn elect.SingleNode) elect.SingleNode {
	format := string(sn.Format)
	sn.OnFallback = func(p string, err error) {
		b.fallbacks.WithLabelValues(format).Inc()
		if p == sn.EpochPath {
			b.log.Warn("the epoch node beside a leader holds no epoch (written by someone else than its system); the leader's events carry no epoch, and a note saying why", "node", p, "format", format, "err", err)
			return
		}
		b.log.Warn("a leader's data does not decode as its system writes it; its events' note says how its owner is then named", "node", p, "format", format, "err", err)
	}
	sn.OnNotLeader = func(p, why string) {
		b.log.Warn("a node stands at a leader's path but is not taken for a leader's: its events say no owner, and a note saying why; check who wrote it", "node", p, "why", why)
	}
	return sn
}

// observeOne observes a queue group, or a single-node leader, whose data
// that does not decode is counted.
func (b *Bridge) observeOne(ctx context.Context, s *elect.Session, group string, opts []elect.ObserveOption) (*elect.Observer, error) {
	sn, ok := b.leaderNode(group)
	if !ok {
		return elect.Observe(ctx, s, group, opts...)
	}
	so, err := elect.ObserveSingle(ctx, s, group, b.counted(sn), opts...)
	if err != nil {
		return nil, err
	}
	return so.Observer, nil
}
