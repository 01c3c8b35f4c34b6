package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Staleness. A value in a store of current owners (the JetStream KV bucket,
// the Kafka owners topic) names the bridge that wrote it (Owner.Source, the
// event's Source). A bridge confirms its values with one heartbeat record per
// bridge, not per group, kept beside them (KV bucket herald_bridges, Kafka
// topic herald.bridges): Heartbeat. A reader judges a value with the
// heartbeat of its writer (Bridges.Judge):
//
//   - fresh while the writer's last heartbeat says active and is no older
//     than StaleAfter: max(3 heartbeat intervals, MinStaleAfter), or while
//     another bridge of the writer's HA election (same Heartbeat.HA) is
//     active within its bound: it took over and observes the same groups,
//     having published whatever changed since it began to watch;
//   - stale otherwise: the last heartbeat is older, or says standby or
//     stopped (a bridge that stops cleanly, or stops observing, says so at
//     once);
//   - not judged (never stale) when the writer has sent no heartbeat at all: a
//     bridge writes one when it starts, before any value, so such a writer is
//     one that sends none (an older herald, or another tool).

// BridgeState says whether a bridge confirms the values it wrote.
type BridgeState string

const (
	// BridgeActive: observing and publishing. Every change it saw before
	// the heartbeat's Time is stored beside the heartbeat.
	BridgeActive BridgeState = "active"
	// BridgeStandby: running but confirming nothing (starting, standing by
	// for HA, or it lost its ZooKeeper session or HA leadership).
	BridgeStandby BridgeState = "standby"
	// BridgeStopped: stopped cleanly; it confirms nothing any more.
	BridgeStopped BridgeState = "stopped"
)

// Heartbeat defaults.
const (
	// DefaultHeartbeat is how often an active bridge confirms its values.
	DefaultHeartbeat = 5 * time.Second
	// MinStaleAfter is the least time a value stays fresh after a heartbeat,
	// whatever the interval: room for clock skew and scheduling.
	MinStaleAfter = time.Second
)

// Heartbeat is one bridge's record: its state and when it last confirmed
// the values it wrote. JSON: {"source","state","time","interval"} with the
// interval as a Go duration ("5s").
type Heartbeat struct {
	// Source names the bridge (the Source of its events).
	Source string
	State  BridgeState
	// Time, on the bridge's clock: for an active bridge, every change it
	// observed before Time is stored in the sink holding this record; for
	// the others, when it entered State.
	Time time.Time
	// Interval is how often the bridge writes a heartbeat while active.
	Interval time.Duration
	// HA is the bridge's HA election path ("" without HA): the bridges of
	// one election observe the same groups, so the active one confirms
	// the values the others wrote.
	HA string
	// Confirmed is the Time of the bridge's last active heartbeat (zero
	// when it has not confirmed anything since it started): for an active
	// heartbeat, Time itself.
	Confirmed time.Time
	// Unconfirmed lists, in an active heartbeat, the groups whose values it
	// does not confirm, each with the time since which the bridge has not
	// read it (an ACL that refuses READ, a read that keeps failing, a
	// group not read again yet after the connection came back), or since
	// the time of its event the sink refused for good (the sink's value
	// of it is the one before, until a later event is stored): every
	// change before that time is stored, later ones may be missing. At
	// most MaxUnconfirmed; a bridge with more writes no active heartbeat.
	Unconfirmed map[string]time.Time
	// Scope is which groups the bridge observes (nil from bridges that
	// do not say: every group); it confirms values of those only.
	Scope *Scope
}

// MaxUnconfirmed bounds Heartbeat.Unconfirmed: a bridge that cannot read
// more groups than this confirms none of its values until it can.
const MaxUnconfirmed = 1000

type heartbeatJSON struct {
	Source    string      `json:"source"`
	State     BridgeState `json:"state"`
	Time      time.Time   `json:"time"`
	Interval  string      `json:"interval"`
	HA        string      `json:"ha,omitempty"`
	Confirmed time.Time   `json:"confirmed,omitzero"`
	// Unconfirmed: group path → RFC 3339 time.
	Unconfirmed map[string]time.Time `json:"unconfirmed,omitempty"`
	Scope       *Scope               `json:"scope,omitempty"`
}

// MarshalJSON writes the interval as a duration string.
func (h Heartbeat) MarshalJSON() ([]byte, error) {
	return json.Marshal(heartbeatJSON{Source: h.Source, State: h.State, Time: h.Time, Interval: h.Interval.String(), HA: h.HA, Confirmed: h.Confirmed, Unconfirmed: h.Unconfirmed, Scope: h.Scope})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (h *Heartbeat) UnmarshalJSON(b []byte) error {
	var j heartbeatJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	d, err := time.ParseDuration(j.Interval)
	if err != nil {
		return fmt.Errorf("publish: heartbeat interval %q: %w", j.Interval, err)
	}
	*h = Heartbeat{Source: j.Source, State: j.State, Time: j.Time, Interval: d, HA: j.HA, Confirmed: j.Confirmed, Unconfirmed: j.Unconfirmed, Scope: j.Scope}
	return nil
}

// Validate reports what is wrong with a heartbeat, if anything.
func (h Heartbeat) Validate() error {
	switch {
	case h.Source == "":
		return errors.New("publish: heartbeat without a source")
	case h.State != BridgeActive && h.State != BridgeStandby && h.State != BridgeStopped:
		return fmt.Errorf("publish: heartbeat of %s has unknown state %q", h.Source, h.State)
	case h.Time.IsZero():
		return fmt.Errorf("publish: heartbeat of %s has no time", h.Source)
	case h.Interval <= 0:
		return fmt.Errorf("publish: heartbeat of %s has interval %v", h.Source, h.Interval)
	}
	return nil
}

// StaleAfter is how long after Time a value the bridge confirmed stays
// fresh: three intervals, at least MinStaleAfter.
func (h Heartbeat) StaleAfter() time.Duration { return max(3*h.Interval, MinStaleAfter) }

// DecodeHeartbeat reads a heartbeat record's JSON and validates it.
func DecodeHeartbeat(data []byte) (Heartbeat, error) {
	var h Heartbeat
	if err := json.Unmarshal(data, &h); err != nil {
		return h, fmt.Errorf("publish: heartbeat: %w", err)
	}
	return h, h.Validate()
}

// BridgeKey is a bridge's key in the KV bucket of heartbeats: the source
// with every byte outside [A-Za-z0-9_-] written as '=' and two uppercase
// hex digits ('.' and '/' included), so any source is one valid KV key.
func BridgeKey(source string) string {
	var b strings.Builder
	for i := 0; i < len(source); i++ {
		c := source[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// HeartbeatSink is implemented by sinks that keep current values (JetStream,
// Kafka), and by the audit log, which keeps its bridge's latest heartbeat
// beside it so that its reader can judge the owners it leaves holding. A
// bridge writes its heartbeats with it directly, beside the pipeline; it
// must be safe to call concurrently with Write, and after Connect
// succeeded once.
type HeartbeatSink interface {
	Sink
	WriteHeartbeat(ctx context.Context, h Heartbeat) error
}

// Freshness is what a reader can say about a value from the heartbeats.
type Freshness struct {
	// Stale is true when no bridge confirms the value within its bound, or
	// the one that would said it stopped: the value may no longer be true.
	Stale bool `json:"stale"`
	// ConfirmedBy is the bridge whose heartbeat judges the value: its
	// writer, or a bridge of the writer's HA election that took over (""
	// when the value names no writer).
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	// Confirmed is when ConfirmedBy last confirmed the value (zero when it
	// has not: it sent no heartbeat, or stands by since it started).
	Confirmed time.Time `json:"confirmed,omitzero"`
	// BridgeState is ConfirmedBy's last state ("" when it sent no
	// heartbeat: the value is not judged).
	BridgeState BridgeState `json:"bridge_state,omitempty"`
	// StaleReason says why the value is stale.
	StaleReason string `json:"stale_reason,omitempty"`
	// StaleAt is when a fresh value turns stale unless it is confirmed
	// again (zero when stale or not judged).
	StaleAt time.Time `json:"stale_at,omitzero"`
	// OutOfScope says ConfirmedBy's heartbeat leaves the group out (the
	// bridge restarted under another shard or configuration): Confirmed
	// is zero, as its heartbeats date nothing of the group, yet the value
	// was confirmed before, by the bridge that wrote it. JSON calls it
	// what Describe says: a script told only stale and no "confirmed"
	// would take it for never confirmed.
	OutOfScope bool `json:"no_longer_confirmed,omitempty"`
}

// Differs reports whether a reader told f should be told g: the value
// turned stale or fresh, another bridge confirms it, or that bridge's
// state changed (a value delivered before its bridge's first heartbeat
// becomes confirmed). A later Confirmed or StaleAt alone does not count:
// every heartbeat moves them.
func (f Freshness) Differs(g Freshness) bool {
	return f.Stale != g.Stale || f.ConfirmedBy != g.ConfirmedBy || f.BridgeState != g.BridgeState
}

// Describe says in one line what Freshness means at now: "last confirmed
// by X at T, 12s ago" and, when stale, why; "" when the value names no
// writer.
func (f Freshness) Describe(now time.Time) string {
	switch {
	case f.ConfirmedBy == "":
		return ""
	case f.BridgeState == "":
		return "not judged: " + f.ConfirmedBy + " sends no heartbeats"
	case f.Confirmed.IsZero() && f.OutOfScope:
		// Its writer observed the group when it wrote the value: "never"
		// would deny that.
		return "no longer confirmed (" + f.StaleReason + ")"
	case f.Confirmed.IsZero():
		return "never confirmed (" + f.StaleReason + ")"
	}
	s := fmt.Sprintf("last confirmed by %s at %s, %s ago", f.ConfirmedBy, f.Confirmed.UTC().Format(time.RFC3339Nano), roundAge(now.Sub(f.Confirmed)))
	if f.Stale && f.StaleReason != "" {
		s += " (" + f.StaleReason + ")"
	}
	return s
}

func roundAge(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// Bridges is a table of the latest heartbeat of every bridge, and the rule
// that judges values with it. It is safe for concurrent use.
type Bridges struct {
	mu sync.Mutex
	m  map[string]Heartbeat
	// removed: the bridges whose heartbeat the store says was deleted
	// (see Removed), and when.
	removed map[string]time.Time
	// unreadable: why the store of heartbeats, which exists, cannot be
	// read now ("" when it can, or does not exist).
	unreadable string
}

// SetUnreadable records that the store of heartbeats exists but cannot be
// read now (err), or, with nil, that it can be read again or does not
// exist. While it cannot, a value whose bridge has no heartbeat in the
// table is judged stale, saying why, rather than passed unjudged as one
// whose bridge never wrote a heartbeat: the heartbeat that would say the
// bridge stopped may be the one that cannot be read. A value whose
// heartbeat grows too old meanwhile is stale as ever, with a reason that
// names this reader's trouble rather than blaming the bridge alone.
// It reports whether that changed what the table says.
func (b *Bridges) SetUnreadable(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.unreadable
	b.unreadable = ""
	if err != nil {
		b.unreadable = err.Error()
	}
	return b.unreadable != was
}

// NewBridges returns an empty table.
func NewBridges() *Bridges {
	return &Bridges{m: map[string]Heartbeat{}, removed: map[string]time.Time{}}
}

// Removed records that the store deleted the heartbeat of source at at (a
// purge, a key deleted by hand when a bridge was taken down): a value it
// wrote is then stale, saying so, not passed unjudged as one whose bridge
// never sent a heartbeat; nothing confirms it any more. A later heartbeat
// of source replaces it. It reports whether the table changed.
func (b *Bridges) Removed(source string, at time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, had := b.m[source]
	delete(b.m, source)
	if was, ok := b.removed[source]; ok && was.Equal(at) && !had {
		return false
	}
	if b.removed == nil {
		b.removed = map[string]time.Time{}
	}
	b.removed[source] = at
	return true
}

// SourceOfBridgeKey is the source whose heartbeat BridgeKey files under
// key; false when key is not such a key.
func SourceOfBridgeKey(key string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case plain(c):
			b.WriteByte(c)
		case c == '=' && i+2 < len(key):
			v, err := strconv.ParseUint(key[i+1:i+3], 16, 8)
			if err != nil || plain(byte(v)) {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 0
}

// Put records h as its bridge's latest heartbeat (the store keeps the last
// one written per bridge, and readers deliver them in that order, so the
// last one given wins whatever the clocks say); it reports whether the
// table changed. An invalid heartbeat is ignored.
func (b *Bridges) Put(h Heartbeat) bool {
	if h.Validate() != nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur, ok := b.m[h.Source]; ok && h.Time.Equal(cur.Time) && h.State == cur.State && h.Interval == cur.Interval {
		return false
	}
	b.m[h.Source] = h
	delete(b.removed, h.Source)
	return true
}

// Get returns the latest heartbeat of source.
func (b *Bridges) Get(source string) (Heartbeat, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[source]
	return h, ok
}

// Judge says, at now, whether a value written (or last re-stated) by
// writers is stale: fresh when one of them, or a bridge of its HA
// election, confirms it; see the rule at the top of this file. With no
// writer, or writers that never sent a heartbeat, the value is not judged
// (Stale false, BridgeState ""). It judges a value whose group is not
// known; JudgeGroup also heeds the groups a heartbeat does not confirm.
func (b *Bridges) Judge(now time.Time, writers ...string) Freshness {
	return b.JudgeGroup(now, "", writers...)
}

// JudgeGroup is Judge for a value of group: stale too while the
// heartbeat that would confirm it lists the group as unconfirmed (its
// bridge cannot read it).
func (b *Bridges) JudgeGroup(now time.Time, group string, writers ...string) Freshness {
	b.mu.Lock()
	defer b.mu.Unlock()
	var best Freshness
	judged := false
	for _, w := range writers {
		if w == "" {
			continue
		}
		hw, ok := b.m[w]
		if !ok {
			if !judged && best.ConfirmedBy == "" {
				best = Freshness{ConfirmedBy: w}
				switch at, gone := b.removed[w]; {
				case gone:
					best.Stale = true
					best.StaleReason = "the heartbeat of " + w + " was deleted from the store"
					if !at.IsZero() {
						best.StaleReason += " at " + at.UTC().Format("2006-01-02T15:04:05.00Z07:00")
					}
					best.StaleReason += " (purged, or removed by hand): nothing confirms its values any more"
				case b.unreadable != "":
					best.Stale = true
					best.StaleReason = "the bridges' heartbeats cannot be read: " + b.unreadable
				}
			}
			continue
		}
		cands := []Heartbeat{hw}
		if hw.HA != "" {
			for _, h := range b.m {
				if h.HA == hw.HA && h.Source != w {
					cands = append(cands, h)
				}
			}
		}
		for _, h := range cands {
			f := judge(h, now, group, b.unreadable)
			if !judged || better(f, best) {
				best = f
			}
			judged = true
		}
	}
	return best
}

// JudgeAbsent judges, at now, a group for which a store holds no value
// naming its writer: no key at all (a group the store never held, a key
// purged, a store made again), or a deletion nobody signed. That says "no
// owner" only while a bridge that observes the group (its heartbeat's
// scope covers it) confirms within its bound: that bridge would have
// written an owner. Otherwise the absence is stale: the group may have an
// owner that no running bridge reports (its bridge is down, or none
// observes it). So is an absence with no heartbeat in the table at all:
// a bridge starting has made its stores before its first heartbeat and
// before it has read the group, and no bridge may be running at all. It
// used to be left unjudged, and who said "no owner", not stale, of a
// group that had one the starting bridge had not read yet (found when a
// test campaigned in that window).
func (b *Bridges) JudgeAbsent(now time.Time, group string) Freshness {
	b.mu.Lock()
	defer b.mu.Unlock()
	var best Freshness
	judged := false
	for _, h := range b.m {
		f := judge(h, now, group, b.unreadable)
		if !h.Scope.Covers(group) {
			// It never confirmed anything of the group.
			f.ConfirmedBy, f.Confirmed, f.BridgeState = "", time.Time{}, ""
		}
		if !judged || better(f, best) || !better(best, f) && f.ConfirmedBy > best.ConfirmedBy {
			best, judged = f, true
		}
	}
	switch {
	case !judged && b.unreadable != "":
		return Freshness{Stale: true, StaleReason: "nothing confirms that the group has no owner: the bridges' heartbeats cannot be read: " + b.unreadable}
	case !judged && len(b.removed) > 0:
		return Freshness{Stale: true, StaleReason: "nothing confirms that the group has no owner: every bridge's heartbeat was deleted from the store (purged, or removed by hand), and none has sent one since; is a bridge running for this store?"}
	case !judged:
		return Freshness{Stale: true, StaleReason: "nothing confirms that the group has no owner: no bridge has sent a heartbeat here (one starting sends its first once it has read its groups; is a bridge running for this store?)"}
	case best.Stale:
		best.StaleReason = "nothing confirms that the group has no owner: " + best.StaleReason
	}
	return best
}

// JudgeUnsigned judges, at now, a value of group that names an owner but
// no writer (a herald from before values named their bridge, or events
// published by hand without a Source): as an absence (JudgeAbsent) while
// some bridge has sent a heartbeat, and not judged while none has, as a
// value whose writer sends none. Judged as an absence with no heartbeat at
// all, such a value read stale, "nothing confirms that the group has no
// owner", beside the owner it named. A store whose heartbeats were deleted
// had bridges that send them: a value there is judged.
func (b *Bridges) JudgeUnsigned(now time.Time, group string) Freshness {
	b.mu.Lock()
	none := len(b.m) == 0 && len(b.removed) == 0 && b.unreadable == ""
	b.mu.Unlock()
	if none {
		return Freshness{}
	}
	return b.JudgeAbsent(now, group)
}

// better reports whether a judges a value more favourably than b: fresh
// over stale, then the later bound, then the later confirmation.
func better(a, b Freshness) bool {
	switch {
	case a.Stale != b.Stale:
		return !a.Stale
	case !a.Stale:
		return a.StaleAt.After(b.StaleAt)
	}
	return a.Confirmed.After(b.Confirmed)
}

// judge judges one heartbeat; unreadable is why this reader cannot read
// heartbeats now ("" when it can), which a heartbeat gone quiet may owe to
// the reader rather than to the bridge.
func judge(h Heartbeat, now time.Time, group string, unreadable string) Freshness {
	f := Freshness{ConfirmedBy: h.Source, BridgeState: h.State, Confirmed: h.Confirmed}
	if group != "" && !h.Scope.Covers(group) {
		// Its confirmations are of other groups: none of them dates
		// this one (a bridge restarted under the same source without
		// the group lent it a later "last confirmed" than its owner's
		// release).
		f.Stale, f.Confirmed, f.OutOfScope = true, time.Time{}, true
		f.StaleReason = fmt.Sprintf("%s does not observe the group (its %s): no bridge of its election confirms it", h.Source, h.Scope)
		return f
	}
	if since, unread := h.Unconfirmed[group]; unread && group != "" && h.State == BridgeActive {
		f.Stale = true
		f.Confirmed = since
		// Unconfirmed also lists the groups whose event the sink refused
		// for good: saying only "cannot read" sent the reader to look at
		// ZooKeeper for a fault that is the sink's.
		f.StaleReason = fmt.Sprintf("%s cannot read the group since %s, or the sink refused its event of then (its live page and log say why)", h.Source, since.UTC().Format(time.RFC3339))
		if since.IsZero() {
			f.StaleReason = fmt.Sprintf("%s has not been able to read the group since it started (its live page and log say why)", h.Source)
		}
		return f
	}
	switch h.State {
	case BridgeStopped:
		f.Stale = true
		f.StaleReason = fmt.Sprintf("%s stopped at %s", h.Source, h.Time.UTC().Format(time.RFC3339))
	case BridgeStandby:
		f.Stale = true
		f.StaleReason = fmt.Sprintf("%s is not publishing since %s", h.Source, h.Time.UTC().Format(time.RFC3339))
	default:
		f.Confirmed = h.Time
		bound := h.StaleAfter()
		if age := now.Sub(h.Time); age < -bound {
			// Dated by a clock ahead of this one (or this one behind): it
			// cannot say how long ago it was written, and taken at its
			// word it kept a dead bridge's values fresh as far ahead as
			// the clocks are apart. A stream dates it no later than the
			// server stored it; the bridges topic and an audit log's
			// heartbeat file have only the bridge's clock.
			f.Stale = true
			f.StaleReason = fmt.Sprintf("%s's heartbeat is dated %s ahead of this host's clock: the clocks disagree, so how long ago it confirmed cannot be told; keep the clocks in step (NTP)", h.Source, roundAge(-age))
		} else if age > bound {
			f.Stale = true
			f.StaleReason = fmt.Sprintf("no heartbeat for %s; %s confirms every %s", roundAge(age), h.Source, h.Interval)
			if unreadable != "" {
				f.StaleReason = fmt.Sprintf("no heartbeat read for %s (%s confirms every %s), and this reader cannot read heartbeats now, so the bridge may still be publishing: %s", roundAge(age), h.Source, h.Interval, unreadable)
			}
		} else {
			f.StaleAt = h.Time.Add(bound)
		}
	}
	return f
}
