package main

import (
	"context"
	"log/slog"
	"path"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/pflag"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
	"github.com/zkherald/herald/publish/bridge"
)

// Presets: where real systems keep their leaders in ZooKeeper (see
// README "Leaders of other systems"). "--preset NAME[=ARG]" expands to
// the paths and decoders the system uses; ARG is its chroot, znode parent
// or root when it is not the default.

// presetDef is one system's layout.
type presetDef struct {
	name  string
	about string
	// arg names ARG in help texts; def is its default ("" for the
	// ZooKeeper root); need says ARG is required.
	arg, def string
	need     bool
	expand   func(root string) presetSpec
}

// presetSpec is what a preset names, below its root.
type presetSpec struct {
	// leaders are single-node leaders at fixed paths.
	leaders []presetLeader
	// found are single-node leaders or queue groups found by walking a
	// pattern below a root (nameservices, collections and shards).
	found []presetPattern
	// groups are queue groups (Curator LeaderLatch and the like).
	groups []string
	// marks are persistent nodes the system makes under its root: when
	// neither they nor its leaders exist, the system is not there (a wrong
	// root, a wrong --zk), which who says rather than "no owner".
	marks []string
	// system names it in that message; root is where it was looked for.
	system, root string
}

type presetLeader struct {
	path string
	node elect.SingleNode
}

// presetPattern finds paths below root: each element of segs is a child
// name, or "*" for every child.
type presetPattern struct {
	root   string
	segs   []string
	format ident.Format // a single-node leader in this format; "" for a queue group
	what   string       // what is found, for messages ("nameservice")
}

// presets is the table, in the order help texts list it.
var presets = []presetDef{
	{name: "kafka", about: "Kafka's controller (ZooKeeper mode): /controller and its epoch /controller_epoch",
		arg: "CHROOT", expand: func(r string) presetSpec {
			ctrl := join(r, "controller")
			return presetSpec{leaders: []presetLeader{{ctrl, elect.SingleNode{Format: ident.Kafka, EpochPath: join(r, "controller_epoch")}}},
				marks: []string{join(r, "brokers"), join(r, "controller_epoch")}, system: "Kafka cluster"}
		}},
	{name: "hbase", about: "HBase's active master: <zookeeper.znode.parent>/master",
		arg: "ZNODE_PARENT", def: "/hbase", expand: func(r string) presetSpec {
			return presetSpec{leaders: []presetLeader{{join(r, "master"), elect.SingleNode{Format: ident.HBase}}},
				marks: []string{join(r, "rs"), join(r, "meta-region-server")}, system: "HBase cluster"}
		}},
	{name: "hadoop-ha", about: "HDFS NameNodes (and YARN ResourceManagers with PARENT=/yarn-leader-election): <parent>/<nameservice>/ActiveStandbyElectorLock",
		arg: "PARENT", def: "/hadoop-ha", expand: func(r string) presetSpec {
			return presetSpec{found: []presetPattern{{root: r, segs: []string{"*", "ActiveStandbyElectorLock"}, format: ident.HadoopHA, what: "nameservice"}}}
		}},
	{name: "solr", about: "Solr's overseer (/overseer_elect) and every shard leader (/collections/<c>/leaders/<shard>/leader)",
		arg: "CHROOT", expand: func(r string) presetSpec {
			return presetSpec{
				leaders: []presetLeader{{join(r, "overseer_elect/leader"), elect.SingleNode{Format: ident.SolrOverseer}}},
				found: []presetPattern{
					{root: join(r, "collections"), segs: []string{"*", "leaders", "*", "leader"}, format: ident.SolrLeader, what: "shard leader"},
					{root: join(r, "collections"), segs: []string{"*", "leader_elect", "*", "election"}, what: "shard election"},
				},
				groups: []string{join(r, "overseer_elect/election")},
				marks:  []string{join(r, "live_nodes"), join(r, "overseer_elect")}, system: "SolrCloud cluster",
			}
		}},
	{name: "druid", about: "Druid's coordinator and overlord leaders (Curator LeaderLatch): <base>/coordinator/_COORDINATOR, <base>/overlord/_OVERLORD",
		arg: "BASE", def: "/druid", expand: func(r string) presetSpec {
			return presetSpec{groups: []string{join(r, "coordinator/_COORDINATOR"), join(r, "overlord/_OVERLORD")},
				marks: []string{join(r, "coordinator"), join(r, "overlord"), join(r, "announcements")}, system: "Druid cluster"}
		}},
	{name: "storm", about: "Storm's leading Nimbus (Curator LeaderLatch): <storm.zookeeper.root>/leader-lock",
		arg: "ROOT", def: "/storm", expand: func(r string) presetSpec {
			return presetSpec{groups: []string{join(r, "leader-lock")},
				marks: []string{join(r, "leader-lock"), join(r, "nimbuses"), join(r, "supervisors")}, system: "Storm cluster"}
		}},
	{name: "pulsar", about: "Pulsar's load manager leader: /loadbalance/leader",
		arg: "CHROOT", expand: func(r string) presetSpec {
			return presetSpec{leaders: []presetLeader{{join(r, "loadbalance/leader"), elect.SingleNode{Format: ident.Pulsar}}},
				marks: []string{join(r, "loadbalance"), join(r, "admin")}, system: "Pulsar cluster"}
		}},
	{name: "helix", about: "a Helix cluster's controller: /<cluster>/CONTROLLER/LEADER",
		arg: "CLUSTER", need: true, expand: func(r string) presetSpec {
			return presetSpec{leaders: []presetLeader{{join(r, "CONTROLLER/LEADER"), elect.SingleNode{Format: ident.Helix}}},
				marks: []string{join(r, "CONTROLLER")}, system: "Helix cluster"}
		}},
}

