package main

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

func init() { register(newBridgeCmd) }

// bridgeFlags are the flags of herald bridge.
type bridgeFlags struct {
	watch, discover, recipes []string
	source, ha, httpAddr     string
	config                   string
	shard                    string
	drainTimeout             time.Duration
	haReplay                 time.Duration
	heartbeat                time.Duration
	resync                   time.Duration
	groupMetrics             int

	nats, natsMode, natsStore, natsListen string
	// natsReplicas, natsMaxAge, natsMaxBytes, natsDuplicates shape the
	// stream and buckets herald creates (an existing one is used as is).
	natsReplicas   int
	natsMaxAge     time.Duration
	natsMaxBytes   int64
	natsDuplicates time.Duration
	// secrets are the secret flags' file twins (secrets.go).
	secrets []*secretFlag

	kafka string
	// natsAuth and kafkaAuth are the connection flags every command shares
	// (connflags.go).
	natsAuth                          natsAuth
	kafkaAuth                         kafkaAuth
	kafkaEvents, kafkaOwners          string
	kafkaPartitions, kafkaReplication int

	audit string

	presets []string // --preset (preset.go)
	// leaderArgs is --leader; leaders are the single-node leaders it and
	// the presets name, patterns what the presets find below a root.
	leaderArgs []string
	leaders    map[string]elect.SingleNode
	patterns   []bridge.Pattern
}

const bridgeExample = `  # Observe two groups, publish to an embedded NATS server with JetStream:
  herald bridge --zk zk1:2181,zk2:2181,zk3:2181 --watch /jobs/nightly --watch /locks/db

  # Every child of /services is a group; publish to NATS, Kafka and an audit log,
  # serve metrics, and run as one of several hot copies:
  herald bridge --zk zk1:2181 --discover /services \
      --nats nats://nats:4222 --kafka kafka:9092 --audit /var/lib/herald/audit.log \
      --http :9090 --ha /herald/bridges --source bridge-a

  # The same from a file (keys are the flag names; flags override the file):
  herald bridge --config bridge.yaml
      zk: zk1:2181,zk2:2181,zk3:2181
      discover: [/services]
      nats: nats://nats:4222
      http: ":9090"
      ha: /herald/bridges`

