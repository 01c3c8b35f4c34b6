package bridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// ErrShardMismatch is returned by Run when the bridges campaigning at the
// same HA path split the groups differently (another shard count, or some
// sharded and some not): groups would be published twice or not at all.
var ErrShardMismatch = errors.New("bridge: bridges at this HA path shard differently")

// Shard is one part of the groups, for running N bridges (each with its
// own standbys) that share the work: a group belongs to shard K of N when
// the hash of its path, modulo N, is K. The zero Shard is every group.
type Shard struct {
	K, N int
}

// ParseShard reads "K/N" (K in 0..N-1, both plain decimal numbers, no sign
// or leading zeros); "" is the zero Shard.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.Atoi(ks)
	n, nerr := strconv.Atoi(ns)
	switch {
	case !ok || kerr != nil || nerr != nil:
		return Shard{}, fmt.Errorf("shard %q: want K/N, e.g. 0/2 (shard 0 of 2)", s)
	case strconv.Itoa(k) != ks || strconv.Itoa(n) != ns:
		// "+1/2" or "01/2" would pass for 1/2 here but is another name
		// in the shard's election path, logs and status: one spelling only.
		return Shard{}, fmt.Errorf("shard %q: write K and N as plain numbers, e.g. %d/%d", s, k, n)
	case n < 1:
		return Shard{}, fmt.Errorf("shard %q: N is the number of shards, at least 1", s)
	case k < 0 || k >= n:
		return Shard{}, fmt.Errorf("shard %q: K must be in 0..%d (shards are numbered from 0)", s, n-1)
	}
	return Shard{K: k, N: n}, nil
}

// String is "K/N", "" for the zero Shard.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Owns reports whether group belongs to the shard.
func (s Shard) Owns(group string) bool {
	return s.N <= 1 || ShardOf(group, s.N) == s.K
}

// ShardOf is the shard of n that group belongs to: the last 8 bytes of the
// MD5 of its path, as a big-endian number, modulo n. That is Prometheus'
// hashmod, so `hashmod` relabelling over group paths (or any MD5 tool)
// predicts where a group goes.
func ShardOf(group string, n int) int { return publish.ShardOf(group, n) }

// haPath is where the bridge campaigns: the HA path itself, or below it
// the shard's own election, so copies of a shard compete and shards do not.
func (c *Config) haPath() string {
	if c.HAPath == "" || c.Shard.N == 0 {
		return c.HAPath
	}
	return c.HAPath + "/" + shardNode(c.Shard)
}

func shardNode(s Shard) string { return fmt.Sprintf("shard-%d-of-%d", s.K, s.N) }

// parseShardNode reads a shard election's name, shard-K-of-N.
func parseShardNode(name string) (Shard, bool) {
	var s Shard
	if _, err := fmt.Sscanf(name, "shard-%d-of-%d", &s.K, &s.N); err != nil || shardNode(s) != name {
		return Shard{}, false
	}
	return s, true
}

// checkShards refuses to run beside bridges that split the groups
// differently at the same HA path: those with live candidates in another
// shard count's elections, or unsharded ones campaigning at the path
// itself. An election nobody campaigns in any more (left by bridges since
// restarted with another count) is no obstacle.
//
// term is the czxid of this bridge's own candidate once it leads its
// election, 0 before it campaigns. Two bridges with different counts that
// start at the same moment both pass the first check; as leaders they
// check again, and only the one whose candidate came later refuses, so
// the one that came first keeps publishing (candidates of another count
// that came first, or whose age cannot be read, are an obstacle). The
// listing is preceded by a sync, so that a server behind the leader
// cannot hide the other bridge's candidate from both of them.
func (b *Bridge) checkShards(ctx context.Context, s *elect.Session, term int64) error {
	if b.cfg.HAPath == "" {
		return nil
	}
	_, _ = s.Conn().Sync(b.cfg.HAPath) // a failure shows in the listing
	children, err := elect.ListChildren(ctx, s.Conn(), b.cfg.HAPath)
	if err != nil {
		return nil // cannot tell now; the election itself says what is wrong
	}
	mine := b.cfg.Shard
	for _, c := range children {
		if _, seq := elect.ParseSequence(c); seq && mine.N > 0 && earlier(s, b.cfg.HAPath+"/"+c, term) {
			return fmt.Errorf("%w: unsharded bridges campaign at --ha %s, and this one is shard %s; give every bridge of this --ha a --shard K/%d, or this one another --ha",
				ErrShardMismatch, b.cfg.HAPath, mine, mine.N)
		}
		other, ok := parseShardNode(c)
		if !ok || other.N == mine.N || !liveBefore(ctx, s, b.cfg.HAPath+"/"+c, term) {
			continue
		}
		if mine.N == 0 {
			return fmt.Errorf("%w: bridges at --ha %s run as shards of %d (%s has candidates), and this one is not sharded; give it --shard K/%d, or another --ha",
				ErrShardMismatch, b.cfg.HAPath, other.N, c, other.N)
		}
		return fmt.Errorf("%w: bridges at --ha %s run as shards of %d (%s has candidates), and this one is shard %s; every bridge of one --ha needs the same N (to change N, stop them all, then start them with the new one)",
			ErrShardMismatch, b.cfg.HAPath, other.N, c, mine)
	}
	return nil
}

// liveBefore reports whether the election at p has a candidate that came
// before term (any candidate, when term is 0). Only queue nodes are
// candidates: the office a leader deposed by a suspension leaves behind
// (its release record) is no bridge.
func liveBefore(ctx context.Context, s *elect.Session, p string, term int64) bool {
	live, err := elect.ListChildren(ctx, s.Conn(), p)
	if err != nil {
		return false
	}
	for _, c := range live {
		if _, seq := elect.ParseSequence(c); seq && earlier(s, p+"/"+c, term) {
			return true
		}
	}
	return false
}

// earlier reports whether node p was created before term, or its age
// cannot be read (a node gone since the listing is not).
func earlier(s *elect.Session, p string, term int64) bool {
	if term == 0 {
		return true
	}
	ok, st, err := s.Conn().Exists(p)
	switch {
	case err != nil:
		return true
	case !ok:
		return false
	}
	return st.Czxid < term
}
