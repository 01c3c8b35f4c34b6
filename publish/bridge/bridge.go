package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Bridge observes ZooKeeper groups and publishes their changes to sinks.
// Build it with New, run it with Run; Status, Handler and HTTPAddr may be
// used at any time.
type Bridge struct {
	cfg Config
	// scope is which groups cfg observes, read once (Config.scope).
	scope *publish.Scope
	log   *slog.Logger
	pipe  *publish.Pipeline
	reg   *prometheus.Registry

	running atomic.Bool
	aborted atomic.Bool
	// failed is why the bridge stopped by itself (see fail).
	failed atomic.Pointer[error]
	// claimWarned: the source could not be claimed, and that was said
	// (see claimSource).
	claimWarned atomic.Bool
	abortMu     sync.Mutex
	abort       context.CancelFunc // cancels Run's context; nil until Run

	// caughtUp is when the live page last found the bridge caught up
	// after a stall of its process (see caughtUpAfterStall).
	stallMu  sync.Mutex
	caughtUp time.Time
	catching *catchUp // the try under way, nil for none

	mu       sync.Mutex
	session  *elect.Session
	sessions int
	role     Role
	groups   map[string]GroupState
	// readErrs holds, for groups not live, the last error reading them
	// (an ACL that refuses READ, ...): what keeps them pending.
	readErrs map[string]string
	// haErr is why the last HA campaign failed, "" once one joined.
	haErr string
	// unknownSince holds, for groups read before and unknown now, when
	// they turned unknown: the heartbeats do not confirm them (see
	// confirming).
	unknownSince map[string]time.Time
	// discovering holds the discover roots not listed yet in this term of
	// activity: their groups are not known, so the bridge is not ready.
	discovering map[string]bool
	// unlisted holds the discover roots not looked at yet in this term:
	// their groups are not known, so the heartbeats confirm nothing and
	// adoptReported waits. A root found missing (or an ephemeral node)
	// has been looked at: nothing is below it, though it stays in
	// discovering, as the bridge is not ready.
	unlisted map[string]bool
	// adopting says adoptReported has yet to take in the groups the
	// stores name an owner of that no root listed: till then those
	// owners, gone, would be confirmed by the heartbeats as current.
	adopting bool
	// rootErrs holds, for discover roots (and levels below them) whose
	// last listing failed, its error, until one succeeds.
	rootErrs map[string]string
	// lists holds the discoverers' watches (listwatch.go).
	lists listWatches
	// skipped is what the discoverers skip, not being groups (skip.go).
	skipped    skips
	sinkUp     map[string]bool // connected by Run at start
	httpAddr   string
	takeovers  prometheus.Counter
	sessionCnt prometheus.Counter
	suspects   prometheus.Counter
	replayed   prometheus.Counter
	fallbacks  *prometheus.CounterVec
	truth      *truth
	live       *live // what the live page follows (page.go)
	lease      lease // when the session last proved that it lives (lease.go)
	// leading: an HA bridge that won and was not deposed since; the
	// write gate's first question (lease.go).
	leading atomic.Bool

	// pubMu orders publishing against taking over: a standby holds the
	// events it observes (see replay.go).
	pubMu      sync.Mutex
	publishing bool
	held       []heldEvent
	// trimmed holds the groups whose held events were dropped for age
	// since the bridge began to stand by, or dropped from the sinks'
	// backlogs when it was deposed, and what is known of those events.
	trimmed map[string]droppedState
	// restate has a group read afresh and published with Gap (the
	// current ObserveMany's Restate; guarded by mu).
	restate, refresh func(group string)
	// settle waits until what the session heard is published (the
	// current observation's groupSet.settle; guarded by mu).
	settle func(ctx context.Context) bool
	// observing says whether the current observation observes a group
	// (groupSet.observing; guarded by mu).
	observing func(group string) bool
	// lastViews is each group's latest view, kept across observers (a
	// new session), so the next snapshot can tell what it missed.
	viewMu    sync.Mutex
	lastViews map[string]elect.View
	// resume is what was published last for each group not observed yet
	// in this run (Config.Resume and the sinks' reports, resume.go).
	resume map[string]Resume
	// reported is what the stores say of each group, as read at start
	// and kept up to date with what this bridge publishes since (see
	// reportedGroup): one map, where two cost a bridge of 100,000
	// groups twice the entries. synced is the session whose server was
	// synced with its leader before its groups were read.
	reported map[string]reportedGroup
	synced   *elect.Session
}