func newBridgeCmd(a *app) *cobra.Command {
	var f bridgeFlags
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Publish every change of ZooKeeper elections and locks to NATS, Kafka and an audit log",
		Long: `herald bridge observes ZooKeeper elections and locks and publishes every change
as a typed event. It first publishes the current state of every group (a
snapshot), then each change as it happens. Groups are given with --watch, or
found as the children of a --discover root.

Without --nats and --kafka it serves an embedded NATS server with JetStream
and prints how to subscribe. With --ha, several bridges campaign for one
active copy; the others wait hot and take over with a fresh snapshot.

SIGTERM or Ctrl-C stops observing, then waits up to --drain-timeout for the
sinks to acknowledge what was published.`,
		Example: bridgeExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd, f.config); err != nil {
				return err
			}
			if err := a.checkConnectTimeout(); err != nil { // connect-timeout: 0s in the file
				return err
			}
			if err := a.useZKACL(f.ha != ""); err != nil { // its election's nodes; known after --config
				return err
			}
			if err := a.setupLog(); err != nil {
				return err
			}
			return runBridge(cmd, a, &f)
		},
	}
	cmd.AddCommand(newBridgeCheckCmd(a), newBridgeShardOfCmd(a))
	fl := cmd.Flags()
	fl.StringSliceVar(&f.watch, "watch", nil, "group path to observe (repeat, or separate with commas)")
	fl.StringSliceVar(&f.discover, "discover", nil, "root whose every child is a group to observe (repeat)")
	fl.StringSliceVar(&f.recipes, "recipe", nil, "PATH=election|lock: say what a watched group, a discover root's children or the groups a glob matches (/svc/*/leader) hold (default: read from node names; Kazoo Election and Curator LeaderSelector need it)")
	fl.StringVar(&f.source, "source", "", "name of this bridge in events and in the HA election (default herald-bridge@HOSTNAME)")
	fl.StringVar(&f.ha, "ha", "", "election path for running several bridges: only the leader publishes")
	fl.StringVar(&f.shard, "shard", "", "K/N: observe only shard K (0..N-1) of N, the groups whose path hashes to K (Prometheus' hashmod); with --ha, each shard elects its own active bridge below it")
	fl.IntVar(&f.groupMetrics, "group-metrics-limit", bridge.DefaultGroupMetricsLimit, "label truth metrics by group (seconds without an owner, owner changes, gaps, suspects) while at most this many groups are observed; aggregates only beyond it")
	fl.DurationVar(&f.haReplay, "ha-replay", bridge.DefaultHAReplay, "with --ha, how long a standby holds what it observes, to publish it when it takes over (keep it within the stream's duplicate window)")
	fl.StringVar(&f.httpAddr, "http", "", "serve /metrics, /healthz and /readyz on this address, e.g. :9090")
	fl.StringVar(&f.config, "config", "", "YAML file with the same keys as the flags (flags override it)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", bridge.DefaultDrainTimeout, "on stop, how long to wait for the sinks to acknowledge what was published")
	fl.DurationVar(&f.heartbeat, "heartbeat", publish.DefaultHeartbeat, "how often the active bridge confirms the owners it wrote to JetStream and Kafka (one record per bridge); readers call them stale after 3 heartbeats without one")

	fl.DurationVar(&f.resync, "resync", bridge.DefaultResync, "check every group at least once per this interval with one read that sets no watch (ZooKeeper tells a watcher nothing once it may not READ a node); with fewer groups more often, up to every 30s while that costs at most 33 reads a second; 0 checks none")
	fl.StringVar(&f.nats, "nats", "", "NATS URL(s), comma separated; empty with no --kafka: serve an embedded NATS server")
	fl.StringVar(&f.natsMode, "nats-mode", "jetstream", "jetstream (stream HERALD and owners bucket; core subscribers see the events too) or core (plain subjects only)")
	fl.StringVar(&f.natsStore, "nats-store", "", "embedded NATS: JetStream directory (default $XDG_STATE_HOME/herald/nats or ~/.local/state/herald/nats)")
	fl.StringVar(&f.natsListen, "nats-listen", "127.0.0.1:4222", "embedded NATS: address to listen on (port 0 picks a free one)")
	fl.IntVar(&f.natsReplicas, "nats-replicas", 0, "replicas of the stream and buckets herald creates (default 1; 3 or 5 on a NATS cluster)")
	fl.DurationVar(&f.natsMaxAge, "nats-max-age", 0, "drop events older than this from the stream herald creates (default: keep all)")
	fl.Int64Var(&f.natsMaxBytes, "nats-max-bytes", 0, "bound the stream herald creates to this many bytes, oldest events first (default: unbounded)")
	fl.DurationVar(&f.natsDuplicates, "nats-duplicates", 0, "the stream's de-duplication window (default 2m; keep --ha-replay within it)")

	fl.StringVar(&f.kafka, "kafka", "", "Kafka bootstrap brokers, host:port[,host:port...]")
	f.secrets = append(f.natsAuth.addFlags(fl), f.kafkaAuth.addFlags(fl)...)
	addSecretFiles(fl, f.secrets)
	fl.StringVar(&f.kafkaEvents, "kafka-events-topic", "", "Kafka topic for every event (default herald.events)")
	fl.StringVar(&f.kafkaOwners, "kafka-owners-topic", "", "compacted Kafka topic for current owners (default herald.owners)")
	fl.IntVar(&f.kafkaPartitions, "kafka-partitions", 0, "partitions of topics herald creates (default 3)")
	fl.IntVar(&f.kafkaReplication, "kafka-replication", 0, "replication factor of topics herald creates (default: the brokers')")

	fl.StringVar(&f.audit, "audit", "", "append every event to this audit log file (JSON lines)")
	addPresetFlag(fl, &f.presets)
	fl.StringSliceVar(&f.leaderArgs, "leader", nil, "PATH[=FORMAT]: observe a single-node leader (one EPHEMERAL node its winner creates, e.g. /kafka/controller); FORMAT decodes its data (default: by path)")
	return cmd
}

