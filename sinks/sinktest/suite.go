// Package sinktest is the conformance suite every herald sink passes: the
// same events written the same way must come out of every backend in order
// per group, with ids intact, idempotently across retries.
package sinktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Harness adapts one sink to the suite.
type Harness struct {
	// New returns a connected-ready (not yet Connect-ed) sink whose output
	// is isolated from every other call (unique subject, topic, file...).
	New func(t *testing.T) publish.Sink
	// Read returns what the sink stored so far for the groups written, in
	// the order the backend delivers them, waiting up to ctx for at least
	// min events. Duplicates the backend keeps are returned as they are.
	Read func(t *testing.T, ctx context.Context, s publish.Sink, min int) []publish.Event
	// Dedups is true when the backend itself drops a re-written event with
	// an id it already holds (JetStream).
	Dedups bool
}

// Events returns n events for each of the groups, with increasing terms and
// zxids, alternating elected and lost, as a participant would produce them.
func Events(prefix string, groups, n int) []publish.Event {
	var out []publish.Event
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i := 0; i < n; i++ {
		for g := 0; g < groups; g++ {
			group := fmt.Sprintf("/%s/g%d", prefix, g)
			node := fmt.Sprintf("n_%010d", i)
			owner := &publish.Participant{ID: fmt.Sprintf("cand-%d", i), Node: node, Session: "0x1", Sequence: int32(i)}
			e := publish.Event{
				Type: publish.LeaderElected, Group: group, Recipe: elect.RecipeElection,
				Owner: owner, Term: int64(1000 + i), Zxid: int64(2000 + 2*i),
				Time: now, Source: "sinktest",
			}
			out = append(out, e.WithID())
		}
	}
	return out
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("OrderPerGroup", func(t *testing.T) { orderPerGroup(t, h) })
	t.Run("RetryIsIdempotent", func(t *testing.T) { retryIsIdempotent(t, h) })
	t.Run("HeadersAndBodyAgree", func(t *testing.T) { roundTrip(t, h) })
	t.Run("WriteAfterClose", func(t *testing.T) { writeAfterClose(t, h) })
}

func open(t *testing.T, h Harness) publish.Sink {
	t.Helper()
	s := h.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Fatalf("%s: connect: %v", s.Name(), err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func write(t *testing.T, s publish.Sink, batch []publish.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Write(ctx, batch); err != nil {
		t.Fatalf("%s: write %d events: %v", s.Name(), len(batch), err)
	}
}

func read(t *testing.T, h Harness, s publish.Sink, min int) []publish.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := h.Read(t, ctx, s, min)
	if len(got) < min {
		t.Fatalf("%s: read %d events, want at least %d", s.Name(), len(got), min)
	}
	return got
}

// byGroup keeps the first occurrence of every id, grouped.
func byGroup(evs []publish.Event) map[string][]publish.Event {
	seen := map[string]bool{}
	out := map[string][]publish.Event{}
	for _, e := range evs {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		out[e.Group] = append(out[e.Group], e)
	}
	return out
}

func orderPerGroup(t *testing.T, h Harness) {
	s := open(t, h)
	evs := Events(t.Name(), 3, 20)
	// Write in several batches, as the pipeline does.
	for i := 0; i < len(evs); i += 7 {
		end := min(i+7, len(evs))
		write(t, s, evs[i:end])
	}
	got := byGroup(read(t, h, s, len(evs)))
	want := byGroup(evs)
	for g, w := range want {
		gg := got[g]
		if len(gg) != len(w) {
			t.Fatalf("%s: group %s: got %d distinct events, want %d", s.Name(), g, len(gg), len(w))
		}
		for i := range w {
			if gg[i].ID != w[i].ID || gg[i].Term != w[i].Term {
				t.Fatalf("%s: group %s event %d: got id %s term %d, want id %s term %d",
					s.Name(), g, i, gg[i].ID, gg[i].Term, w[i].ID, w[i].Term)
			}
		}
	}
}

func retryIsIdempotent(t *testing.T, h Harness) {
	s := open(t, h)
	evs := Events(t.Name(), 1, 5)
	write(t, s, evs)
	write(t, s, evs) // the pipeline retries whole batches
	got := read(t, h, s, len(evs))
	if h.Dedups && len(got) != len(evs) {
		t.Fatalf("%s: backend dedups, yet holds %d events for %d distinct ids", s.Name(), len(got), len(evs))
	}
	g := byGroup(got)[evs[0].Group]
	if len(g) != len(evs) {
		t.Fatalf("%s: %d distinct events after a retried batch, want %d", s.Name(), len(g), len(evs))
	}
	for i := range evs {
		if g[i].ID != evs[i].ID {
			t.Fatalf("%s: event %d has id %s, want %s", s.Name(), i, g[i].ID, evs[i].ID)
		}
	}
}

func roundTrip(t *testing.T, h Harness) {
	s := open(t, h)
	e := Events(t.Name(), 1, 1)[0]
	e.Type = publish.LeaderLost
	e.Previous, e.Owner = e.Owner, nil
	e.Reason = elect.ReasonResigned
	e.Gap = true
	e = e.WithID()
	write(t, s, []publish.Event{e})
	got := read(t, h, s, 1)[0]
	if got.ID != e.ID || got.Type != e.Type || got.Group != e.Group || got.Reason != e.Reason ||
		!got.Gap || got.Previous == nil || got.Previous.Node != e.Previous.Node || !got.Time.Equal(e.Time) {
		t.Fatalf("%s: stored %+v, want %+v", s.Name(), got, e)
	}
}

func writeAfterClose(t *testing.T, h Harness) {
	s := open(t, h)
	if err := s.Close(); err != nil {
		t.Fatalf("%s: close: %v", s.Name(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Write(ctx, Events(t.Name(), 1, 1)); err == nil {
		t.Fatalf("%s: write after close succeeded; it must fail so the pipeline keeps the batch", s.Name())
	}
}
