package jetstream

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

var _ publish.Reporter = (*Sink)(nil)

// LastReports reads the owners bucket: for every group any bridge wrote,
// the owner it reported last (or none) and the zxid and epoch of that
// report. A bridge starting on a connected sink uses it to tell, in each
// group's first snapshot, whether an owner may have come and gone since.
//
// It reads the last entry of every key once, with one ordered consumer,
// and returns when it has seen them all. A "no owner" marker written
// before herald recorded its zxid is reported at the term it retired,
// which can only make the first snapshot say gap where none was.
func (s *Sink) LastReports(ctx context.Context) (map[string]publish.LastReport, error) {
	s.mu.Lock()
	o := s.owners
	s.mu.Unlock()
	if o == nil {
		return nil, fmt.Errorf("jetstream: read the owners bucket: not connected")
	}
	cons, err := o.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{o.prefix + ">"},
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		InactiveThreshold: ReaderIdle,
	})
	if err != nil {
		return nil, fmt.Errorf("jetstream: read the owners bucket %s: %w", s.cfg.Bucket, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if info := cons.CachedInfo(); info != nil {
			_ = o.stream.DeleteConsumer(ctx, info.Name)
		}
	}()
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("jetstream: read the owners bucket %s: %w", s.cfg.Bucket, err)
	}
	out := map[string]publish.LastReport{}
	for pending := info.NumPending; pending > 0; {
		batch, err := cons.Fetch(int(min(pending, 1000)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("jetstream: read the owners bucket %s: %w", s.cfg.Bucket, err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return nil, fmt.Errorf("jetstream: read the owners bucket %s: %w", s.cfg.Bucket, err)
			}
			pending = meta.NumPending
			report(out, m.Subject()[len(o.prefix):], decodeView(m.Headers(), m.Data()))
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("jetstream: read the owners bucket %s: %w", s.cfg.Bucket, err)
		}
		if got == 0 {
			return nil, fmt.Errorf("jetstream: read the owners bucket %s: %d entries still to come, none arrived within 5s; is the NATS server overloaded?", s.cfg.Bucket, pending)
		}
	}
	return out, nil
}

// report adds a bucket entry's view to out, under its group. Keys that are
// not herald group tokens are left out.
func report(out map[string]publish.LastReport, key string, v view) {
	group, err := publish.GroupFromTokens(key)
	if err != nil {
		return
	}
	switch {
	case v.owner != nil:
		out[group] = publish.LastReport{Owner: v.owner.Owner.Node, OwnerID: v.owner.Owner.ID, Term: v.owner.Term, Zxid: v.owner.Zxid, Recipe: v.owner.Recipe, Epoch: v.owner.Epoch}
	case v.zxid != 0:
		out[group] = publish.LastReport{Zxid: v.zxid, Recipe: v.recipe, Epoch: v.epoch}
	case v.guard != 0:
		out[group] = publish.LastReport{Zxid: v.guard, Recipe: v.recipe, Epoch: v.epoch}
	}
}
