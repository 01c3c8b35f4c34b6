package main

import (
	"context"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/publish"
)

// passDeleted marks, in one pass over the stream, a group's event read
// after a message deleted inside the stream (nats stream rmm, a purge of
// one subject) since the group's event before: the deleted message may be
// the group's, its owner's tenure gone with it, and the next told as
// following the last owner read. A deleted message's subject is gone too,
// so an event of another group counts: marked where nothing was lost,
// rather than not where an owner was.
//
// The deleted messages used to be listed once, as the pass began: one
// deleted while the pass read, before the read reached it, was skipped by
// the consumer and marked nothing. Read unfiltered, the consumer delivers
// every message the stream holds, so a sequence it skips was deleted
// before the read reached it, before the pass or during it: the skips are
// the deletions. Read filtered to one group, a skip is mostly other
// groups' messages: the events are held until the read ends and the
// deleted messages listed then, a list that holds every one the read
// skipped.
type passDeleted struct {
	filtered bool
	first    uint64            // the first stream sequence delivered
	last     uint64            // the last stream sequence delivered
	skipped  []uint64          // unfiltered: the last sequence of each run skipped
	prev     map[string]uint64 // each group's last event read
	held     [][]seqEvent      // filtered: the events read, in chunks, handed on at the end
}

// heldChunk is how many events a chunk of passDeleted.held holds: each
// chunk handed on is let go while the events it was copied to grow, so
// the group's events are held about once, not twice, as the read ends.
const heldChunk = 1024

type seqEvent struct {
	e   publish.Event
	seq uint64
}

// delivered notes that the read got the message at seq.
func (d *passDeleted) delivered(seq uint64) {
	if !d.filtered && d.last > 0 && seq > d.last+1 {
		d.skipped = append(d.skipped, seq-1)
	}
	if d.first == 0 {
		d.first = seq
	}
	d.last = max(d.last, seq)
}

// read takes the event at seq: marked and handed to add, or, filtered,
// held for end.
func (d *passDeleted) read(e publish.Event, seq uint64, add func(publish.Event)) {
	if d.filtered {
		if n := len(d.held); n == 0 || len(d.held[n-1]) == heldChunk {
			d.held = append(d.held, nil)
		}
		n := len(d.held) - 1
		d.held[n] = append(d.held[n], seqEvent{e, seq})
		return
	}
	d.mark(&e, seq, d.skipped)
	add(e)
}

// mark marks e, at seq, gap when a sequence of deleted lies between its
// group's event before and it.
func (d *passDeleted) mark(e *publish.Event, seq uint64, deleted []uint64) {
	if p := d.prev[e.Group]; p > 0 && deletedBetween(deleted, p, seq) {
		e.Gap = true
	}
	d.prev[e.Group] = seq
}

// end hands on the events held, filtered, marked against the messages
// deleted inside the stream as the read ended.
func (d *passDeleted) end(ctx context.Context, a *app, jsc js.JetStream, add func(publish.Event)) error {
	if !d.filtered {
		if d.first > 0 {
			a.streamRead = &streamRead{first: d.first, skipped: len(d.skipped) > 0}
		}
		return nil
	}
	deleted, err := streamDeleted(ctx, jsc)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.log.Warn("cannot list the messages deleted inside the stream: an owner whose events were deleted may be left out without a mark", "err", err)
	}
	d.handOn(deleted, add)
	return nil
}

// handOn hands the events held to add, marked against deleted, letting go
// of each chunk once it is handed on: held whole until the last was handed
// on, one group's events (history GROUP --nats) were in memory twice.
func (d *passDeleted) handOn(deleted []uint64, add func(publish.Event)) {
	for i, chunk := range d.held {
		for _, h := range chunk {
			d.mark(&h.e, h.seq, deleted)
			add(h.e)
		}
		d.held[i] = nil
	}
	d.held = nil
}

// streamRead is what a read of the whole stream saw of it: the sequence
// its first message had and whether it skipped any, deleted inside.
// Unfiltered, the read is delivered every message the stream holds, so
// that tells whether it holds its oldest events (headDropped) as the
// stream's info does, for what was read, without asking: a reader not
// allowed stream info ($JS.API.STREAM.INFO) could not ask, was told as
// reading a stream that dropped them, and every group whose events begin
// with a change (a runner's announcements, with no bridge's first look)
// was GAP maybe on a stream that held every event.
type streamRead struct {
	first   uint64
	skipped bool
}

// dropped reports whether the read saw the stream without some of its
// messages: its first not the stream's first, or some skipped; false
// before a read (r nil).
func (r *streamRead) dropped() bool {
	return r != nil && (r.first > 1 || r.skipped)
}
