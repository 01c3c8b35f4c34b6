package kafkasink

import (
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

// EventHeader carries, on a tombstone of the owners topic, the JSON of the
// loss event that emptied the group: a tombstone has no body to hold it,
// and consumers need its id and term to deduplicate and fence.
const EventHeader = "herald_event"

// SinceUnseenHeader ("true") marks an owners-topic record whose owner was
// first reported by a snapshot (a bridge's start, a takeover, a
// reconnect): the record's time, the tenure's first report, bounds its
// start from above only (OwnerUpdate.SinceUnseen).
const SinceUnseenHeader = "herald_since_unseen"

// Keys are group paths ("/jobs/nightly"), not publish.Tokens: that is what
// an operator types into kcat or sees in any console, and both name the
// group one-to-one. The partitioner (murmur2 by default, as Java's) sends
// one key to one partition, so a group's events stay in order.
func key(group string) []byte { return []byte(group) }

func headers(hs []publish.Header) []kafka.Header {
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header{Key: h.Key, Value: []byte(h.Value)}
	}
	return out
}

func eventMessage(topic string, e publish.Event) (kafka.Message, error) {
	hs, body, err := publish.Encode(e, publish.KafkaPrefix)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("kafkasink: %w", err)
	}
	return kafka.Message{Topic: topic, Key: key(e.Group), Value: body, Headers: headers(hs), Time: e.Time}, nil
}

// ownerMessage is the owners-topic record for an owner-changing event: the
// event as value for gains and ready, a tombstone (nil value) for a loss.
// unseen marks an owner first reported by a snapshot (SinceUnseenHeader).
func ownerMessage(topic string, e publish.Event, unseen bool) (kafka.Message, error) {
	m, err := eventMessage(topic, e)
	if err != nil || !e.Type.Loses() {
		if err == nil && unseen {
			m.Headers = append(m.Headers, kafka.Header{Key: SinceUnseenHeader, Value: []byte("true")})
		}
		return m, err
	}
	m.Headers = append(m.Headers, kafka.Header{Key: EventHeader, Value: m.Value})
	m.Value = nil
	return m, nil
}

// ownerState is what the owners topic last got for a group: the term it
// reached and, while the record names that term's owner, whether it said
// ready, the hazard it carried (as of zxid) and the time of the tenure's
// first record (and whether that was a snapshot's: unseen), so that a
// record restating only the hazard keeps the rest.
type ownerState struct {
	term   int64
	zxid   int64
	since  int64 // unix nanoseconds
	ready  bool
	owning bool
	hazard string
	unseen bool
}

// ownerChanges coalesces a batch into one owner change per group, in the
// order groups first appear, given what each group last reached in the
// owners topic. It returns the changes and the states the groups reach
// once they are written; reached itself is not modified. A loss that names
// a successor (Owner set) writes nothing: the successor's own event will.
// Stale events (a term below what the group reached) write nothing, so a
// late loss never erases a newer owner. An event that changes only the
// group's hazard (a candidate event) restates the owner's record with it.
func ownerChanges(batch []publish.Event, reached map[string]ownerState) ([]publish.Event, map[string]ownerState) {
	final := map[string]*publish.Event{}
	state := map[string]ownerState{}
	var order []string
	put := func(e publish.Event, st ownerState) {
		if _, ok := final[e.Group]; !ok {
			order = append(order, e.Group)
		}
		final[e.Group] = &e
		state[e.Group] = st
	}
	for _, e := range batch {
		st, known := state[e.Group]
		if !known {
			st, known = reached[e.Group]
		}
		if e.Restarts() {
			st, known = ownerState{}, false // a new ensemble: older terms do not count
		}
		if !e.Type.Gains() && !e.Type.Loses() && e.Type != publish.LeaderReady {
			if r, ok := restate(st, e); ok {
				st.hazard, st.zxid = e.Hazard, e.Zxid
				put(r, st)
			}
			continue
		}
		switch {
		case e.Type.Loses() && e.Owner != nil:
			continue
		case e.Type.Loses() && e.Previous == nil:
			// A snapshot saying "no owner at zxid Z": it supersedes
			// owners whose node (czxid = term) is no newer than Z.
			if known && st.term > e.Zxid {
				continue
			}
		case known && e.Term < st.term:
			continue
		}
		next := ownerState{term: max(e.Term, st.term)}
		if !e.Type.Loses() {
			next.owning, next.ready, next.hazard, next.zxid, next.since = true, e.Type == publish.LeaderReady, e.Hazard, e.Zxid, e.Time.UnixNano()
			next.unseen = e.Snapshot || e.NotBefore != nil // seen late: from above only
			if st.owning && st.term == e.Term {
				// The same tenure (ready, or reported again): its record
				// keeps the time of its first, which readers take for
				// since.
				next.since, next.unseen = st.since, st.unseen
				e.Time = time.Unix(0, st.since).UTC()
			}
		}
		put(e, next)
	}
	out := make([]publish.Event, len(order))
	for i, g := range order {
		out[i] = *final[g]
	}
	return out, state
}

// restate is the owners record for the owner st describes, carrying the
// hazard e reports about its tenure: the record as it was written (the
// same type and time), with the new hazard and e's zxid. Its id is its
// own, derived from the owner's node and that zxid, so that a follower
// that remembers the first record's id still takes it (two bridges
// restating the same change give it the same id). ok is false when e is
// about another tenure, or tells nothing new of the hazard
// (publish.Event.HazardNews).
func restate(st ownerState, e publish.Event) (publish.Event, bool) {
	if !st.owning || e.Owner == nil || e.Term != st.term || !e.HazardNews(st.zxid, st.hazard) {
		return e, false
	}
	r := e
	r.Type = publish.GainOf(e.Recipe)
	if st.ready {
		r.Type = publish.LeaderReady
	}
	r.Candidate, r.Previous, r.Reason, r.Snapshot = nil, nil, "", false
	r.Time = time.Unix(0, st.since).UTC()
	r.ID = publish.MakeID(r.Group, r.Owner.Node+"\x00hazard@"+strconv.FormatInt(e.Zxid, 10), r.Type)
	return r, true
}

// Chunk limits: every chunk goes to each partition as a single produce
// request, which Kafka appends atomically, so a failed write never leaves a
// later message of a key stored behind an earlier one that was not.
const (
	chunkMessages = 500
	chunkBytes    = 900 << 10 // under the brokers' default message.max.bytes (1 MiB)
	// maxMessageBytes bounds one message: kafka-go's batch limit, and the
	// brokers' default message.max.bytes.
	maxMessageBytes = 1 << 20
	// ownerOverhead is what an event's owners-topic record may add to its
	// events-topic record: a tombstone carries the body in a header.
	ownerOverhead = len(EventHeader) + 8
)

// messageSize estimates m's size on the wire, with record overhead.
func messageSize(m kafka.Message) int {
	n := len(m.Key) + len(m.Value) + 64
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

func chunks(msgs []kafka.Message) [][]kafka.Message {
	var out [][]kafka.Message
	start, size := 0, 0
	for i, m := range msgs {
		n := messageSize(m)
		if i > start && (i-start >= chunkMessages || size+n > chunkBytes) {
			out = append(out, msgs[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(msgs) {
		out = append(out, msgs[start:])
	}
	return out
}
