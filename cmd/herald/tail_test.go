package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestTailShowsGapAndSuspect: herald tail prints the snapshot that found
// the group without an owner and with gap=true (owners came and went
// unseen; the reader already knew of no owner), marked GAP, and a suspect
// candidate with its mark and why.
func TestTailShowsGapAndSuspect(t *testing.T) {
	srv := natsserver.Start(t)
	js, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	g := uniq(t)
	write(t, js, gapStory(g, time.Now().UTC().Add(-time.Minute))...)
	out, stderr, code := heraldRun(t, nil, "tail", g, "--nats", srv.URL(), "--since", "1h", "--count", "4")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 {
		t.Fatalf("tail: exit %d, %d lines, want 4:\n%s%s", code, len(lines), out, stderr)
	}
	if l := lines[2]; !strings.Contains(l, "lock.released") || !strings.Contains(l, "owner=none") || !strings.Contains(l, "GAP") || !strings.Contains(l, "(snapshot)") {
		t.Errorf("third line %q: want the empty snapshot, owner=none, GAP", l)
	}
	if l := lines[3]; !strings.Contains(l, "candidate=leftover(lock-0000000003)") || !strings.Contains(l, "SUSPECT(not ephemeral: no session holds it)") {
		t.Errorf("fourth line %q: want the suspect and why", l)
	}
}

// TestTailShowsAGroupFirstSeenEmpty: the first event of a group the
// reader never saw says nobody owns it: tail prints it (owner=none), so a
// reader of an empty group sees the group, not silence.
func TestTailShowsAGroupFirstSeenEmpty(t *testing.T) {
	srv := natsserver.Start(t)
	js, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: srv.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.Close() })
	g := uniq(t)
	empty := publish.Event{Type: publish.LockReleased, Group: g, Recipe: elect.RecipeLock, Reason: elect.ReasonUnknown,
		Zxid: 700, Snapshot: true, Time: time.Now().UTC().Add(-time.Minute), Source: "test"}
	write(t, js, empty.WithID())
	out, stderr, code := heraldRun(t, nil, "tail", g, "--nats", srv.URL(), "--since", "1h", "--count", "1")
	if code != 0 || !strings.Contains(out, "lock.released") || !strings.Contains(out, "owner=none") || !strings.Contains(out, g) {
		t.Fatalf("tail of a group first seen empty: exit %d, want its empty snapshot printed:\n%s%s", code, out, stderr)
	}
}
