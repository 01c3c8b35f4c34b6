package bridge

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Pattern finds groups, or single-node leaders, below Root as they
// appear: Segs are the names of the levels below Root, "*" for every child
// (Hadoop HA's lock below every nameservice: ["*",
// "ActiveStandbyElectorLock"]; Solr's shard leaders: ["*", "leaders", "*",
// "leader"]). Leader says how to read what is found as a single-node
// leader; nil means a queue group.
type Pattern struct {
	Root   string
	Segs   []string
	Leader *elect.SingleNode
}

// String is the pattern as a path glob.
func (p Pattern) String() string { return path.Join(append([]string{p.Root}, p.Segs...)...) }

// Resume is the last report published for a group: the owner node ("" for
// none) as of Zxid.
type Resume = publish.LastReport

// Defaults of Config.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultConnectTimeout = 15 * time.Second
	DefaultDrainTimeout   = 10 * time.Second
	DefaultMaxRetryWait   = 5 * time.Second
	DefaultHAReplay       = 2 * time.Minute
	DefaultResync         = 5 * time.Minute
	// ResyncRate and ResyncFloor: the checks of Config.Resync come more
	// often than its interval where that costs ZooKeeper little, at most
	// ResyncRate a second, each group at most once per ResyncFloor (see
	// elect.ResyncSooner): 30 s for up to 990 groups, 5 minutes from
	// 9,900.
	ResyncRate  = 33
	ResyncFloor = 30 * time.Second
	// NoResync, as Config.Resync, checks no group beyond its watches.
	NoResync time.Duration = -1
)

// Config says what a bridge observes, where it publishes and how it runs.
type Config struct {
	// Servers are the ZooKeeper servers, host:port each.
	Servers []string
	// DigestAuth is "user:password" for ZooKeeper's digest scheme ("" for
	// none): the bridge's HA nodes then let this identity do anything and
	// everyone read.
	DigestAuth string
	// SessionOptions are added to every ZooKeeper session the bridge opens
	// (elect.WithTLS for a secureClientPort, elect.WithDefaultACL).
	SessionOptions []elect.SessionOption
	// SessionTimeout is the ZooKeeper session timeout asked for (default
	// 10s); the bridge accepts what the servers grant.
	SessionTimeout time.Duration
	// ConnectTimeout bounds how long Run tries, at start, to reach
	// ZooKeeper and each sink before giving up with an error naming what it
	// tried (default 15s). Once running, the bridge retries forever.
	ConnectTimeout time.Duration

	// Watch lists group paths (election or lock parents) to observe.
	Watch []string
	// Discover lists roots whose every child is a group: children are
	// observed as they appear and dropped as they disappear.
	Discover []string
	// Leaders are single-node leaders to observe (one EPHEMERAL node the
	// winner creates: Kafka's /controller, HBase's master, ...), by the
	// node's path, each read as its SingleNode says.
	Leaders map[string]elect.SingleNode
	// Patterns observe the groups or single-node leaders found below a
	// root as they appear (nameservices, collections, shards).
	Patterns []Pattern
	// Recipes optionally says whether a group is an election or a lock, by
	// group path, by discover root (for all its children) or by a glob
	// over group paths (see elect.RecipeRules). Without a rule the
	// observer reads it from the node names.
	Recipes elect.RecipeRules

	// Sinks receive the events; the bridge's pipeline owns and closes them.
	Sinks []publish.Sink
	// Lossless names sinks (by Sink.Name) whose backlog is never collapsed:
	// the audit log.
	Lossless []string
	// PipelineOptions are passed to publish.New after the bridge's own
	// (source, registerer, lossless).
	PipelineOptions []publish.Option

	// Source names this bridge in events, in its heartbeats and in the HA
	// election (default "herald-bridge@<hostname>", and with a Shard
	// "herald-bridge@<hostname>/shard-K-of-N"). Give every bridge its own:
	// a heartbeat vouches for every value its source wrote.
	Source string
	// HAPath, when set, makes the bridge campaign in an election at this
	// path: only the leader publishes; the others observe too and hold
	// what they see for HAReplay, to publish it when they take over.
	HAPath string
	// Shard, when set, makes the bridge observe only the groups of its
	// shard (see ShardOf); with HAPath its copies campaign in the shard's
	// own election below HAPath, so N shards with M copies each share the
	// work with one active bridge per shard.
	Shard Shard
	// GroupMetricsLimit is how many groups get metrics labelled by group
	// (seconds without an owner, owner changes, gaps, suspect nodes);
	// beyond it only the aggregates are kept (default 1000).
	GroupMetricsLimit int
	// Resume is what was published last for each group, for reports no
	// sink holds: the first snapshot of such a group says gap when a
	// tenure may have passed while no bridge was looking. Run adds what
	// its sinks report (publish.Reporter: the audit log, JetStream's
	// owners bucket, Kafka's owners topic); the newest report of a group
	// counts.
	Resume map[string]Resume
	// HAReplay is how long a standby holds the events it observes
	// (default 2m, the JetStream stream's duplicate window, so replayed
	// events the active bridge already published are dropped there).
	HAReplay time.Duration

	// HTTPAddr, when set, is where Run serves /metrics, /healthz and
	// /readyz (e.g. ":9090"; "127.0.0.1:0" picks a free port, see
	// HTTPAddr). Handler serves the same without a listener.
	HTTPAddr string

	// DrainTimeout bounds how long a graceful stop waits for the sinks to
	// acknowledge what was published (default 10s).
	DrainTimeout time.Duration
	// MaxRetryWait is the longest wait between attempts to open a new
	// ZooKeeper session, restart an observer or campaign again (default 5s).
	MaxRetryWait time.Duration
	// Heartbeat is how often the active bridge confirms the owners it
	// wrote in the sinks that keep them (JetStream, Kafka), with one record
	// per bridge (default publish.DefaultHeartbeat, 5s); readers call them
	// stale after 3 intervals without one. See heartbeat.go.
	Heartbeat time.Duration
	// Resync is how often at least every observed group is checked with
	// one read that sets no watch (spread evenly, default 5m, more often
	// with fewer groups, see ResyncRate; NoResync for none):
	// ZooKeeper sends no watch event to a session that may not read the
	// node, so a group whose ACL stops letting the bridge READ would
	// otherwise stay as it was last seen, confirmed by every heartbeat,
	// and its spent watch would not come back when READ does. A group the
	// check may not read turns unknown and unconfirmed (see
	// publish.Heartbeat.Unconfirmed) until it can be read; one that
	// changed unreported is read afresh.
	Resync time.Duration

	// Logger receives the bridge's log (default: none).
	Logger *slog.Logger
}

