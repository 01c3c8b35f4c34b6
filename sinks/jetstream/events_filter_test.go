package jetstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// TestEventsOfAnotherGroupUnderTheSubjectAreSkipped: a herald event of
// group /a published on /q's subject is not /q's event. A reader of /q
// skips it (and counts it) and delivers /q's own events; so does a reader
// of every group, which picks nothing by subject.
func TestEventsOfAnotherGroupUnderTheSubjectAreSkipped(t *testing.T) {
	p := uniq(t)
	a, q := p+"/a", p+"/q"
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: url}})
	js := client(t, url)
	m, err := natssink.Msg(gain(a, "x", 100))
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject, err = publish.Subject(publish.LeaderElected, q); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	own := gain(q, "y", 200)
	write(t, s, own)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev, err := hjs.Events(ctx, js, q)
	if err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, ev); e.ID != own.ID {
		t.Fatalf("a reader of %s got %s %s of group %s; want only %s's own event %s", q, e.Type, e.ID, e.Group, q, own.ID)
	}
	if n := ev.Skipped(); n != 1 {
		t.Fatalf("Skipped = %d, want 1 (the event of %s under %s's subject)", n, a, q)
	}
	select {
	case e := <-ev.Events():
		t.Fatalf("unexpected event %s of %s", e.ID, e.Group)
	case <-time.After(200 * time.Millisecond):
	}
}
