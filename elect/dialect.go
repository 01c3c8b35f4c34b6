package elect

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A group is often shared: herald beside Apache Curator, Kazoo,
// go-zookeeper's Lock or a hand-written classic recipe. Each of those orders
// the queue by its own reading of the node names, and a node it cannot read
// is misordered or invisible to it:
//
//   - Curator (InterProcessMutex, LeaderSelector, LeaderLatch) sorts every
//     child by the text after the last occurrence of its lock name ("lock-",
//     "latch-"), so a name must end in "<lock name><sequence>".
//   - go-zookeeper's Lock splits on "lock-" (then "__") and fails on a name
//     whose tail is not a number.
//   - Kazoo's Lock and Election see only names ending in
//     "__lock__<sequence>" (or "__rlock__" for read locks).
//   - The classic recipe orders by the trailing sequence alone.
//
// herald orders every name by its sequence, so it can wait behind any of
// them; what it must choose well is the name of its own node, so that every
// other client in the group orders it by sequence too. That choice is a
// Dialect.

// Dialect is the shape of the names herald gives its queue nodes.
type Dialect string

const (
	// DialectAuto (the default) writes in the dialect of the foreign nodes
	// the group holds, and in the recipe's default when it holds none:
	// DialectCuratorLock for locks, DialectCuratorLatch for elections.
	DialectAuto Dialect = "auto"
	// DialectCuratorLock: "_c_<herald id>-lock-<seq>", the protected form
	// that Curator's InterProcessMutex and LeaderSelector, go-zookeeper's
	// Lock and the classic recipe all order by sequence.
	DialectCuratorLock Dialect = "curator-lock"
	// DialectCuratorLatch: "_c_<herald id>-latch-<seq>", for groups that
	// Curator's LeaderLatch shares, and the classic recipe.
	DialectCuratorLatch Dialect = "curator-latch"
	// DialectKazoo: "<herald id>__lock__<seq>", the only names Kazoo's Lock
	// and Election see, and the classic recipe.
	DialectKazoo Dialect = "kazoo"
	// DialectClassic: "candidate-<herald id>_<seq>" for elections and
	// "lock-<herald id>_<seq>" for locks (or WithPrefix's prefix), the names
	// of the classic recipe texts. Only clients that order by the trailing
	// sequence alone read them right.
	DialectClassic Dialect = "classic"
)

// Dialects lists the dialects a user may force, in the order help texts
// show them.
var Dialects = []Dialect{DialectAuto, DialectCuratorLock, DialectCuratorLatch, DialectKazoo, DialectClassic}

// ParseDialect reads a dialect name as a flag or a config file gives it.
func ParseDialect(s string) (Dialect, error) {
	for _, d := range Dialects {
		if string(d) == s {
			return d, nil
		}
	}
	names := make([]string, len(Dialects))
	for i, d := range Dialects {
		names[i] = string(d)
	}
	return "", fmt.Errorf("elect: unknown dialect %q; want one of %s", s, strings.Join(names, ", "))
}

// defaultDialect is what herald writes in a group that holds no foreign
// node: the form the foreign clients most likely to join order correctly.
func defaultDialect(r Recipe) Dialect {
	if r == RecipeLock {
		return DialectCuratorLock
	}
	return DialectCuratorLatch
}

// need is what one foreign client requires of every other name in the
// group: the dialect whose names it orders by sequence.
type need struct {
	dialect Dialect
	client  string // who imposes it, for error messages
	// reads reports whether that client orders another name by its
	// sequence (see hazard).
	reads func(string) bool
	// failsOnUnread: a name the client cannot read makes its call fail
	// (go-zookeeper's Lock) rather than leaving it to own beside that node.
	failsOnUnread bool
}