// join appends a relative path to a root ("" or "/" for the ZooKeeper
// root).
func join(root, rel string) string { return path.Join("/", root, rel) }

// presetHelp is the flag's help text: every preset and its argument.
func presetHelp() string {
	names := make([]string, len(presets))
	for i, p := range presets {
		if p.need {
			names[i] = p.name + "=" + p.arg
		} else {
			names[i] = p.name + "[=" + p.arg + "]"
		}
	}
	return "observe the leaders a system keeps in ZooKeeper (repeat): " + strings.Join(names, ", ")
}

// addPresetFlag registers --preset on a command's flags.
func addPresetFlag(fl *pflag.FlagSet, into *[]string) {
	fl.StringSliceVar(into, "preset", nil, presetHelp())
}

// parsePreset reads "NAME[=ARG]": the preset and its root.
func parsePreset(s string) (presetDef, string, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
	for _, p := range presets {
		if p.name != name {
			continue
		}
		root := p.def
		if hasArg {
			root = arg
		}
		switch {
		case p.need && root == "":
			return p, "", usageErr("--preset %s needs its %s: --preset %s=%s", name, p.arg, name, p.arg)
		case p.need && !strings.HasPrefix(root, "/"):
			root = "/" + root // a Helix cluster is named, not a path
		}
		if root == "" || root == "/" {
			return p, "/", nil
		}
		if err := elect.ValidatePath(root); err != nil {
			return p, "", usageErr("--preset %s: %s %q: %v", name, p.arg, root, err)
		}
		return p, root, nil
	}
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.name
	}
	return presetDef{}, "", usageErr("--preset %q: unknown; want one of %s (NAME or NAME=%s)", name, strings.Join(names, ", "), "ROOT")
}

// expandPresets parses every --preset into its specs, in order.
func expandPresets(specs []string) ([]presetDef, []presetSpec, error) {
	var defs []presetDef
	var out []presetSpec
	for _, s := range specs {
		p, root, err := parsePreset(s)
		if err != nil {
			return nil, nil, err
		}
		defs = append(defs, p)
		sp := p.expand(root)
		sp.root = join(root, "")
		out = append(out, sp)
	}
	return defs, out, nil
}

// applyPresets adds f.presets to what the bridge observes: single-node
// leaders at fixed paths (f.leaders), leaders and groups found below a
// root as they appear (f.patterns: Hadoop HA's nameservices, Solr's
// collections and shards), and queue groups (LeaderLatch elections) to
// --watch; the preset's queue groups are elections.
func (f *bridgeFlags) applyPresets(log *slog.Logger) error {
	defs, specs, err := expandPresets(f.presets)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, p := range append(append([]string(nil), f.watch...), f.discover...) {
		have[p] = true
	}
	ruled := map[string]bool{}
	for _, r := range f.recipes {
		if i := strings.LastIndex(r, "="); i >= 0 {
			ruled[r[:i]] = true
		}
	}
	for i, sp := range specs {
		for _, l := range sp.leaders {
			f.addLeader(l.path, l.node)
		}
		for _, fp := range sp.found {
			pt := bridge.Pattern{Root: fp.root, Segs: fp.segs}
			if fp.format != "" {
				pt.Leader = &elect.SingleNode{Format: fp.format}
			} else {
				rule := pt.String() + "=" + string(elect.RecipeElection)
				if !ruled[pt.String()] {
					ruled[pt.String()] = true
					f.recipes = append(f.recipes, rule)
				}
			}
			f.patterns = append(f.patterns, pt)
		}
		log.Debug("preset expanded", "preset", defs[i].name, "leaders", len(sp.leaders), "patterns", len(sp.found), "groups", len(sp.groups))
		for _, g := range sp.groups {
			if !have[g] {
				have[g] = true
				f.watch = append(f.watch, g)
			}
			if !ruled[g] {
				ruled[g] = true
				f.recipes = append(f.recipes, g+"="+string(elect.RecipeElection))
			}
		}
	}
	return nil
}

// addLeader adds a single-node leader for the bridge to observe.
func (f *bridgeFlags) addLeader(p string, sn elect.SingleNode) {
	if f.leaders == nil {
		f.leaders = map[string]elect.SingleNode{}
	}
	f.leaders[p] = sn
}