// New checks cfg and builds a bridge and its pipeline. It touches no
// network: Run does. On error the sinks are left to the caller; after a
// successful New the bridge owns them and Run closes them.
func New(cfg Config) (*Bridge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bridge{
		cfg:    cfg,
		scope:  cfg.scope(),
		log:    cfg.Logger,
		reg:    prometheus.NewRegistry(),
		role:   RoleStarting,
		groups: map[string]GroupState{},
		sinkUp: map[string]bool{},
	}
	opts := []publish.Option{publish.WithSource(cfg.Source), publish.WithRegisterer(b.reg)}
	for _, n := range cfg.Lossless {
		opts = append(opts, publish.Lossless(n))
	}
	if cfg.HAPath != "" {
		opts = append(opts, publish.WithWriteGate(b.mayWrite))
	}
	opts = append(opts, cfg.PipelineOptions...)
	pipe, err := publish.New(cfg.Sinks, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	b.pipe = pipe
	if err := b.registerMetrics(); err != nil {
		_ = pipe.Close(context.Background())
		return nil, err
	}
	return b, nil
}

// shardLabel labels the bridge's role by its shard, so that a shard with
// no active bridge shows, not only a fleet with none.
func (b *Bridge) shardLabel() prometheus.Labels {
	if sh := b.cfg.Shard; sh != (Shard{}) {
		return prometheus.Labels{"shard": fmt.Sprintf("%d/%d", sh.K, sh.N)}
	}
	return nil
}

func (b *Bridge) registerMetrics() error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	b.takeovers = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "herald_bridge_activations_total",
		Help: "Times this bridge became active (at start without HA, on every won election with HA).",
	})
	b.sessionCnt = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "herald_zk_sessions_total",
		Help: "ZooKeeper sessions this bridge opened (more than one means sessions expired).",
	})
	b.truth = newTruth(b.cfg.GroupMetricsLimit)
	b.truth.unknown = b.unknownGroups
	b.live = newLive()
	b.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_leader_decode_fallbacks_total",
		Help: "Single-node leaders whose data did not decode as their system writes it (the owner's id is then the raw form), by format.",
	}, []string{"format"})
	b.replayed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "herald_ha_replayed_events_total",
		Help: "Events a standby held and published when it took over (most are duplicates the sinks drop by id).",
	})
	b.suspects = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "herald_suspect_nodes_total",
		Help: "Queue nodes seen that cannot be what the queue says (not ephemeral, or appeared below the owner); never reported as owners.",
	})
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfoMetric(),
		b.takeovers, b.sessionCnt, b.suspects, b.replayed, b.truth, b.fallbacks,
		gauge("herald_zk_session_state", "ZooKeeper session state: 0 connecting, 1 connected, 2 suspended, 3 lost, 4 closed.",
			func() float64 { st, _ := b.sessionState(); return float64(st) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_bridge_active",
			Help:        "1 while this bridge observes and publishes, 0 while it starts, stands by or stops; labelled with its shard (K/N) when sharded.",
			ConstLabels: b.shardLabel()},
			func() float64 {
				if b.roleNow() == RoleActive {
					return 1
				}
				return 0
			}),
		gauge("herald_bridge_shards", "How many shards the groups are split into (N of --shard K/N; 1 unsharded): the alerts count the shards some bridge reports against it.",
			func() float64 { return float64(max(b.cfg.Shard.N, 1)) }),
		gauge("herald_groups_unknown", "Observed groups whose state is not known (no snapshot yet, or the connection is lost).",
			func() float64 { _, unknown := b.groupCounts(); return float64(unknown) }),
		gauge("herald_groups_observed", "Groups this bridge observes now.",
			func() float64 { observed, _ := b.groupCounts(); return float64(observed) }),
	}
	for _, c := range cs {
		if err := b.reg.Register(c); err != nil {
			return fmt.Errorf("bridge: register metrics: %w", err)
		}
	}
	return nil
}

// Registry is the Prometheus registry holding the bridge's and the
// pipeline's metrics, served on /metrics.
func (b *Bridge) Registry() *prometheus.Registry { return b.reg }

// Pipeline is the bridge's pipeline (for its Stats).
func (b *Bridge) Pipeline() *publish.Pipeline { return b.pipe }

// Source is the name the bridge stamps on events and campaigns with.
func (b *Bridge) Source() string { return b.cfg.Source }

// HTTPAddr is the address Run serves HTTP on, once it listens ("" before,
// or without Config.HTTPAddr).
func (b *Bridge) HTTPAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.httpAddr
}

// roleNow is the bridge's role.
func (b *Bridge) roleNow() Role {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.role
}

func (b *Bridge) sessionState() (elect.State, *elect.Session) {
	b.mu.Lock()
	s := b.session
	b.mu.Unlock()
	if s == nil {
		return elect.StateConnecting, nil
	}
	st, _ := s.State()
	return st, s
}

