package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

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
func (n *announcer) gained(h *elect.Handle, recipe elect.Recipe) {
	if n == nil {
		return
	}
	p := h.Participant()
	if p.Czxid == 0 {
		return // lost before its term was known: there is nothing to announce
	}
	n.send(publish.Event{Type: publish.GainOf(recipe), Group: h.Group(), Recipe: recipe, Owner: publish.FromElect(&p),
		Term: p.Czxid, Zxid: p.Czxid})
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
	n.send(publish.Event{Type: publish.LossOf(recipe), Group: h.Group(), Recipe: recipe, Previous: publish.FromElect(&p),
		Term: p.Czxid, Zxid: p.Czxid, Reason: reason})
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
