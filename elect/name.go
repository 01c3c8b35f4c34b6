package elect

import (
	"fmt"
	"math"

	"github.com/zkherald/herald/elect/ident"
	"sort"
	"strconv"
	"strings"
)

// ZooKeeper appends the parent's child counter to a SEQUENCE node's name as
// "%010d" of a signed 32-bit int. The counter can wrap past 2^31-1 to
// negative values ("-000000001", and "-2147483648", eleven characters), so
// the suffix is parsed as signed and ordered with serial-number arithmetic.

// ParseSequence returns the sequence number at the end of a node name.
func ParseSequence(name string) (int32, bool) {
	n := len(name)
	// "-1234567890" is ambiguous: a negative sequence, or a positive one
	// after a '-' separator ("x-<session>-1234567890"). It is negative only
	// when the sign itself follows a separator or starts the name.
	if n >= 11 && name[n-11] == '-' && (n == 11 || name[n-12] == '_' || name[n-12] == '-') {
		if v, err := strconv.ParseInt(name[n-11:], 10, 32); err == nil && v < -999_999_999 {
			return int32(v), true
		}
	}
	if n < 10 {
		return 0, false
	}
	s := name[n-10:]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' || c == '-' && i == 0 {
			continue
		}
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > 1<<31-1 || v < -1<<31 {
		return 0, false
	}
	return int32(v), true
}

// SeqLess orders sequence numbers across a wrap: a comes before b when b is
// at most 2^31-1 steps after a.
func SeqLess(a, b int32) bool { return int32(uint32(a)-uint32(b)) < 0 }

// FormatSequence renders a sequence as ZooKeeper does.
func FormatSequence(seq int32) string {
	if seq < 0 {
		return fmt.Sprintf("%010d", seq)
	}
	var b [10]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + seq%10)
		seq /= 10
	}
	return string(b[:])
}

// entry is one parsed queue node.
type entry struct {
	name string
	seq  int32
}

// parseChildren keeps the children whose names end in a sequence, ordered
// lowest (oldest) first; children is every child of the group and
// cversion the group's child version, read with them in one listing.
// Others (herald's own state nodes, foreign clutter) are ignored, never an
// error.
func parseChildren(children []string, cversion int32) []entry {
	es, _ := parseListing(children, cversion)
	return es
}

// parseListing is parseChildren, with the group's sequence counter at the
// listing (see counter).
func parseListing(children []string, cversion int32) ([]entry, int32) {
	out := make([]entry, 0, len(children))
	for _, c := range children {
		if seq, ok := ParseSequence(c); ok {
			out = append(out, entry{name: c, seq: seq})
		}
	}
	next := counter(cversion, len(children), out)
	sortEntries(out, next)
	return out, next
}

// goneAbove is what a listing that shows the node with sequence seq tells
// of the children made after it: the numbers from seq+1 up to next, the
// group's counter then, that no entry of above (the listing's entries
// after that node's, oldest first) has, as runs oldest first. Each was a
// child made after ours and gone before the listing, or one whose name
// carries no sequence (herald's office or checkpoint, a node made by hand).
// None of them ever owned: a queue node owns only as the lowest, and ours,
// lower, was there from before it was made until after it went. ok is
// false when the listing does not place our node behind the counter.
func goneAbove(above []entry, seq, next int32) (gone []seqRun, ok bool) {
	if behindCounter(next, seq) <= 0 {
		return nil, false
	}
	want := seq + 1 // the first number not yet seen
	for _, e := range above {
		d := behindCounter(next, e.seq)
		if d <= 0 || !SeqLess(seq, e.seq) || SeqLess(e.seq, want) {
			continue // not made after ours by a sequential create, or a name twice
		}
		if e.seq != want {
			gone = append(gone, seqRun{want, e.seq - 1})
		}
		want = e.seq + 1
	}
	if want != next {
		gone = append(gone, seqRun{want, next - 1})
	}
	return gone, true
}

