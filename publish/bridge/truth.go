package bridge

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkherald/herald/elect"
)

// DefaultGroupMetricsLimit is how many groups get metrics of their own
// (labelled by group) before only the aggregates are kept.
const DefaultGroupMetricsLimit = 1000

// truth keeps, per observed group, what an operator asks in an incident:
// how long it has been without an owner, how often its owner changed (in
// all, and in the last hour: flapping), how many gaps and suspect nodes it
// had. It is a Prometheus collector: per group while the number of groups
// is within the limit, and always as aggregates.
type truth struct {
	mu     sync.Mutex
	limit  int
	now    func() time.Time
	groups map[string]*groupTruth
	// unknown lists the groups whose state is unknown now (ZooKeeper out
	// of reach): their time without an owner is not reported, since an
	// owner may have come meanwhile (nil: none).
	unknown func() map[string]bool
	// changes counts owner changes of every group, dropped ones included.
	changes float64
}

// groupTruth is one group's: the bridge keeps one for every group it
// observes, so its flags sit together at the end, where they cost no
// padding.
type groupTruth struct {
	owner     string // current owner node, "" for none
	ownerless time.Time
	changes   float64
	recent    []time.Time // owner changes in the last hour
	gaps      float64
	suspects  map[string]bool
	// hazard is why two of the group's clients may each believe they own
	// (elect.View.Hazard), "" when none can.
	hazard string
	// For the live page: the owner as last seen, since when (seen happen,
	// or first seen in a snapshot; unix ns, 0 for never: the page shows
	// it, no duration is taken from it), and whether it acknowledged.
	recipe    elect.Recipe
	ownerID   string
	term      int64
	since     int64
	known     bool // a snapshot was seen
	sinceSeen bool
	// ownerlessSeen: the owner's end was seen as it happened, so the
	// group has been without one exactly since ownerless (else at least).
	ownerlessSeen bool
	ready         bool
	// persistent: the owner's node is held by no session (a single-node
	// leader's: Kafka's /controller as a KRaft controller writes it).
	persistent bool
}

// sinceTime is g.since as a time, the zero time for never.
func (g *groupTruth) sinceTime() time.Time {
	if g.since == 0 {
		return time.Time{}
	}
	return time.Unix(0, g.since)
}

var (
	// The ownerless figures carry the recipe: an election without a leader
	// is an outage, a lock nobody holds is idle.
	descOwnerless = prometheus.NewDesc("herald_group_ownerless_seconds",
		"Seconds the group has been without an owner as this bridge saw it (0 while owned); recipe is election or lock.", []string{"group", "recipe"}, nil)
	descChanges = prometheus.NewDesc("herald_group_owner_changes_total",
		"Times the group's owner changed as this bridge saw it.", []string{"group"}, nil)
	descRecent = prometheus.NewDesc("herald_group_owner_changes_last_hour",
		"Owner changes in the last hour: a high value is a flapping leadership.", []string{"group"}, nil)
	descGaps = prometheus.NewDesc("herald_group_gaps_total",
		"Changes of the group reported with gap=true: an owner may have come and gone unseen.", []string{"group"}, nil)
	descSuspects = prometheus.NewDesc("herald_group_suspect_nodes",
		"Queue nodes of the group now that cannot be what the queue says (not ephemeral, or appeared below the owner).", []string{"group"}, nil)
	descHazard = prometheus.NewDesc("herald_group_two_owners_possible",
		"1 while the group mixes node names one of its clients cannot order: two clients may each believe they own.", []string{"group"}, nil)
	descHazards = prometheus.NewDesc("herald_groups_two_owners_possible",
		"Observed groups whose node names one of their clients cannot order now.", nil, nil)
	descOwnerlessGroups = prometheus.NewDesc("herald_groups_ownerless",
		"Observed groups of the recipe (election or lock) without an owner now.", []string{"recipe"}, nil)
	descLongest = prometheus.NewDesc("herald_groups_ownerless_longest_seconds",
		"The longest time any observed group of the recipe (election or lock) has been without an owner now.", []string{"recipe"}, nil)
	descAllChanges = prometheus.NewDesc("herald_owner_changes_total",
		"Owner changes of all observed groups.", nil, nil)
	descAllRecent = prometheus.NewDesc("herald_owner_changes_last_hour",
		"Owner changes of all observed groups in the last hour.", nil, nil)
)

func newTruth(limit int) *truth {
	return &truth{limit: limit, now: time.Now, groups: map[string]*groupTruth{}}
}

// see records what a change says about its group. turned is true when
// the group's hazard changed with it (see elect.View.Hazard).
func (tr *truth) see(c elect.Change) (turned bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if c.Kind == elect.Unknown {
		return false
	}
	g := tr.groups[c.Group]
	if g == nil {
		g = &groupTruth{}
		tr.groups[c.Group] = g
	}
	now := tr.now()
	owner := ""
	if c.Owner != nil {
		owner = c.Owner.Node
	}
	switch {
	case !g.known:
		g.known = true
	case owner != g.owner:
		g.changes++
		tr.changes++
		g.recent = append(g.recent, now)
	}
	seen := c.Kind != elect.Snapshot && c.NotBefore.IsZero() // not seen late either
	if owner != g.owner || g.since == 0 {
		g.since, g.sinceSeen = now.UnixNano(), seen
	}
	g.recipe, g.ready, g.ownerID, g.term, g.persistent = c.Recipe, c.Ready, "", 0, false
	if c.Owner != nil {
		g.ownerID, g.term, g.persistent = c.Owner.ID, c.Owner.Czxid, c.Owner.Session == 0
	}
	if owner == "" && (g.owner != "" || g.ownerless.IsZero()) {
		g.ownerless, g.ownerlessSeen = now, seen
	}
	g.owner = owner
	if c.Gap {
		g.gaps++
	}
	g.countSuspects(c)
	turned, g.hazard = g.hazard != c.Hazard, c.Hazard
	return turned
}