// needOf reads which dialect the client that wrote name requires of the
// others. ok is false for names that impose nothing (herald's own, the
// classic recipe's, anything ordered by sequence alone). A non-nil error
// names a recipe herald cannot share a group with; the need returned with
// it still says how that client reads names (no dialect of herald's is
// among them), for hazard and blindTo.
func needOf(name string) (need, bool, error) {
	if outsideQueue(name) {
		return outsideNeed(name)
	}
	info, ok := ParseName(name)
	if !ok {
		return need{}, false, nil
	}
	switch info.Convention {
	case "curator":
		switch info.ID {
		case "lock":
			return need{dialect: DialectCuratorLock, client: "Curator InterProcessMutex or LeaderSelector (" + name + ")", reads: func(o string) bool { return seqAfterLast(o, "lock-") }}, true, nil
		case "latch":
			return need{dialect: DialectCuratorLatch, client: "Curator LeaderLatch (" + name + ")", reads: func(o string) bool { return seqAfterLast(o, "latch-") }}, true, nil
		}
		return unknownNeed(name, "Curator "+info.ID+" node"), false, fmt.Errorf("%w: %s is a Curator %q node (a read-write lock, semaphore or another recipe); herald's election and lock cannot queue beside it", ErrUnsafeGroup, name, info.ID)
	case "go-zookeeper":
		if info.ID == "lock" {
			return need{dialect: DialectCuratorLock, client: "go-zookeeper Lock (" + name + ")", reads: goZKReads, failsOnUnread: true}, true, nil
		}
		return unknownNeed(name, "protected node of an unknown recipe"), false, fmt.Errorf("%w: %s is a protected node of a recipe herald does not know", ErrUnsafeGroup, name)
	case "kazoo":
		return need{dialect: DialectKazoo, client: "Kazoo Lock or Election (" + name + ")", reads: kazooReads}, true, nil
	}
	return need{}, false, nil
}

// unknownNeed is how a protected name of a recipe herald does not share
// groups with reads the others: by the text after its own lock name (the
// part between the protection id and the sequence), Curator's read-write
// lock by the text after either of its two. herald writes none of those
// names, so the need has no dialect.
func unknownNeed(name, what string) need {
	rest := name[:len(name)-len(seqSuffix(name))]
	lockName := rest[strings.LastIndexByte(rest[:len(rest)-1], '-')+1:]
	if i := strings.Index(rest, "-__"); i >= 0 {
		lockName = rest[i+1:] // "__READ__", "__WRIT__": dashes may not end them
	}
	names := []string{lockName}
	if lockName == "__READ__" || lockName == "__WRIT__" {
		names = []string{"__READ__", "__WRIT__"}
	}
	return need{client: what + " (" + name + ")", reads: func(o string) bool {
		for _, n := range names {
			if seqAfterLast(o, n) {
				return true
			}
		}
		return false
	}}
}

// curatorLeases is the child a Curator InterProcessSemaphoreV2 (and so an
// InterProcessSemaphoreMutex) makes in its path to keep its leases in
// (beside "locks", a mutex among its clients): its holders own outside the
// group's queue, and it never sees herald's nodes, nor herald its leases.
// No session holds it, but it is a client's all the same (clientHolds): a
// semaphore that joins later adds a lease under it with no change to the
// group a herald owner could hear of, so even an empty one is refused.
const curatorLeases = "leases"

// kazooLeaseHolder is the node a Kazoo NonBlockingLease writes in its
// path: persistent, its data a JSON record of the holder and the end of
// its lease ({"version": 1, "holder": ID, "end": "2006-01-02T15:04:05"},
// UTC by the holder's clock). The holder owns until that end, with no
// session and no place in any queue; Kazoo takes the lease under a Kazoo
// Lock of the same path, which orders herald's node only in Kazoo's
// dialect, so beside a herald owner in any other it takes the lease at
// once. It is a client's while the lease runs (leaseHeld).
const kazooLeaseHolder = "lease_holder"

// mayLeaveALease reports whether the queue node name may be the Kazoo
// Lock a NonBlockingLease takes its lease under: Kazoo writes
// lease_holder while it holds that lock and deletes its node after, so
// that node's deletion hands the queue on with a lease running.
func mayLeaveALease(name string) bool {
	info, _ := ParseName(name)
	return info.Convention == "kazoo"
}