// check validates what the flags say, before anything is started.
func (f *bridgeFlags) check() error {
	if len(f.watch) == 0 && len(f.discover) == 0 && len(f.leaders) == 0 && len(f.patterns) == 0 && len(f.leaderArgs) == 0 {
		return usageErr("nothing to observe: give at least one --watch PATH (a group), --discover ROOT (whose children are groups), --leader PATH or --preset SYSTEM")
	}
	for _, l := range []struct {
		flag  string
		paths []string
	}{{"--watch", f.watch}, {"--discover", f.discover}} {
		for _, p := range l.paths {
			check := elect.ValidatePath
			if l.flag == "--discover" {
				check = bridge.ValidateRoot // "/" too: its children are groups
			}
			if err := check(p); err != nil {
				return usageErr("%s %q: %v", l.flag, p, err)
			}
			if strings.ContainsAny(p, "*?[") {
				return usageErr("%s", globAdvice(l.flag, p))
			}
		}
	}
	if f.ha != "" {
		if err := elect.ValidatePath(f.ha); err != nil {
			return usageErr("--ha %q: %v", f.ha, err)
		}
	}
	if _, err := bridge.ParseShard(f.shard); err != nil {
		return usageErr("--%v", err)
	}
	if f.httpAddr != "" {
		if err := checkHTTPAddr(f.httpAddr); err != nil {
			return err
		}
	}
	if f.drainTimeout <= 0 {
		return usageErr("--drain-timeout %v: give a positive duration, e.g. 10s", f.drainTimeout)
	}
	if f.groupMetrics <= 0 {
		return usageErr("--group-metrics-limit %d: give a positive number of groups", f.groupMetrics)
	}
	if f.resync < 0 || f.resync > 0 && f.resync < 100*time.Millisecond {
		return usageErr("--resync %v: give 0 (no checks) or at least 100ms, e.g. 5m", f.resync)
	}
	if f.heartbeat < 10*time.Millisecond {
		return usageErr("--heartbeat %v: give a duration of at least 10ms, e.g. 5s", f.heartbeat)
	}
	if f.haReplay <= 0 {
		return usageErr("--ha-replay %v: give a positive duration, e.g. 2m", f.haReplay)
	}
	switch f.natsMode {
	case "jetstream", "core":
	default:
		return usageErr("--nats-mode %q: want jetstream or core", f.natsMode)
	}
	if f.natsMode == "core" && f.nats == "" {
		return usageErr("--nats-mode core needs --nats URL (the embedded server always uses JetStream)")
	}
	if _, err := f.recipeMap(); err != nil {
		return err
	}
	return f.checkSinkFlags()
}

// checkHTTPAddr refuses, while the flags are read, an --http address the
// listener could not take: not [host]:port, or a port out of 0-65535 (0
// picks a free one; a service name, :http, is a port too).
func checkHTTPAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--http %q: want [host]:port, e.g. :9090 (%v)", addr, err)
	}
	if port != "" && strings.Trim(port, "0123456789") == "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return usageErr("--http %q: port %s is out of range: the port must be 0–65535, e.g. :9090", addr, port)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageErr("--http %q: port %q is not a port number: the port must be 0–65535, e.g. :9090", addr, port)
	}
	return nil
}

// globAdvice refuses a glob given to --watch or --discover, which take
// paths (a glob would be waited for as a node of that name), and says what
// does the job: --discover ROOT observes every child of ROOT.
func globAdvice(flag, p string) string {
	segs := strings.Split(p, "/")
	i := slices.IndexFunc(segs, func(s string) bool { return strings.ContainsAny(s, "*?[") })
	parent := strings.Join(segs[:i], "/")
	if parent == "" {
		parent = "/"
	}
	if i == len(segs)-1 && segs[i] == "*" {
		return fmt.Sprintf("%s %q: a path, not a glob; --discover %s observes every child of %s as a group", flag, p, parent, parent)
	}
	return fmt.Sprintf("%s %q: a path, not a glob; --discover ROOT observes every child of ROOT as a group (e.g. --discover %s), "+
		"groups deeper below need a --watch each or a --preset that knows the system's layout; globs are for --recipe only", flag, p, parent)
}