// leaderFlags turns --leader PATH[=FORMAT] into single-node leaders. The
// format follows the last '=', as --recipe's recipe does ('=' may appear
// in a ZooKeeper path: PATH= takes the format by path).
func (f *bridgeFlags) leaderFlags() error {
	for _, l := range f.leaderArgs {
		p, format := l, ""
		if i := strings.LastIndex(l, "="); i >= 0 {
			p, format = l[:i], l[i+1:]
		}
		if err := elect.ValidatePath(p); err != nil {
			return usageErr("--leader %q: %v", l, err)
		}
		sn := elect.SingleNodeFor(p)
		if format != "" {
			fm, err := ident.ParseFormat(format)
			if err != nil {
				return usageErr("--leader %q: %v (the format follows the last '='; for a path with '=' and the format by path, end it with '=')", l, err)
			}
			sn.Format = fm
		}
		if had, ok := f.leaders[p]; ok && formatOf(had, p) != formatOf(sn, p) {
			// One node, one reading: the last given used to win, silently.
			return usageErr("--leader %q: %s is already observed as %s (by a --preset or an earlier --leader); give it once, with one format", l, p, formatOf(had, p))
		}
		f.addLeader(p, sn)
	}
	return nil
}

// formatOf is the format sn reads the node at p in, Auto resolved by path.
func formatOf(sn elect.SingleNode, p string) ident.Format {
	if sn.Format == "" || sn.Format == ident.Auto {
		return ident.ForPath(p)
	}
	return sn.Format
}

// presetTarget is one path a preset names, found in ZooKeeper.
type presetTarget struct {
	path   string
	single *elect.SingleNode // nil for a queue group
	// missing: a pattern found nothing; path is then its root and what
	// says what was looked for.
	missing string
}

// presetTargets lists what specs name, walking the patterns in ZooKeeper.
func presetTargets(ctx context.Context, c *zk.Conn, specs []presetSpec) ([]presetTarget, error) {
	var out []presetTarget
	for _, sp := range specs {
		if there, err := systemThere(ctx, c, sp); err != nil {
			return nil, err
		} else if !there {
			out = append(out, presetTarget{path: sp.root, missing: sp.system})
			continue
		}
		for _, l := range sp.leaders {
			node := l.node
			out = append(out, presetTarget{path: l.path, single: &node})
		}
		for _, g := range sp.groups {
			out = append(out, presetTarget{path: g})
		}
		for _, fp := range sp.found {
			paths, misplaced, err := walk(ctx, c, fp.root, fp.segs)
			if err != nil {
				return nil, err
			}
			if len(paths) == 0 && misplaced != "" {
				// who says "no nameservice found below /hadoop-ha/ns1: it holds ..."
				at := path.Dir(misplaced)
				out = append(out, presetTarget{path: at + ": it holds " + path.Base(misplaced) + " itself, so it is one level too deep; give its parent, " +
					path.Dir(at) + ", as the preset's root", missing: fp.what})
			} else if len(paths) == 0 {
				out = append(out, presetTarget{path: fp.root, missing: fp.what})
			}
			for _, p := range paths {
				t := presetTarget{path: p}
				if fp.format != "" {
					t.single = &elect.SingleNode{Format: fp.format}
				}
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// systemThere reports whether the system sp names lives under its root:
// one of its marks or leader nodes exists (true too when sp has no marks).
func systemThere(ctx context.Context, c *zk.Conn, sp presetSpec) (bool, error) {
	if len(sp.marks) == 0 {
		return true, nil
	}
	for _, l := range sp.leaders {
		sp.marks = append(sp.marks, l.path)
	}
	for _, m := range sp.marks {
		type res struct {
			ok  bool
			err error
		}
		got := make(chan res, 1)
		go func() {
			ok, _, err := c.Exists(m)
			got <- res{ok, err}
		}()
		select {
		case r := <-got:
			if r.ok || r.err != nil {
				return r.ok, r.err
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return false, nil
}

// walk finds the paths below root that segs match ("*" any child), in
// order; a literal segment is taken as it is (whether it exists is for
// the reader of the path to say). A child at a "*" level that is itself
// what the level below names (bridge.MisplacedBelow: a Hadoop lock where
// a nameservice was looked for) is no match: misplaced is its path.
func walk(ctx context.Context, c *zk.Conn, root string, segs []string) (paths []string, misplaced string, err error) {
	cur := []string{root}
	for i, seg := range segs {
		var next []string
		for _, p := range cur {
			if seg != "*" {
				next = append(next, path.Join(p, seg))
				continue
			}
			children, err := elect.ListChildren(ctx, c, p)
			if err != nil {
				return nil, "", err
			}
			for _, ch := range children {
				switch {
				case p == "/" && ch == "zookeeper":
					continue // the server's own, no system's
				case i+1 < len(segs) && bridge.MisplacedBelow(ch, segs[i+1]):
					misplaced = path.Join(p, ch)
					continue
				}
				next = append(next, path.Join(p, ch))
			}
		}
		cur = next
	}
	sort.Strings(cur)
	return cur, misplaced, nil
}