// countSuspects keeps the set of the group's suspect nodes: a snapshot or
// an owner change carries the whole queue, a join or a leave one node.
func (g *groupTruth) countSuspects(c elect.Change) {
	switch c.Kind {
	case elect.Snapshot, elect.OwnerChanged:
		g.suspects = nil // most groups never have one: no map for them
		for _, p := range c.Queue {
			if p.Suspect != "" {
				if g.suspects == nil {
					g.suspects = map[string]bool{}
				}
				g.suspects[p.Node] = true
			}
		}
	case elect.Joined:
		if c.Candidate != nil && c.Candidate.Suspect != "" {
			if g.suspects == nil {
				g.suspects = map[string]bool{}
			}
			g.suspects[c.Candidate.Node] = true
		}
	case elect.Left:
		if c.Candidate != nil {
			delete(g.suspects, c.Candidate.Node)
		}
	}
}

// forgetGone forgets the groups below root whose first level below it is
// none of children and that observed says nobody observes: groups that
// went while the bridge had no session. A group that goes during a
// session is dropped as it goes; one kept across a session replacement
// keeps its counters.
func (tr *truth) forgetGone(root string, children []string, observed func(string) bool) {
	prefix := strings.TrimSuffix(root, "/") + "/"
	here := make(map[string]bool, len(children))
	for _, c := range children {
		here[c] = true
	}
	var gone []string
	tr.mu.Lock()
	for g := range tr.groups {
		if rest, ok := strings.CutPrefix(g, prefix); ok {
			if first, _, _ := strings.Cut(rest, "/"); !here[first] {
				gone = append(gone, g)
			}
		}
	}
	tr.mu.Unlock()
	for _, g := range gone {
		if !observed(g) {
			tr.drop(g)
		}
	}
}

// drop forgets a group no longer observed.
func (tr *truth) drop(group string) {
	tr.mu.Lock()
	delete(tr.groups, group)
	tr.mu.Unlock()
}

func (tr *truth) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOwnerless, descChanges, descRecent, descGaps, descSuspects, descHazard, descHazards, descOwnerlessGroups, descLongest, descAllChanges, descAllRecent} {
		ch <- d
	}
}

func (tr *truth) Collect(ch chan<- prometheus.Metric) {
	var unknown map[string]bool
	if tr.unknown != nil {
		unknown = tr.unknown() // before tr.mu: it takes the bridge's lock
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := tr.now()
	perGroup := len(tr.groups) <= tr.limit
	var recentAll, hazards float64
	ownerless := map[elect.Recipe]float64{elect.RecipeElection: 0, elect.RecipeLock: 0}
	longest := map[elect.Recipe]float64{elect.RecipeElection: 0, elect.RecipeLock: 0}
	for name, g := range tr.groups {
		recipe := g.recipe
		if recipe != elect.RecipeLock {
			recipe = elect.RecipeElection // a group nothing tells about reads as one
		}
		g.recent = trimHour(g.recent, now)
		recentAll += float64(len(g.recent))
		secs := 0.0
		// An unknown group's owner, or its lack of one, is only the last
		// seen: counted without an owner through a cut, an election set
		// off the no-leader alert while it may have had a leader all along.
		if g.known && !unknown[name] && g.owner == "" {
			secs = now.Sub(g.ownerless).Seconds()
			ownerless[recipe]++
			longest[recipe] = max(longest[recipe], secs)
		}
		hazard := 0.0
		if g.hazard != "" {
			hazard = 1
			hazards++
		}
		if !perGroup {
			continue
		}
		if !unknown[name] {
			ch <- prometheus.MustNewConstMetric(descOwnerless, prometheus.GaugeValue, secs, name, string(recipe))
		}
		ch <- prometheus.MustNewConstMetric(descChanges, prometheus.CounterValue, g.changes, name)
		ch <- prometheus.MustNewConstMetric(descRecent, prometheus.GaugeValue, float64(len(g.recent)), name)
		ch <- prometheus.MustNewConstMetric(descGaps, prometheus.CounterValue, g.gaps, name)
		ch <- prometheus.MustNewConstMetric(descSuspects, prometheus.GaugeValue, float64(len(g.suspects)), name)
		ch <- prometheus.MustNewConstMetric(descHazard, prometheus.GaugeValue, hazard, name)
	}
	ch <- prometheus.MustNewConstMetric(descHazards, prometheus.GaugeValue, hazards)
	for _, r := range []elect.Recipe{elect.RecipeElection, elect.RecipeLock} {
		ch <- prometheus.MustNewConstMetric(descOwnerlessGroups, prometheus.GaugeValue, ownerless[r], string(r))
		ch <- prometheus.MustNewConstMetric(descLongest, prometheus.GaugeValue, longest[r], string(r))
	}
	ch <- prometheus.MustNewConstMetric(descAllChanges, prometheus.CounterValue, tr.changes)
	ch <- prometheus.MustNewConstMetric(descAllRecent, prometheus.GaugeValue, recentAll)
}

// trimHour drops the times more than an hour before now.
func trimHour(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > time.Hour {
		i++
	}
	return ts[i:]
}

// truthOwner is the node the bridge last saw own group ("" for none, or a
// group it does not know).
func (b *Bridge) truthOwner(group string) string {
	b.truth.mu.Lock()
	defer b.truth.mu.Unlock()
	if g := b.truth.groups[group]; g != nil {
		return g.owner
	}
	return ""
}