// withDefaults fills in zero values.
func (c Config) withDefaults() Config {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.MaxRetryWait == 0 {
		c.MaxRetryWait = DefaultMaxRetryWait
	}
	if c.HAReplay == 0 {
		c.HAReplay = DefaultHAReplay
	}
	switch {
	case c.Resync == 0:
		c.Resync = DefaultResync
	case c.Resync < 0:
		c.Resync = 0
	}
	if c.GroupMetricsLimit == 0 {
		c.GroupMetricsLimit = DefaultGroupMetricsLimit
	}
	if c.Source == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown-host"
		}
		c.Source = publish.Source("herald-bridge@", host)
		if sh := c.Shard; sh != (Shard{}) {
			// Each shard's bridges heartbeat under their own name: one
			// host runs a copy of several shards, and a heartbeat vouches
			// for every value its source wrote.
			c.Source += fmt.Sprintf("/shard-%d-of-%d", sh.K, sh.N)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ValidateRoot reports what is wrong with p as a discover root (or a
// pattern's root): a valid path, or "/" itself, whose children are groups
// save the server's own /zookeeper.
func ValidateRoot(p string) error {
	if p == "/" {
		return nil
	}
	return elect.ValidatePath(p)
}

// maxScopeWatch bounds the watched paths a heartbeat names in its scope.
const maxScopeWatch = 1000

// wideScope is sc with its watched paths, too many for every heartbeat,
// given as globs of their parents' children, or, past maxScopeWatch
// parents, of every path as deep as one of them. It keeps the rest of sc,
// the shard above all: a heartbeat without a scope confirmed every group,
// and a bridge restarted as another shard under the same source kept
// fresh the owners it wrote of groups that had moved to a shard with no
// bridge running.
func wideScope(sc *publish.Scope) *publish.Scope {
	out := *sc
	out.Watch = nil
	parents := map[string]bool{}
	depths := map[int]bool{}
	for _, w := range sc.Watch {
		parents[childGlob(path.Dir(w), []string{"*"})] = true
		depths[strings.Count(w, "/")] = true
	}
	globs := slices.Collect(maps.Keys(parents))
	if len(globs) > maxScopeWatch {
		globs = globs[:0]
		for d := range depths {
			globs = append(globs, strings.Repeat("/*", d))
		}
	}
	slices.Sort(globs)
	out.Patterns = append(slices.Clone(sc.Patterns), globs...)
	// The globs take in the watched paths' siblings too: the set narrows
	// them to the watched paths, for readers that know it.
	out.Wide, out.WatchSet = len(globs), publish.NewPathSet(sc.Watch)
	return &out
}

// scope is which groups the configuration observes (publish.Scope): what a
// heartbeat says it confirms.
func (c Config) scope() *publish.Scope {
	sc := &publish.Scope{Watch: slices.Clone(c.Watch), Discover: slices.Clone(c.Discover), ShardK: c.Shard.K, ShardN: c.Shard.N}
	for p := range c.Leaders {
		sc.Watch = append(sc.Watch, p)
	}
	slices.Sort(sc.Watch)
	for _, pt := range c.Patterns {
		sc.Patterns = append(sc.Patterns, pt.String())
	}
	return sc
}

// discovers reports the discover root or pattern root whose children (or
// deeper levels) p is, or lies below: p would be found as a group, or its
// children would.
func (c Config) discovers(p string) (string, bool) {
	roots := append([]string(nil), c.Discover...)
	for _, pt := range c.Patterns {
		roots = append(roots, pt.Root)
	}
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return r, true
		}
	}
	return "", false
}