// leaseSlack is how long past a Kazoo lease's end herald still counts it
// held: the end is cut to the second, and the holder's clock is not ours.
const leaseSlack = 2 * time.Second

// kazooLeaseEnd reads the end of a Kazoo NonBlockingLease from its node's
// data; ok is false for data that is none.
func kazooLeaseEnd(data []byte) (end time.Time, ok bool) {
	var rec struct {
		Version json.Number `json:"version"`
		End     string      `json:"end"`
	}
	if json.Unmarshal(data, &rec) != nil || rec.Version != "1" {
		return time.Time{}, false
	}
	end, err := time.ParseInLocation("2006-01-02T15:04:05", rec.End, time.UTC)
	return end, err == nil
}

// outsideQueue reports whether a child may hold the group outside its
// queue, where no dialect of ours puts our node behind it: Curator's
// leases parent, or any name without a sequence but herald's own (the
// office, the checkpoint). Such a name is a client only while a session
// holds it (clientHolds): a Kazoo Semaphore's lease, a lock written as one
// ephemeral node (create -e GROUP/lock), a leader node of another system;
// a persistent node (a note, a subgroup) is clutter, as before.
func outsideQueue(name string) bool {
	if name == curatorLeases {
		return true
	}
	_, seq := ParseSequence(name)
	return !seq && name != OfficeNode && name != CheckpointNode
}

// outsideNeed is needOf for a name outsideQueue: it reads no name of
// ours, and the group is refused for it.
func outsideNeed(name string) (need, bool, error) {
	n := need{reads: func(string) bool { return false }}
	var err error
	switch {
	case name == curatorLeases:
		n.client = "Curator InterProcessSemaphoreV2 or InterProcessSemaphoreMutex (its leases under " + name + ")"
		err = fmt.Errorf("%w: its child %s is where a Curator semaphore (InterProcessSemaphoreV2, InterProcessSemaphoreMutex) given this path keeps its leases, which no queue of the group orders; herald's election and lock cannot share a path with it (delete %s, and locks beside it, once no semaphore uses this path)", ErrUnsafeGroup, name, name)
	case name == kazooLeaseHolder:
		n.client = "Kazoo NonBlockingLease whose lease has not run out, or whose end herald may not READ (" + name + ")"
		err = fmt.Errorf("%w: %s is a Kazoo NonBlockingLease's lease, held until the end its data names without a place in any queue (one herald may not READ counts as running: its end is unknown to herald; grant herald READ on it, or delete it once no NonBlockingLease uses this path); herald's election and lock cannot share a path with it: give them paths of their own", ErrUnsafeGroup, name)
	case isKazooLease(name):
		n.client = "Kazoo Semaphore holding a lease (" + name + ")"
		err = fmt.Errorf("%w: %s is a Kazoo Semaphore's lease, which holds without a place in any queue; herald's election and lock cannot share a group with it", ErrUnsafeGroup, name)
	default:
		n.client = "a client holding the ephemeral node " + name + ", which has no sequence"
		err = fmt.Errorf("%w: %s is an ephemeral node without a sequence, which holds the group outside its queue (a lock or leader node of another client); herald's election and lock cannot share a group with it: give them paths of their own", ErrUnsafeGroup, name)
	}
	return n, false, err
}

// isKazooLease reports whether name is a Kazoo Semaphore's lease: an
// ephemeral node named by uuid4().hex, without a sequence, made right in
// the semaphore's path once a listing of it showed fewer children than
// leases. It holds while no queue orders it, so herald, which orders only
// names with a sequence, would own beside it; Kazoo, counting herald's
// nodes as leases, waits behind herald's only when it lists after them.
func isKazooLease(name string) bool {
	if len(name) != 32 || name[12] != '4' || !strings.ContainsRune("89ab", rune(name[16])) {
		return false
	}
	_, ok := parseHex(name[:16])
	_, ok2 := parseHex(name[16:])
	return ok && ok2
}