// groupCounts counts the groups the bridge observes, and those of them
// not live (Status.Unknown), without copying them: the gauges took Status,
// a copy of the whole map each, some 2 MB of garbage a scrape at 10,000
// groups.
func (b *Bridge) groupCounts() (observed, unknown int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, st := range b.groups {
		if st != GroupLive {
			unknown++
		}
	}
	return len(b.groups), unknown
}

// Status reports the bridge's current state.
func (b *Bridge) Status() Status {
	h := b.headline()
	out := Status{Session: h.Session, SessionID: h.SessionID, Sessions: h.Sessions, Role: h.Role, Shard: h.Shard,
		Sinks: h.Sinks, Published: h.Published}
	b.mu.Lock()
	defer b.mu.Unlock()
	out.HAError = b.haErr
	out.Groups = make(map[string]GroupState, len(b.groups))
	for g, gs := range b.groups {
		out.Groups[g] = gs
	}
	for g, e := range b.readErrs {
		if out.ReadErrors == nil {
			out.ReadErrors = map[string]string{}
		}
		out.ReadErrors[g] = e
	}
	for r := range b.discovering {
		out.Discovering = append(out.Discovering, r)
	}
	for r, e := range b.rootErrs {
		if out.ListErrors == nil {
			out.ListErrors = map[string]string{}
		}
		out.ListErrors[r] = e
	}
	sort.Strings(out.Discovering)
	return out
}

func (b *Bridge) setRole(r Role) {
	b.mu.Lock()
	prev := b.role
	b.role = r
	b.mu.Unlock()
	if prev != r {
		b.log.Info("bridge role", "from", prev, "to", r, "source", b.cfg.Source)
		if r == RoleActive {
			b.takeovers.Inc()
		}
	}
}

// setGroup records a group's state while ctx (the group's observation)
// lasts, so that a late change never resurrects a dropped group.
func (b *Bridge) setGroup(ctx context.Context, group string, st GroupState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ctx.Err() == nil {
		b.groups[group] = st
		b.noteUnknown(group, st)
	}
}

// unknownGroups lists the groups read before and unknown now (nil for
// none).
func (b *Bridge) unknownGroups() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.unknownSince) == 0 {
		return nil
	}
	out := make(map[string]bool, len(b.unknownSince))
	for g := range b.unknownSince {
		out[g] = true
	}
	return out
}

// noteUnknown keeps unknownSince up to date with a group's new state.
// b.mu must be held.
func (b *Bridge) noteUnknown(group string, st GroupState) {
	switch st {
	case GroupLive:
		delete(b.readErrs, group)
		delete(b.unknownSince, group)
	case GroupUnknown:
		if _, ok := b.unknownSince[group]; !ok {
			if b.unknownSince == nil {
				b.unknownSince = map[string]time.Time{}
			}
			b.unknownSince[group] = time.Now()
		}
	}
}

// groupReadFailed records why group could not be read, until it is live
// again.
func (b *Bridge) groupReadFailed(group string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.groups[group]; !ok {
		return // dropped
	}
	// A group live until now says Unknown through the changes, which may
	// not be applied yet: its next read that succeeds clears this.
	if b.readErrs == nil {
		b.readErrs = map[string]string{}
	}
	b.readErrs[group] = err.Error()
}

// readErr is the last error reading group while it is not live, "" when
// none.
func (b *Bridge) readErr(group string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readErrs[group]
}

func (b *Bridge) dropGroup(group string) {
	b.pipe.Forget(group)
	b.mu.Lock()
	delete(b.groups, group)
	delete(b.readErrs, group)
	delete(b.unknownSince, group)
	b.mu.Unlock()
	b.live.changed(group)
	b.truth.drop(group)
	b.viewMu.Lock()
	delete(b.lastViews, group)
	b.viewMu.Unlock()
}

// setDiscovering records whether root awaits its first listing.
func (b *Bridge) setDiscovering(root string, waiting bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.discovering == nil {
		b.discovering = map[string]bool{}
	}
	if waiting {
		b.discovering[root] = true
	} else {
		delete(b.discovering, root)
		delete(b.rootErrs, root)
	}
}

// setAdopting records whether adoptReported has yet to run (see adopting).
func (b *Bridge) setAdopting(v bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.adopting = v
}

// setUnlisted records whether root awaits its first look (see unlisted).
func (b *Bridge) setUnlisted(root string, waiting bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.unlisted == nil {
		b.unlisted = map[string]bool{}
	}
	if waiting {
		b.unlisted[root] = true
	} else {
		delete(b.unlisted, root)
	}
}

// discoverFailed records why root could not be listed, until it is. A
// root (or a pattern's level) listed before counts too: its discoverer
// holds the heartbeats back while it fails (awaitListings), and /readyz
// read ready meanwhile, though the bridge could confirm nothing.
func (b *Bridge) discoverFailed(root string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rootErrs == nil {
		b.rootErrs = map[string]string{}
	}
	b.rootErrs[root] = err.Error()
}

