package kafkasink

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
)

var _ publish.Reporter = (*Sink)(nil)

// LastReports reads the compacted owners topic to its end as it stands:
// for every group, the owner its last record names (or none, from a
// tombstone herald wrote) and the zxid and epoch of the event behind it. A
// bridge starting on the sink uses it to tell, in each group's first
// snapshot, whether an owner may have come and gone since, whichever
// bridge wrote the record. The terms read also become what the sink knows
// each group reached, so a late event of an older term never replaces a
// newer owner there after a restart.
//
// A tombstone someone else wrote, or one compaction already removed, leaves
// the group unreported, as if no bridge had published it.
func (s *Sink) LastReports(ctx context.Context) (map[string]publish.LastReport, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := follow(ctx, s.cfg, s.cfg.OwnersTopic, "", []FollowOption{Unfiltered()},
		func(m kafka.Message) (OwnerUpdate, publish.Event, bool, error) {
			u, err := decodeOwner(m)
			return u, u.Event, false, err
		}, nil)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: read the owners topic %s: %w", s.cfg.OwnersTopic, err)
	}
	defer st.Close()
	out := map[string]publish.LastReport{}
	states := map[string]ownerState{}
	for {
		select {
		case u, ok := <-st.C():
			if !ok {
				return nil, fmt.Errorf("kafkasink: read the owners topic %s: %w", s.cfg.OwnersTopic, st.Err())
			}
			if u.Event.Type == "" {
				delete(out, u.Group)
				continue
			}
			r := publish.LastReport{Zxid: u.Event.Zxid, Recipe: u.Event.Recipe, Epoch: u.Event.Epoch}
			if o := u.Owner(); o != nil {
				r.Owner, r.OwnerID, r.Term = o.Node, o.ID, u.Event.Term
			}
			out[u.Group] = r
			if st := states[u.Group]; u.Event.Term >= st.term || u.Event.Restarts() {
				states[u.Group] = stateOf(u)
			}
		case <-st.Synced():
			s.mu.Lock()
			for g, st := range states {
				if st.term >= s.reached[g].term {
					s.reached[g] = st
				}
			}
			s.mu.Unlock()
			return out, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("kafkasink: read the owners topic %s: %w", s.cfg.OwnersTopic, ctx.Err())
		}
	}
}

// stateOf is what a record of the owners topic says the group reached.
func stateOf(u OwnerUpdate) ownerState {
	st := ownerState{term: u.Event.Term}
	if u.Owner() != nil {
		st.owning, st.ready, st.hazard, st.zxid, st.since, st.unseen = true, u.Ready(), u.Event.Hazard, u.Event.Zxid, u.Event.Time.UnixNano(), u.SinceUnseen
	}
	return st
}