// counter is the group's sequence counter: the number ZooKeeper gives the
// next sequential child, which counts the children created in the group
// (sequential or not), deletes not. The child version a stat reports
// counts deletes too: ZooKeeper reports twice the creates less the
// children there are now. That gives the counter but for its top bit, so
// of the two candidates it is the one most of the listed sequences are
// behind (ties go to the smaller, the counter before any wrap): every
// node a sequential create made is behind the true counter, a name made
// by hand rarely.
func counter(cversion int32, children int, es []entry) int32 {
	low := int32((uint32(cversion) + uint32(children)) / 2)
	high := low + math.MinInt32
	reached := func(c int32) (n int) {
		for _, e := range es {
			if behindCounter(c, e.seq) > 0 {
				n++
			}
		}
		return n
	}
	if reached(high) > reached(low) {
		return high
	}
	return low
}

// behindCounter is how far seq is behind the group's counter: positive for
// a sequence the counter has passed, negative or zero for one it has not
// reached (a name made by hand).
func behindCounter(counter, seq int32) int32 { return int32(uint32(counter) - uint32(seq)) }

// sortEntries orders es oldest first by their distance behind the group's
// counter (see counter). Every node a sequential create made is behind
// the counter by less than 2^31; a sequence the counter has not reached
// (a name made by hand) comes after them all. Measured from the counter
// the order is total and the same for every reader of the same listing,
// across a wrap of the counter too. SeqLess between each pair is not
// total once a name made by hand carries a sequence 2^31 or more from the
// others (A < B < X < A), and the lowest node then depended on the order
// of the listing: two waiters could each find themselves lowest. Measured
// from the child version instead of the counter (the child version also
// counts deletes), two live nodes were ordered the wrong way round once
// the group's deletes came near 2^31.
func sortEntries(es []entry, counter int32) {
	sort.Slice(es, func(i, j int) bool {
		if bi, bj := behindCounter(counter, es[i].seq), behindCounter(counter, es[j].seq); bi != bj {
			return bi > bj
		}
		return es[i].name < es[j].name
	})
}

// NameInfo is what a node's name says about its creator.
type NameInfo struct {
	Sequence int32
	// ID is the name without the sequence, the protection GUID and the
	// trailing separators: "candidate-0x1a2b" for "candidate-0x1a2b_0000000004".
	// For herald's own names it is "<session>-<counter>" in hex.
	ID string
	// Session is the session id a herald or seed-style name carries, 0 when
	// the name does not carry one. It is what the name claims: only the
	// node's ephemeralOwner proves it.
	Session int64
	// Convention names the client that writes such names: herald, curator,
	// kazoo, go-zookeeper, zookeeper-recipes, seed.
	Convention string
	// Recipe is what the name says the group holds: exact for herald's
	// names (they carry it), by the documented rule for others (see
	// RecipeOfName); "" when the name does not tell.
	Recipe Recipe
}

// MayRecur reports whether a node of this name could be created again at
// the same path. herald's names (a session and a create counter) and the
// protected names of Curator and go-zookeeper (a random id per create)
// cannot; the others carry a prefix their client keeps (Kazoo's), its
// session, or nothing, and a group deleted and made again counts its
// sequence from 0 again.
func (n NameInfo) MayRecur() bool {
	switch n.Convention {
	case "herald", "curator", "go-zookeeper":
		return false
	}
	return true
}