// globCanMatch reports whether the recipe glob p matches a watched group
// (seen, but not a discover root itself: a glob names groups, and a
// root is none) or could match a group found below a discover root: one with
// more levels than the root, whose first levels match the root's.
func (c Config) globCanMatch(p string, seen map[string]string) bool {
	for g, what := range seen {
		if ok, _ := path.Match(p, g); ok && what != "discover" {
			return true
		}
	}
	roots := append([]string(nil), c.Discover...)
	for _, pt := range c.Patterns {
		roots = append(roots, pt.Root)
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, r := range roots {
		rs := strings.Split(strings.TrimPrefix(r, "/"), "/")
		if r == "/" {
			rs = nil
		}
		if len(segs) <= len(rs) {
			continue
		}
		under := true
		for i, seg := range rs {
			if ok, _ := path.Match(segs[i], seg); !ok {
				under = false
				break
			}
		}
		if under {
			return true
		}
	}
	return false
}

// Validate reports the first thing wrong with c, wrapped in ErrConfig, and
// what to do about it. Zero durations mean the defaults.
func (c Config) Validate() error { return c.validate(true) }

// ValidateBeforeSinks reports what Validate would, the sinks aside: for a
// caller that builds its sinks (starts a server, dials a broker) only for
// a configuration that can run.
func (c Config) ValidateBeforeSinks() error { return c.validate(false) }

func (c Config) validate(sinks bool) error {
	if err := c.validateServers(); err != nil {
		return err
	}
	seen, err := c.validateGroups()
	if err != nil {
		return err
	}
	for _, check := range []func() error{
		c.validatePatterns,
		func() error { return c.validateRecipes(seen) },
		func() error { return c.validateHA(seen) },
		func() error { return c.validateSinks(sinks) },
		c.validateTimes,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// badConfig is an ErrConfig saying what is wrong.
func badConfig(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

func (c Config) validateServers() error {
	if len(c.Servers) == 0 {
		return badConfig("no ZooKeeper servers: give host:port[,host:port...]")
	}
	for _, s := range c.Servers {
		if strings.TrimSpace(s) == "" || !strings.Contains(s, ":") {
			return badConfig("ZooKeeper server %q: want host:port", s)
		}
	}
	return nil
}

// validateGroups checks the paths watched, discovered and read as leaders,
// each given once; seen says how each was given.
func (c Config) validateGroups() (seen map[string]string, err error) {
	if len(c.Watch) == 0 && len(c.Discover) == 0 && len(c.Leaders) == 0 && len(c.Patterns) == 0 {
		return nil, badConfig("nothing to observe: give at least one group to watch or one root to discover")
	}
	seen = map[string]string{}
	for _, list := range []struct {
		what  string
		paths []string
	}{{"watch", c.Watch}, {"discover", c.Discover}} {
		for _, p := range list.paths {
			check := elect.ValidatePath
			if list.what == "discover" {
				check = ValidateRoot
			}
			if err := check(p); err != nil {
				return nil, fmt.Errorf("%w: %s %q: %w", ErrConfig, list.what, p, err)
			}
			if strings.ContainsAny(p, "*?[") {
				// Legal in a node's name, but a glob here is a mistake:
				// the bridge would wait for a node of that very name.
				return nil, badConfig("%s %q: a path, not a glob: Discover a root to observe all its children, or give Patterns (root and levels, \"*\" for every child) for groups deeper below", list.what, p)
			}
			if prev, dup := seen[p]; dup {
				return nil, badConfig("%s %q is already given as %s: give each path once", list.what, p, prev)
			}
			seen[p] = list.what
		}
	}
	for p := range c.Leaders {
		if err := elect.ValidatePath(p); err != nil {
			return nil, fmt.Errorf("%w: leader %q: %w", ErrConfig, p, err)
		}
		if prev, dup := seen[p]; dup {
			return nil, badConfig("leader %q is already given as %s: give each path once", p, prev)
		}
		seen[p] = "leader"
	}
	return seen, nil
}

func (c Config) validatePatterns() error {
	for _, pt := range c.Patterns {
		if err := ValidateRoot(pt.Root); err != nil {
			return fmt.Errorf("%w: pattern %q: %w", ErrConfig, pt, err)
		}
		if len(pt.Segs) == 0 || !slices.Contains(pt.Segs, "*") {
			return badConfig("pattern %q: give the levels below the root, at least one of them \"*\" (every child)", pt)
		}
		for _, seg := range pt.Segs {
			if seg == "" || strings.ContainsAny(seg, "/?[") || seg != "*" && strings.Contains(seg, "*") || elect.ValidatePath("/"+seg) != nil {
				return badConfig("pattern %q: level %q must be a node name or \"*\"", pt, seg)
			}
		}
	}
	return nil
}

// validateRecipes checks the recipe rules, each of which must be able to
// apply to a group observed (seen: see validateGroups).
func (c Config) validateRecipes(seen map[string]string) error {
	if err := c.Recipes.Validate(); err != nil {
		return fmt.Errorf("%w: recipe: %w", ErrConfig, err)
	}
	for p := range c.Recipes {
		if _, ok := seen[p]; !ok && !elect.IsPattern(p) {
			return badConfig("recipe rule for %q, which is neither watched nor discovered (a glob such as %q may name groups below them)", p, p+"/*")
		}
		if elect.IsPattern(p) && !c.globCanMatch(p, seen) {
			return badConfig("recipe rule for %q matches no watched group and nothing below a discover root, so it would never apply: check the path (a \"*\" stands for one level: %q matches /svc/a/leader, not /svc/leader)", p, "/svc/*/leader")
		}
	}
	return nil
}

// validateHA checks the bridges' own election and the shard.
func (c Config) validateHA(seen map[string]string) error {
	if c.HAPath != "" {
		if err := elect.ValidatePath(c.HAPath); err != nil {
			return fmt.Errorf("%w: HA path: %w", ErrConfig, err)
		}
		if seen[c.HAPath] == "watch" {
			return badConfig("HA path %q is also watched: give the bridges' own election a path of its own", c.HAPath)
		}
		if root, ok := c.discovers(c.HAPath); ok {
			// Its shards' elections would be found as groups, and each
			// shard would publish the others' bridges as owners.
			return badConfig("HA path %q is below the discover root %q, so the bridges' own elections would be published as groups: give --ha a path outside it", c.HAPath, root)
		}
		if sh, ok := parseShardNode(path.Base(c.HAPath)); ok {
			// The bridges log their shard's election; copied into --ha, it
			// would join a shard's election as a bridge of every group.
			return badConfig("HA path %q is the election of shard %s below %q: give every bridge of those shards --ha %s and its --shard (this one's would be %s)",
				c.HAPath, sh, path.Dir(c.HAPath), path.Dir(c.HAPath), sh)
		}
	}
	if sh := c.Shard; sh != (Shard{}) {
		if _, err := ParseShard(fmt.Sprintf("%d/%d", sh.K, sh.N)); err != nil {
			return badConfig("%v", err)
		}
	}
	return nil
}

// validateSinks checks the sinks given; required says there must be one.
func (c Config) validateSinks(required bool) error {
	if required && len(c.Sinks) == 0 {
		return badConfig("no sinks: give at least one (NATS, JetStream, Kafka or the audit log)")
	}
	for i, s := range c.Sinks {
		if s == nil {
			return badConfig("sink %d is nil", i)
		}
	}
	return nil
}

// validateTimes checks the durations, and the source.
func (c Config) validateTimes() error {
	for name, d := range map[string]time.Duration{
		"session timeout": c.SessionTimeout, "connect timeout": c.ConnectTimeout,
		"drain timeout": c.DrainTimeout, "max retry wait": c.MaxRetryWait, "HA replay window": c.HAReplay,
		"heartbeat": c.Heartbeat, "resync interval": max(c.Resync, 0),
	} {
		if d < 0 {
			return badConfig("%s %v is negative", name, d)
		}
	}
	if c.SessionTimeout != 0 && (c.SessionTimeout < 100*time.Millisecond || c.SessionTimeout > 10*time.Minute) {
		return badConfig("session timeout %v out of range: give 100ms to 10m", c.SessionTimeout)
	}
	if c.Source != "" { // empty means herald-bridge@<hostname>, built valid
		if err := publish.ValidateSource(c.Source); err != nil {
			return fmt.Errorf("%w: --source / Source (the CloudEvents source of this bridge's events): %w", ErrConfig, err)
		}
	}
	return nil
}

// recipeFor returns the observe options for a group: the recipe its rules
// give, else none (read from the names).
func (c Config) recipeFor(group string) []elect.ObserveOption {
	if r, ok := c.Recipes.For(group); ok {
		return []elect.ObserveOption{elect.AsRecipe(r)}
	}
	return nil
}
