package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// The owners bucket is written with compare-and-set on each key's last
// revision. herald writes the KV messages itself (the same subjects and
// headers the KV API uses) so that a delete marker can carry the term it
// retires: HeaderTerm. Every KV client still reads the bucket as usual.
const (
	HeaderTerm = "Herald-Term"
	// HeaderSource, on a delete marker, names the bridge that wrote it.
	HeaderSource = "Herald-Source"
	kvOpHeader   = "KV-Operation"
	kvOpDelete   = "DEL"
	kvOpPurge    = "PURGE"
	maxCAS       = 16
)

// owners writes the owners bucket.
type owners struct {
	js     jetstream.JetStream
	stream jetstream.Stream // the bucket's stream, KV_<bucket>
	prefix string           // $KV.<bucket>.
}

// apply folds a group's events of one batch into the group's current value
// and writes the result once, if it changed. A concurrent writer makes the
// compare-and-set fail; apply then reads again and folds again.
func (o *owners) apply(ctx context.Context, group string, events []publish.Event) error {
	key, err := publish.Tokens(group)
	if err != nil {
		return err
	}
	for range maxCAS {
		cur, rev, err := o.read(ctx, key)
		if err != nil {
			return err
		}
		next := cur
		for _, e := range events {
			next = step(next, e)
		}
		if same(cur, next) {
			return nil
		}
		err = o.write(ctx, key, rev, next)
		if err == nil || !casConflict(err) {
			return err
		}
	}
	return fmt.Errorf("%w: group %s after %d attempts", ErrConflict, group, maxCAS)
}

// read returns the group's view and the revision to compare against (0:
// the key was never written).
func (o *owners) read(ctx context.Context, key string) (view, uint64, error) {
	m, err := o.stream.GetLastMsgForSubject(ctx, o.prefix+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return view{}, 0, nil
	}
	if err != nil {
		return view{}, 0, fmt.Errorf("jetstream: read owner of %s: %w", key, err)
	}
	return decodeView(m.Header, m.Data), m.Sequence, nil
}

// decodeView reads a bucket entry; an unreadable value counts as no owner
// with no guard, so herald's next event repairs it.
func decodeView(h nats.Header, data []byte) view {
	if op := h.Get(kvOpHeader); op == kvOpDelete || op == kvOpPurge {
		g, _ := strconv.ParseInt(h.Get(HeaderTerm), 10, 64)
		var vc vacancy
		_ = json.Unmarshal(data, &vc) // a marker without a body has no zxid
		return view{guard: g, source: h.Get(HeaderSource), zxid: vc.Zxid, written: true, recipe: vc.Recipe, epoch: vc.Epoch, note: vc.Note}
	}
	var w Owner
	if err := json.Unmarshal(data, &w); err != nil {
		return view{written: true}
	}
	return view{owner: &w, written: true}
}

func (o *owners) write(ctx context.Context, key string, rev uint64, v view) error {
	m := nats.NewMsg(o.prefix + key)
	if v.owner != nil {
		data, err := json.Marshal(v.owner)
		if err != nil {
			return fmt.Errorf("jetstream: encode owner of %s: %w", key, err)
		}
		m.Data = data
		m.Header.Set(HeaderTerm, strconv.FormatInt(v.owner.Term, 10))
	} else {
		m.Header.Set(kvOpHeader, kvOpDelete)
		m.Header.Set(HeaderTerm, strconv.FormatInt(v.guard, 10))
		if v.source != "" {
			m.Header.Set(HeaderSource, v.source)
		}
		// Watchers see a marker's body, not its headers.
		m.Data, _ = json.Marshal(vacancy{Source: v.source, Term: v.guard, Zxid: v.zxid, Recipe: v.recipe, Epoch: v.epoch, Note: v.note})
	}
	if _, err := o.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev)); err != nil {
		return fmt.Errorf("jetstream: write owner of %s at revision %d: %w", key, rev, err)
	}
	return nil
}

// casConflict reports whether err says the key moved on since we read it.
func casConflict(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