// forgetListError drops root's list error: its discoverer stopped.
func (b *Bridge) forgetListError(root string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.rootErrs, root)
}

// markAll sets every group's state (unknown after a lost session), or
// forgets them all when st is "".
func (b *Bridge) markAll(st GroupState) {
	defer b.live.changed("")
	b.mu.Lock()
	defer b.mu.Unlock()
	for g := range b.groups {
		if st == "" {
			delete(b.groups, g)
			delete(b.readErrs, g)
		} else {
			b.groups[g] = st
			b.noteUnknown(g, st)
		}
	}
}

// Run connects the sinks and ZooKeeper (each bounded by ConnectTimeout),
// then observes and publishes until ctx ends. It then stops observing,
// drains the pipeline within DrainTimeout, gives up HA leadership and closes
// the session. It returns nil after a complete drain, an error wrapping
// publish.ErrUndelivered when events were left, ErrAborted after Abort, or
// the error that kept it from starting.
func (b *Bridge) Run(ctx context.Context) error {
	if !b.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.abortMu.Lock()
	b.abort = cancel
	b.abortMu.Unlock()
	if b.aborted.Load() {
		cancel()
	}
	stopHTTP, err := b.serveHTTP()
	if err != nil {
		_ = b.pipe.Close(ctx)
		return err
	}
	defer stopHTTP()

	if err := b.connectSinks(ctx); err != nil {
		b.setRole(RoleStopped)
		return errors.Join(err, b.closePipe(ctx))
	}
	b.readReports(ctx)
	go func() { _ = b.pipe.Run(context.Background()) }() // ends with Close

	stopHeartbeat := b.startHeartbeat() // staleness (heartbeat.go): confirm while active; "stopped" before the drain
	handle, loopErr := b.loop(ctx)
	stopHeartbeat()
	return b.shutdown(handle, loopErr)
}

// Abort stops Run at once, as a crash would: nothing more is published,
// the backlog is dropped, the ZooKeeper session is closed without resigning
// (its ephemeral nodes go at once) and Run returns ErrAborted.
func (b *Bridge) Abort() {
	b.aborted.Store(true)
	b.abortMu.Lock()
	defer b.abortMu.Unlock()
	if b.abort != nil {
		b.abort()
	}
}

// fail stops Run, draining as on a signal, for a reason Run then returns:
// something no retry mends, such as bridges that shard differently.
func (b *Bridge) fail(err error) {
	if !b.failed.CompareAndSwap(nil, &err) {
		return
	}
	b.log.Error("stopping", "err", err)
	b.abortMu.Lock()
	defer b.abortMu.Unlock()
	if b.abort != nil {
		b.abort()
	}
}

// shutdown drains (unless aborted), resigns and closes the session.
func (b *Bridge) shutdown(handle *elect.Handle, loopErr error) error {
	b.setRole(RoleStopped)
	b.markAll("")
	var drainErr error
	if b.aborted.Load() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = b.pipe.Close(ctx)
	} else {
		drainErr = b.closePipe(context.Background())
	}
	_, s := b.sessionState()
	if handle != nil && !b.aborted.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := handle.Resign(ctx); err != nil {
			b.log.Warn("could not resign HA leadership; the standby takes over when the session closes", "err", err)
		}
		cancel()
	}
	if s != nil {
		_ = s.Close()
	}
	if f := b.failed.Load(); f != nil {
		loopErr = errors.Join(*f, loopErr)
	}
	switch {
	case b.aborted.Load():
		return ErrAborted
	case loopErr != nil:
		return errors.Join(loopErr, drainErr)
	}
	return drainErr
}

// closePipe drains the pipeline within DrainTimeout and logs what was left.
func (b *Bridge) closePipe(_ context.Context) error {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.DrainTimeout)
	defer cancel()
	start := time.Now()
	err := b.pipe.Close(ctx)
	var ue *publish.UndeliveredError
	if errors.As(err, &ue) {
		b.log.Error("stopped with events undelivered", "left", ue.Left, "stuck", ue.Stuck, "drain_timeout", b.cfg.DrainTimeout)
		return fmt.Errorf("bridge: drain: %w", err)
	}
	if err != nil {
		b.log.Warn("closing sinks", "err", err)
		return fmt.Errorf("bridge: close: %w", err)
	}
	b.log.Info("drained every sink", "in", time.Since(start).Round(time.Millisecond))
	return nil
}

// Run builds a bridge from cfg and runs it until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	b, err := New(cfg)
	if err != nil {
		return err
	}
	return b.Run(ctx)
}