// recipeMap parses --recipe PATH=RECIPE. The recipe follows the last '='
// ('=' may appear in a ZooKeeper path).
func (f *bridgeFlags) recipeMap() (elect.RecipeRules, error) {
	out := elect.RecipeRules{}
	for _, r := range f.recipes {
		i := strings.LastIndex(r, "=")
		if i < 0 {
			return nil, usageErr("--recipe %q: want PATH=election or PATH=lock", r)
		}
		p, rec := r[:i], elect.Recipe(r[i+1:])
		if !rec.Known() {
			return nil, usageErr("--recipe %q: recipe %q is neither election nor lock", r, rec)
		}
		if was, twice := out[p]; twice && was != rec {
			return nil, usageErr("--recipe %s=%s and %s=%s: one path, two recipes; keep the one the group holds", p, was, p, rec)
		}
		out[p] = rec
	}
	if err := out.Validate(); err != nil {
		return nil, usageErr("--recipe: %v", err)
	}
	return out, nil
}

// bridgeConfig is the bridge's configuration from the flags (checked before),
// the sinks aside: runBridge checks it, then builds them.
func (f *bridgeFlags) bridgeConfig(a *app) (bridge.Config, error) {
	servers, err := a.servers()
	if err != nil {
		return bridge.Config{}, err
	}
	recipes, _ := f.recipeMap()
	zkAuth, err := a.zkAuth() // a bad --zk-auth-file is refused before the embedded NATS starts
	if err != nil {
		return bridge.Config{}, err
	}
	zkSec, err := a.zkSecurity()
	if err != nil {
		return bridge.Config{}, err
	}
	shard, _ := bridge.ParseShard(f.shard) // checked with the other flags
	return bridge.Config{
		DigestAuth:        zkAuth,
		SessionOptions:    zkSec,
		Leaders:           f.leaders,
		Patterns:          f.patterns,
		Servers:           servers,
		SessionTimeout:    a.sessionTimeout,
		ConnectTimeout:    a.connectTimeout,
		Watch:             f.watch,
		Discover:          f.discover,
		Recipes:           recipes,
		Source:            f.source,
		HAPath:            f.ha,
		Shard:             shard,
		HTTPAddr:          f.httpAddr,
		DrainTimeout:      f.drainTimeout,
		HAReplay:          f.haReplay,
		Heartbeat:         f.heartbeat,
		Resync:            resyncOf(f.resync),
		GroupMetricsLimit: f.groupMetrics,
		Logger:            a.log,
		// A sink that stops delivering is a WARN, its recovery an INFO.
		PipelineOptions: []publish.Option{publish.WithLogger(a.log)},
	}, nil
}

func runBridge(cmd *cobra.Command, a *app, f *bridgeFlags) error {
	if err := readSecretFiles(f.secrets); err != nil {
		return err
	}
	if err := f.applyPresets(a.log); err != nil {
		return err
	}
	if err := f.leaderFlags(); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	cfg, err := f.bridgeConfig(a)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	// A configuration that cannot run is refused before the sinks start
	// (an embedded NATS server, a Kafka dial).
	if err := cfg.ValidateBeforeSinks(); err != nil {
		if errors.Is(err, bridge.ErrConfig) {
			return usageErr("%v", err)
		}
		return err
	}
	sinks, lossless, stopNATS, err := f.sinks(ctx, a, cmd.OutOrStdout())
	if err != nil {
		return err
	}
	defer stopNATS()
	cfg.Sinks, cfg.Lossless = sinks, lossless
	b, err := bridge.New(cfg)
	if err != nil {
		for _, s := range sinks {
			_ = s.Close()
		}
		if errors.Is(err, bridge.ErrConfig) {
			return usageErr("%v", err)
		}
		return err
	}
	a.log.Info("bridge starting", "source", b.Source(), "zk", strings.Join(cfg.Servers, ","),
		"watch", f.watch, "discover", f.discover, "ha", f.ha, "shard", f.shard, "sinks", sinkNames(sinks))
	if err := b.Run(ctx); err != nil {
		if errors.Is(err, bridge.ErrSinkSettings) {
			return &exitError{code: exitConfig, err: err}
		}
		if errors.Is(err, bridge.ErrSinkUnreachable) || errors.Is(err, elect.ErrUnreachable) {
			return &exitError{code: exitUnreachable, err: err}
		}
		return err
	}
	a.log.Info("bridge stopped")
	return nil
}

// resyncOf is --resync as bridge.Config.Resync: 0 there is the default, so
// the flag's 0 (no checks) is bridge.NoResync.
func resyncOf(d time.Duration) time.Duration {
	if d == 0 {
		return bridge.NoResync
	}
	return d
}
