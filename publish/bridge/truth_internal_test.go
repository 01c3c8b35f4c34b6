package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/heraldtest"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
)

// TestDiscovererKeepsItsGroupsWhenTheSessionEnds: a discoverer that finds
// its session gone before the session's term has ended (the term ends a
// moment later, when sessionCtx hears of it) keeps its groups, and with
// them their truth, for the next session: it used to drop them at once,
// so every discovered group's owner changes went back to 0 when a session
// expired.
func TestDiscovererKeepsItsGroupsWhenTheSessionEnds(t *testing.T) {
	addrs := zktest.Shared(t).Addrs()
	admin := heraldtest.Session(t, addrs)
	root := heraldtest.Path(t, "/t")
	g := root + "/one"
	el, err := elect.NewElection(admin, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := el.Campaign(heraldtest.Ctx(t, 10*time.Second), "a"); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Servers: addrs, Discover: []string{root}, Sinks: []publish.Sink{nopSink{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.pipe.Close(context.Background()) })
	s := heraldtest.Session(t, addrs)
	ctx, cancel := context.WithCancel(context.Background())
	wait := b.startObserving(ctx, s)
	t.Cleanup(func() { cancel(); wait() })
	known := func() bool {
		b.truth.mu.Lock()
		defer b.truth.mu.Unlock()
		tg := b.truth.groups[g]
		return tg != nil && tg.known
	}
	for deadline := time.Now().Add(10 * time.Second); !known(); time.Sleep(10 * time.Millisecond) { // polling, not ordering
		if time.Now().After(deadline) {
			t.Fatalf("%s not observed within 10s", g)
		}
	}

	_ = s.Close() // the session ends; its term (ctx) has not yet
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !known() || !b.observed(g) {
			t.Fatalf("%s dropped, with its truth, because the session ended before its term", g)
		}
	}
	cancel()
	wait()
	if !known() {
		t.Errorf("%s's truth dropped when the term ended", g)
	}
}