// seqSuffix is the sequence at the end of name ("" when there is none).
func seqSuffix(name string) string {
	seq, ok := ParseSequence(name)
	if !ok {
		return ""
	}
	return name[len(name)-seqLen(seq):]
}

// groupDialect chooses the dialect for a node joining a group whose
// children are given: the one every foreign client in it requires, or the
// recipe's default when none requires any. Clients that require different
// dialects cannot all order one name, so such a group is refused with
// ErrUnsafeGroup: whatever herald wrote, one of them would misorder it.
func groupDialect(r Recipe, children []string) (Dialect, error) {
	var needs []need
	for _, c := range children {
		n, ok, err := needOf(c)
		if err != nil {
			return "", err
		}
		if ok {
			needs = append(needs, n)
		}
	}
	if len(needs) == 0 {
		return defaultDialect(r), nil
	}
	sort.SliceStable(needs, func(i, j int) bool { return needs[i].dialect < needs[j].dialect })
	for _, n := range needs[1:] {
		if n.dialect != needs[0].dialect {
			return "", fmt.Errorf("%w: it holds nodes of %s and of %s, which cannot order each other's nodes; whatever name herald chose, one of them would not see it in its place. Give each client its own group, or force a dialect (WithDialect, --dialect) if the others are configured to read it (Kazoo's extra_lock_patterns)",
				ErrUnsafeGroup, needs[0].client, n.client)
		}
	}
	return needs[0].dialect, nil
}

// A herald id is 32 hex digits: the session (16), a counter of the
// session's creates (8), and a tag (8) that says herald wrote the node and
// for which recipe: "68726c65" ("hrle") for an election, "68726c6c"
// ("hrll") for a lock. The session and counter let a participant find its
// node after a lost create reply and guess its predecessor's name in a
// rotation; the tag lets an observer tell herald's election from its lock
// in any dialect. In the Curator dialects it is written as a UUID
// (8-4-4-4-12), the shape of Curator's own protection ids.
const (
	heraldIDLen   = 32
	heraldTag     = "68726c"
	tagElection   = "65"
	tagLock       = "6c"
	heraldUUIDLen = 36
)

// heraldID is what a herald id encodes.
type heraldID struct {
	session int64
	nonce   uint32
	recipe  Recipe
}

func (h heraldID) hex() string {
	b := make([]byte, 0, heraldIDLen)
	b = appendHex(b, uint64(h.session), 16)
	b = appendHex(b, uint64(h.nonce), 8)
	b = append(b, heraldTag...)
	if h.recipe == RecipeLock {
		return string(append(b, tagLock...))
	}
	return string(append(b, tagElection...))
}

func (h heraldID) uuid() string {
	x := h.hex()
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// parseHeraldHex reads a herald id from 32 hex digits.
func parseHeraldHex(x string) (heraldID, bool) {
	if len(x) != heraldIDLen || x[24:30] != heraldTag {
		return heraldID{}, false
	}
	var h heraldID
	switch x[30:] {
	case tagElection:
		h.recipe = RecipeElection
	case tagLock:
		h.recipe = RecipeLock
	default:
		return heraldID{}, false
	}
	s, ok := parseHex(x[:16])
	n, ok2 := parseHex(x[16:24])
	if !ok || !ok2 {
		return heraldID{}, false
	}
	h.session, h.nonce = int64(s), uint32(n)
	return h, true
}

// parseHeraldUUID reads a herald id written as a UUID.
func parseHeraldUUID(u string) (heraldID, bool) {
	if len(u) != heraldUUIDLen || u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-' {
		return heraldID{}, false
	}
	return parseHeraldHex(u[0:8] + u[9:13] + u[14:18] + u[19:23] + u[24:36])
}

