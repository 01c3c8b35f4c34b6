package kafkasink

import (
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

func lookup(hs []kafka.Header) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for _, h := range hs {
			if h.Key == k {
				return string(h.Value), true
			}
		}
		return "", false
	}
}

// decodeEvent reads a record of the events topic. Its key must be the
// event's group, as the sink writes it: a reader of one group picks
// records by key, and an event of another group under that key is not
// one of its events.
func decodeEvent(m kafka.Message) (publish.Event, error) {
	e, err := publish.Decode(publish.KafkaPrefix, lookup(m.Headers), m.Value)
	if err != nil {
		return e, fmt.Errorf("kafkasink: %s partition %d offset %d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	if string(m.Key) != e.Group {
		return e, fmt.Errorf("kafkasink: %s partition %d offset %d: key %q but event of group %q", m.Topic, m.Partition, m.Offset, m.Key, e.Group)
	}
	return e, nil
}

// OwnerUpdate is one record of the owners topic: the current owner of a
// group, or that it has none.
type OwnerUpdate struct {
	Group string
	// Event is the change behind the record: leader.elected, leader.ready
	// or lock.acquired while there is an owner; leader.lost or
	// lock.released (from a tombstone's herald_event header) when there
	// is none. Its Type is empty for a tombstone herald did not write.
	Event     publish.Event
	Partition int
	Offset    int64
	// Freshness says whether a bridge that wrote the group's current state
	// (Event.Source, or a later bridge that re-stated it, say after a
	// takeover) still confirms it, from the heartbeats in the bridges
	// topic: Stale is true once none has confirmed it within its bound or
	// said it stopped. When only that changes, FollowOwners delivers the
	// update again (same Offset) with the new Stale.
	publish.Freshness
	// SinceUnseen says the owner was first reported by a snapshot (a
	// bridge's start, a takeover, a reconnect): Event.Time, the time of
	// the tenure's first report, bounds its start from above only.
	SinceUnseen bool
}

// Owner returns the group's owner after the update, nil when it has none.
func (u OwnerUpdate) Owner() *publish.Participant {
	if u.Event.Type.Gains() || u.Event.Type == publish.LeaderReady {
		return u.Event.Owner
	}
	return nil
}

// Ready reports whether the owner has said it took office.
func (u OwnerUpdate) Ready() bool { return u.Event.Type == publish.LeaderReady }

// decodeOwner reads a record of the owners topic.
func decodeOwner(m kafka.Message) (OwnerUpdate, error) {
	u := OwnerUpdate{Group: string(m.Key), Partition: m.Partition, Offset: m.Offset}
	body := m.Value
	if body == nil {
		ev, ok := lookup(m.Headers)(EventHeader)
		if !ok {
			return u, nil // a tombstone written by someone else
		}
		body = []byte(ev)
	}
	e, err := publish.Decode(publish.KafkaPrefix, lookup(m.Headers), body)
	if err != nil {
		return u, fmt.Errorf("kafkasink: %s partition %d offset %d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	if e.Group != u.Group {
		return u, fmt.Errorf("kafkasink: %s partition %d offset %d: key %q but event of group %q", m.Topic, m.Partition, m.Offset, u.Group, e.Group)
	}
	u.Event = e
	if v, ok := lookup(m.Headers)(SinceUnseenHeader); ok && v == "true" && u.Owner() != nil {
		u.SinceUnseen = true
	}
	return u, nil
}
