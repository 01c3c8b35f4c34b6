package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
)

// announcer publishes a runner's own transitions (elected/acquired and
// lost/released) on NATS core subjects, as a bridge would. The events carry
// the same ids a bridge gives the same changes, so consumers count each
// once, and the same id as Nats-Msg-Id: a JetStream stream that captures
// herald.> (a bridge's HERALD) stores each change once, whether the runner
// or a bridge reports it first. Announcing is best effort: a NATS outage
// never stops the child.
type announcer struct {
	sink   *natssink.Sink
	log    *slog.Logger
	source string
	// gainZxid is the zxid the last gain was announced with.
	gainZxid int64
}

const announceTimeout = 5 * time.Second

// newAnnouncer connects to NATS at urls; nil (and no error) when urls is
// empty. A NATS that cannot be reached is logged, and nothing announced.
func newAnnouncer(ctx context.Context, log *slog.Logger, urls []string, auth natsAuth, source string) *announcer {
	if len(urls) == 0 {
		return nil
	}
	source = runnerSource(source)
	s, err := natssink.New(auth.options(strings.Join(urls, ","), source, log))
	if err != nil {
		log.Warn("not announcing transitions on NATS", "err", err)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, announceTimeout)
	defer cancel()
	if err := s.Connect(cctx); err != nil {
		log.Warn("not announcing transitions on NATS", "err", err)
		return nil
	}
	return &announcer{sink: s, log: log, source: source}
}

// runnerSource makes a runner's source ("herald-run/" or "herald-lock/"
// and its --id) a valid CloudEvents source: the id is percent-encoded as
// one path segment, so "herald-run/host with space" is announced as
// "herald-run/host%20with%20space".
func runnerSource(source string) string {
	kind, id, ok := strings.Cut(source, "/")
	if !ok {
		return publish.Source("", source)
	}
	return publish.Source(kind+"/", id)
}

// gained announces that h now owns its group.
//
// Its zxid, which orders it among a bridge's events of the group in the
// stream, is the group's child zxid read now: no earlier than the change
// that made h owner, as a bridge's is the child zxid of the listing that
// showed it. The term (h's node's czxid) came long before: the events a
// bridge published while h waited, the end of the owner before it among
// them, sorted after h's gain, and history read the stream wrong. It names
// the owner before h, as a bridge's gain does.
func (n *announcer) gained(h *elect.Handle, recipe elect.Recipe) {
	if n == nil {
		return
	}
	p := h.Participant()
	if p.Czxid == 0 {
		return // lost before its term was known: there is nothing to announce
	}
	n.gainZxid = max(p.Czxid, childZxid(h))
	e := publish.Event{Type: publish.GainOf(recipe), Group: h.Group(), Recipe: recipe, Owner: publish.FromElect(&p),
		Term: p.Czxid, Zxid: n.gainZxid}
	if prev := h.Predecessor(); prev != "" {
		e.Previous = &publish.Participant{Node: prev}
		if info, ok := elect.ParseName(prev); ok {
			e.Previous.Sequence = info.Sequence
		}
	}
	n.send(e)
}

// childZxid is the zxid of the last change to h's group's children, read
// now (0 when it cannot be read).
func childZxid(h *elect.Handle) int64 {
	ok, st, err := exists(h.Group(), h)
	if err != nil || !ok {
		return 0
	}
	return st.Pzxid
}

// nodeGone reports whether h's node is known deleted.
func nodeGone(h *elect.Handle) bool {
	ok, _, err := exists(h.NodePath(), h)
	return err == nil && !ok
}

// exists reads p's stat on h's session, giving up after a second (a
// connection being lost holds requests until it is back).
func exists(p string, h *elect.Handle) (bool, *zk.Stat, error) {
	type answer struct {
		ok  bool
		st  *zk.Stat
		err error
	}
	c := make(chan answer, 1)
	go func() {
		ok, st, err := h.Session().Conn().Exists(p)
		c <- answer{ok, st, err}
	}()
	select {
	case a := <-c:
		return a.ok, a.st, a.err
	case <-time.After(time.Second):
		return false, nil, context.DeadlineExceeded
	}
}

// lost announces that h no longer owns its group. The announcer stays
// open: a runner with --rejoin announces its next term on it.
func (n *announcer) lost(h *elect.Handle, recipe elect.Recipe) {
	if n == nil {
		return
	}
	p := h.Participant()
	if p.Czxid == 0 {
		return // never announced as owner
	}
	reason := h.Reason()
	if reason == elect.ReasonNone {
		reason = elect.ReasonUnknown
	}
	// After the node's deletion, the group's child zxid is no earlier than
	// it; while the node is kept (a suspension) or nothing can be read,
	// the gain's zxid, so that the loss at least follows the gain.
	zxid := max(p.Czxid, n.gainZxid)
	if nodeGone(h) {
		zxid = max(zxid, childZxid(h))
	}
	n.send(publish.Event{Type: publish.LossOf(recipe), Group: h.Group(), Recipe: recipe, Previous: publish.FromElect(&p),
		Term: p.Czxid, Zxid: zxid, Reason: reason})
}

// close closes the announcer's NATS connection.
func (n *announcer) close() {
	if n != nil {
		_ = n.sink.Close()
	}
}

func (n *announcer) send(e publish.Event) {
	e.Time, e.Source = time.Now().UTC(), n.source
	e = e.WithID()
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	if err := n.publish(ctx, e); err != nil {
		n.log.Warn("could not announce on NATS", "type", e.Type, "group", e.Group, "err", err)
	}
}

// publish sends the announcement and flushes: nil means the server has it.
func (n *announcer) publish(ctx context.Context, e publish.Event) error {
	m, err := announcement(e)
	if err != nil {
		return err
	}
	nc := n.sink.Conn()
	if nc == nil {
		return errors.New("not connected")
	}
	if err := nc.PublishMsg(m); err != nil {
		return err
	}
	return nc.FlushWithContext(ctx)
}

// announcement is e as a bridge publishes it on NATS (subject, CloudEvents
// headers, JSON body) plus Nats-Msg-Id = the event id, the header a
// bridge's JetStream sink sets: the stream deduplicates by it within its
// duplicate window.
func announcement(e publish.Event) (*nats.Msg, error) {
	m, err := natssink.Msg(e)
	if err != nil {
		return nil, err
	}
	m.Header[nats.MsgIdHdr] = []string{e.ID}
	return m, nil
}