func parseHex(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// nodeBase is the name herald creates (ZooKeeper appends the sequence) for
// id in dialect d; prefix is the classic dialect's prefix.
func nodeBase(d Dialect, id heraldID, prefix string) string {
	switch d {
	case DialectCuratorLock:
		return "_c_" + id.uuid() + "-lock-"
	case DialectCuratorLatch:
		return "_c_" + id.uuid() + "-latch-"
	case DialectKazoo:
		return id.hex() + "__lock__"
	}
	return prefix + id.hex() + "_"
}

// marker is the part of a node's name that identifies our create: found
// again in the children after a lost create reply.
func marker(d Dialect, id heraldID) string {
	if d == DialectCuratorLock || d == DialectCuratorLatch {
		return id.uuid()
	}
	return id.hex()
}

// heraldNode reads the herald id and dialect of a queue node's name; ok is
// false for names herald did not write.
func heraldNode(name string) (heraldID, Dialect, bool) {
	seq, ok := ParseSequence(name)
	if !ok {
		return heraldID{}, "", false
	}
	rest := name[:len(name)-seqLen(seq)]
	switch {
	case strings.HasPrefix(rest, "_c_") && len(rest) > 3+heraldUUIDLen && rest[3+heraldUUIDLen] == '-':
		id, ok := parseHeraldUUID(rest[3 : 3+heraldUUIDLen])
		switch rest[3+heraldUUIDLen+1:] {
		case "lock-":
			return id, DialectCuratorLock, ok
		case "latch-":
			return id, DialectCuratorLatch, ok
		}
	case strings.HasSuffix(rest, "__lock__") && len(rest) == heraldIDLen+len("__lock__"):
		id, ok := parseHeraldHex(rest[:heraldIDLen])
		return id, DialectKazoo, ok
	case strings.HasSuffix(rest, "_") && len(rest) > heraldIDLen+1:
		id, ok := parseHeraldHex(rest[len(rest)-1-heraldIDLen : len(rest)-1])
		return id, DialectClassic, ok
	}
	return heraldID{}, "", false
}

// seqLen is how many characters ZooKeeper's suffix for seq takes.
func seqLen(seq int32) int {
	if seq < -999_999_999 {
		return 11
	}
	return 10
}

// hazard says why two clients of a group may each believe they own at
// once, "" when none can: a foreign client that cannot read a node below
// its own as a sequence (Kazoo's Lock does not count it, Curator sorts it
// after its own, go-zookeeper's Lock fails on it) owns as if that node
// were not there, while that node's client owns too. es is the queue in
// sequence order. herald's participants read every name by its sequence:
// the hazard always comes from the mix of names in the group.
func hazard(es []entry) string {
	why, _ := hazardBy(es)
	return why
}

// hazardBy is hazard with the node of the client that misreads: the one
// that may believe it owns ("" when none may).
func hazardBy(es []entry) (why, node string) {
	if why, node := wrapHazard(es); why != "" {
		return why, node
	}
	for i, c := range es {
		n, ok, err := needOf(c.name)
		if !ok && err == nil {
			continue // herald, the classic recipe: every name by its sequence
		}
		for _, x := range es[:i] {
			if n.reads(x.name) {
				continue
			}
			info, _ := ParseName(x.name)
			switch {
			case info.Convention == "herald" && n.dialect != "":
				return fmt.Sprintf("%s cannot read herald's node %s below it, so both may believe they own; herald's participants in this group need the %s dialect (--dialect %s, elect.WithDialect)",
					n.client, x.name, n.dialect, n.dialect), c.name
			case info.Convention == "herald":
				return fmt.Sprintf("%s cannot read herald's node %s below it, so both may believe they own; no name of herald's can be read by it: give these clients groups of their own",
					n.client, x.name), c.name
			}
			return fmt.Sprintf("%s cannot read %s below it, so both may believe they own; give these clients groups of their own", n.client, x.name), c.name
		}
	}
	return "", ""
}

// wrapHazard says why a queue (es) whose group's counter went past
// 2147483647 may have two owners ("" when it may not): ZooKeeper then
// names nodes with negative numbers counting up from -2147483648, which
// herald orders as they were made (SeqLess) and other clients do not:
// Curator and Kazoo compare the text, which puts -0000000003 before
// -0000000005 and every negative name before every positive one;
// go-zookeeper's Lock and the classic recipe compare the signed number,
// which puts the newest negative name before the oldest positive one. So
// once a negative name and a foreign client's name are in one queue, two
// clients may each believe they own. node is the first foreign node.
func wrapHazard(es []entry) (why, node string) {
	i := slices.IndexFunc(es, func(e entry) bool { return e.seq < 0 })
	if i < 0 || len(es) < 2 {
		return "", "" // the usual case, on every listing: no name read
	}
	wrapped := es[i].name
	for _, e := range es {
		if info, _ := ParseName(e.name); info.Convention != "herald" {
			node = e.name
			break
		}
	}
	if node == "" {
		return "", ""
	}
	return fmt.Sprintf("the group's sequence counter went past 2147483647, and ZooKeeper now names its nodes with negative numbers (%s), which the client of %s does not order as they were made, so two clients may each believe they own; give the group a new path (a new parent node starts its counter again)",
		wrapped, node), node
}

// clientWrapHazard is wrapHazard over the nodes of es that are clients:
// isClient tells whether a session holds a node (a node made by hand is no
// client, whatever its name). Each node it rules out is passed over and
// the queue judged again; err is isClient's.
func clientWrapHazard(es []entry, isClient func(node string) (bool, error)) (why, node string, err error) {
	for {
		if why, node = wrapHazard(es); why == "" {
			return "", "", nil
		}
		client, err := isClient(node)
		if err != nil || client {
			return why, node, err
		}
		es = slices.DeleteFunc(slices.Clone(es), func(e entry) bool { return e.name == node })
	}
}

// blindTo finds the foreign client in children that cannot read our node
// ours and so may believe it owns while we do (ok false when none is
// there). Curator misorders a name it cannot read behind its own, Kazoo
// does not see it, and a recipe herald never shares a group with reads no
// name of herald's: each owns as if we were not there, at once or once the
// nodes it does read below its own are gone. go-zookeeper's Lock fails on
// such a name instead of owning, and is not named. node is the client's
// node; names for which skip says true are passed over.
func blindTo(children []string, ours string, skip func(string) bool) (n need, node string, ok bool) {
	for _, c := range children {
		if c == ours || skip != nil && skip(c) {
			continue
		}
		if n, ok, err := needOf(c); (ok || err != nil) && !n.failsOnUnread && !n.reads(ours) {
			return n, c, true
		}
	}
	return need{}, "", false
}

// seqAfterLast: Curator sorts a child by the text after the last
// occurrence of its lock name; the order is right when that is the
// sequence.
func seqAfterLast(name, lockName string) bool {
	i := strings.LastIndex(name, lockName)
	return i >= 0 && isSeqText(name[i+len(lockName):])
}

// goZKReads: go-zookeeper's Lock parses the number after the last "lock-"
// or, in a name without one, after the last "__".
func goZKReads(name string) bool {
	parts := strings.Split(name, "lock-")
	if len(parts) == 1 {
		parts = strings.Split(name, "__")
	}
	_, err := strconv.Atoi(parts[len(parts)-1])
	return err == nil
}

// kazooReads: Kazoo counts only children whose name holds "__lock__" or
// "__rlock__", and sorts them by the text after it.
func kazooReads(name string) bool {
	for _, mark := range []string{"__lock__", "__rlock__"} {
		if i := strings.Index(name, mark); i >= 0 {
			return isSeqText(name[i+len(mark):])
		}
	}
	return false
}

// isSeqText reports whether s is a sequence as ZooKeeper appends it and
// nothing else.
func isSeqText(s string) bool {
	seq, ok := ParseSequence(s)
	return ok && len(s) == seqLen(seq)
}