// ParseName reads a queue node's name. ok is false when the name has no
// sequence (it is then not part of the queue).
func ParseName(name string) (NameInfo, bool) {
	seq, ok := ParseSequence(name)
	if !ok {
		return NameInfo{}, false
	}
	info := NameInfo{Sequence: seq}
	if id, _, ok := heraldNode(name); ok {
		info.Convention, info.Session, info.Recipe = "herald", id.session, id.recipe
		info.ID = string(appendHex(append(appendHex(nil, uint64(id.session), 16), '-'), uint64(id.nonce), 8))
		return info, true
	}
	rest := name[:len(name)-seqLen(seq)]
	switch {
	case strings.HasPrefix(rest, "_c_"):
		// Protected names: "_c_<guid>-<prefix>". Curator's guid is a UUID
		// with dashes (36 bytes), go-zookeeper's 32 hex digits.
		info.Convention = "protected"
		switch g := rest[3:]; {
		case len(g) > 36 && g[36] == '-' && strings.Count(g[:36], "-") == 4:
			info.Convention = "curator"
			rest = g[37:]
		case len(g) > 32 && g[32] == '-' && !strings.Contains(g[:32], "-"):
			info.Convention = "go-zookeeper"
			rest = g[33:]
		}
	case strings.HasSuffix(rest, "__lock__") || strings.HasSuffix(rest, "__rlock__"):
		info.Convention = "kazoo"
	case isSolr(name):
		// Solr's "<session>-<id>-n_<seq>": ordered by sequence, then name.
		sn, _ := ident.ParseSolrNode(name)
		info.Convention, info.ID, info.Session, info.Recipe = "solr", sn.ID, sn.Session, RecipeElection
		return info, true
	case strings.HasPrefix(rest, "x-"):
		info.Convention = "zookeeper-recipes"
		if sid, err := strconv.ParseInt(strings.TrimSuffix(rest[2:], "-"), 10, 64); err == nil {
			info.Session = sid
		}
	default:
		info.Convention = "seed"
		if sid, ok := heraldMarker(rest); ok {
			// herald's names before dialects: "<prefix><session>-<nonce>_".
			info.Convention = "herald"
			info.Session = sid
		} else if i := strings.LastIndexByte(strings.TrimSuffix(rest, "_"), '-'); i >= 0 {
			// candidate-<sessionID>_ as in the seeds, decimal or hex.
			tail := strings.TrimSuffix(rest, "_")[i+1:]
			if sid, err := strconv.ParseInt(strings.TrimPrefix(tail, "0x"), hexOrDec(tail), 64); err == nil && sid != 0 {
				info.Session = sid
			}
		}
	}
	info.ID = strings.TrimRight(rest, "_-")
	if info.ID == "" {
		info.ID = name
	}
	info.Recipe = recipeByRule(info.Convention, rest)
	return info, true
}

// recipeByRule is the documented rule for names that do not carry their
// recipe (rest is the name without protection id and sequence):
//
//   - "latch-" (Curator LeaderLatch), "candidate-", "n_", "x-" (the
//     classic election texts and ZooKeeper's recipes): election;
//   - Kazoo's "__lock__" and "__rlock__" (its Lock, ReadLock and
//     Election all write them), Curator's and go-zookeeper's "lock-"
//     (InterProcessMutex, and LeaderSelector, which queues on a mutex), and
//     the classic "lock-": lock.
//
// So Kazoo's Election and Curator's LeaderSelector read as locks unless
// the observer is told otherwise (AsRecipe, herald bridge --recipe).
func recipeByRule(convention, rest string) Recipe {
	switch {
	case strings.HasSuffix(rest, "latch-"), strings.HasPrefix(rest, "candidate"), strings.HasPrefix(rest, "n_"), convention == "zookeeper-recipes":
		return RecipeElection
	case convention == "kazoo", strings.Contains(rest, "lock"),
		// Curator's read-write lock and semaphore: mutual exclusion too.
		strings.HasSuffix(rest, "__READ__"), strings.HasSuffix(rest, "__WRIT__"), strings.HasSuffix(rest, "lease-"):
		return RecipeLock
	}
	return ""
}

func hexOrDec(s string) int {
	if strings.HasPrefix(s, "0x") {
		return 16
	}
	return 10
}

// heraldMarker finds the session in "<prefix><16 hex session>-<8 hex
// nonce>_" at the end of rest: the names herald wrote before dialects,
// still read so that an upgrade in the middle of a queue is understood.
func heraldMarker(rest string) (int64, bool) {
	const tail = 16 + 1 + 8 + 1
	if len(rest) < tail || rest[len(rest)-1] != '_' || rest[len(rest)-10] != '-' {
		return 0, false
	}
	m := rest[len(rest)-tail:]
	sid, ok := parseHex(m[:16])
	if _, ok2 := parseHex(m[17:25]); !ok || !ok2 {
		return 0, false
	}
	return int64(sid), true
}

// appendHex appends v's lowest width hex digits, zero-padded.
func appendHex(b []byte, v uint64, width int) []byte {
	const digits = "0123456789abcdef"
	for i := width - 1; i >= 0; i-- {
		b = append(b, digits[v>>(4*uint(i))&0xf])
	}
	return b
}

// isSolr reports whether name is a Solr election node.
func isSolr(name string) bool {
	_, ok := ident.ParseSolrNode(name)
	return ok
}
