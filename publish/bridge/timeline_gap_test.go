package bridge_test

import (
	"context"
	"errors"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
)

// TestTimelineShowsOwnersMissingWhileDown: a bridge restarted on its audit
// log after two owners took and gave back a lock unseen finds the lock
// free, as it left it, and says gap=true. The group's timeline on its live
// page draws that stretch as a gap and lists it, though no tenure follows.
func TestTimelineShowsOwnersMissingWhileDown(t *testing.T) {
	addrs := zkAddrs(t)
	g := groupPath(t)
	s := session(t, addrs)
	for _, p := range []string{path.Dir(g), g} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	log := t.TempDir() + "/audit.log"
	cfg := func(src string) bridge.Config {
		a, err := audit.New(log)
		if err != nil {
			t.Fatal(err)
		}
		return bridge.Config{Servers: addrs, Watch: []string{g}, Source: src, Sinks: []publish.Sink{a}}
	}
	logged := func(what string, f func(publish.Event) bool) {
		t.Helper()
		waitFor(t, 15*time.Second, what, func() bool {
			evs, err := audit.ReadAll(context.Background(), log, f)
			return err == nil && len(evs) > 0
		})
	}
	lock := func() string {
		t.Helper()
		n, err := s.Conn().Create(g+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := start(t, cfg("first"))
	f := lock()
	logged("F's lock acquired", func(e publish.Event) bool { return e.Source == "first" && e.Type == publish.LockAcquired })
	if err := s.Conn().Delete(f, -1); err != nil {
		t.Fatal(err)
	}
	logged("F's lock released", func(e publish.Event) bool { return e.Source == "first" && e.Type == publish.LockReleased })
	if err := first.stop(t); err != nil {
		t.Fatal(err)
	}
	for range 2 { // G and H, unseen
		if err := s.Conn().Delete(lock(), -1); err != nil {
			t.Fatal(err)
		}
	}
	second := start(t, cfg("second"))
	logged("the restarted bridge's gap", func(e publish.Event) bool { return e.Source == "second" && e.Gap && e.Owner == nil })
	code, body := get(t, second.Handler(), "/timeline?group="+url.QueryEscape(g))
	if code != 200 || strings.Count(body, `<g class="gap">`) != 1 || !strings.Contains(body, "owners may be missing here") || !strings.Contains(body, `<tr class="missing">`) {
		t.Fatalf("timeline of %s: %d, want one gap drawn and listed:\n%s", g, code, body)
	}
}
