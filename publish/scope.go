package publish

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Scope is which groups a bridge observes, as its configuration says: the
// paths it watches (single-node leaders included), every child of its
// discover roots, what its patterns match, all of it narrowed to its shard.
// A heartbeat carries it, so that a reader takes a bridge's confirmation
// only for a group the bridge observes: a bridge restarted without a group,
// or an HA copy configured with fewer groups than the one it took over
// from, confirms nothing of the groups it dropped, whose values would
// otherwise stay fresh while it heartbeats.
type Scope struct {
	Watch    []string `json:"watch,omitempty"`
	Discover []string `json:"discover,omitempty"`
	// Patterns are globs (path.Match) over whole group paths.
	Patterns []string `json:"patterns,omitempty"`
	// Skip are globs (path.Match) over the group paths that Discover or
	// Patterns take in but the bridge does not observe: children of a
	// root that are not groups (queue nodes, a member's registration),
	// skipped as the bridge found them. It confirms nothing of those: a
	// reader must not take "no owner" there as confirmed.
	Skip []string `json:"skip,omitempty"`
	// ShardK of ShardN (ShardN 0: not sharded).
	ShardK int `json:"shard_k,omitempty"`
	ShardN int `json:"shard_n,omitempty"`
	// Wide is how many of the last Patterns stand for watched paths too
	// many to name (globs of their parents' children, or of their depth),
	// and WatchSet holds those paths (NewPathSet): a group those globs
	// match is covered only if WatchSet holds it. A reader of an older
	// herald, or a record without WatchSet, takes the globs as patterns,
	// siblings of the watched paths and all.
	Wide     int      `json:"wide,omitempty"`
	WatchSet *PathSet `json:"watch_set,omitempty"`
}

// Covers reports whether the scope holds group. A nil scope (a heartbeat
// from a bridge that sends none) covers every group.
func (s *Scope) Covers(group string) bool {
	if s == nil {
		return true
	}
	if s.ShardN > 0 && ShardOf(group, s.ShardN) != s.ShardK {
		return false
	}
	if group == "/zookeeper" || strings.HasPrefix(group, "/zookeeper/") {
		return false // the server's own: never a group (a discover root "/")
	}
	if slices.Contains(s.Watch, group) || s.watchedWide(group) {
		return true
	}
	for _, k := range s.Skip {
		if ok, _ := path.Match(k, group); ok {
			return false
		}
	}
	for _, r := range s.Discover {
		if path.Dir(group) == r {
			return true
		}
	}
	for _, p := range s.Patterns[:len(s.Patterns)-s.wide()] {
		if ok, _ := path.Match(p, group); ok {
			return true
		}
	}
	return false
}

// watchedWide reports whether group is one of the watched paths the scope
// gives by Wide globs and WatchSet: checked, as Watch is, before Skip,
// which takes in only what discover roots and patterns found.
func (s *Scope) watchedWide(group string) bool {
	n := s.wide()
	if n == 0 || !s.WatchSet.Has(group) {
		return false
	}
	for _, p := range s.Patterns[len(s.Patterns)-n:] {
		if ok, _ := path.Match(p, group); ok {
			return true
		}
	}
	return false
}

// wide is how many of the last Patterns watchedWide reads, 0 unless the
// scope has a WatchSet and the count fits.
func (s *Scope) wide() int {
	if s.WatchSet == nil || s.Wide < 0 || s.Wide > len(s.Patterns) {
		return 0
	}
	return s.Wide
}

// String says the scope in a line, for stale reasons.
func (s *Scope) String() string {
	if s == nil {
		return "every group"
	}
	n := s.wide()
	out := fmt.Sprintf("watch %v, discover %v, patterns %v", s.Watch, s.Discover, s.Patterns[:len(s.Patterns)-n])
	if n > 0 { // the globs are no patterns: they take in the set's paths only
		out += fmt.Sprintf(", watched paths too many to name, among %v", s.Patterns[len(s.Patterns)-n:])
	}
	switch n := len(s.Skip); {
	case n > 3:
		out += fmt.Sprintf(", skipping %v and %d more (not groups)", s.Skip[:3], n-3)
	case n > 0:
		out += fmt.Sprintf(", skipping %v (not groups)", s.Skip)
	}
	if s.ShardN > 0 {
		out += fmt.Sprintf(", shard %d/%d", s.ShardK, s.ShardN)
	}
	return out
}

// ShardOf is the shard of n a group belongs to: the last 8 bytes of the MD5
// of its path, read as a big-endian number, modulo n (Prometheus' hashmod).
func ShardOf(group string, n int) int {
	sum := md5.Sum([]byte(group))
	return int(binary.BigEndian.Uint64(sum[8:]) % uint64(n))
}
