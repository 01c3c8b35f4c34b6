package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// herald run --nats announces the runner's own election and loss, with the
// same subjects, headers and ids a bridge would use.
func TestRunAnnouncesOnNATS(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	url, announced := announcements(t, g)
	_, stderr, code := heraldRun(t, nil, append(zk, "run", "--election", g, "--id", "announcer", "--nats", url, "--", "true")...)
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, stderr)
	}
	got := announced(2)
	el, lost := got[0], got[1]
	if el.Type != publish.LeaderElected || el.Owner == nil || el.Owner.ID != "announcer" || el.Term <= 0 || el.Group != g {
		t.Fatalf("first announcement %+v, want leader.elected of announcer", el)
	}
	if lost.Type != publish.LeaderLost || lost.Previous == nil || lost.Previous.Node != el.Owner.Node || lost.Term != el.Term {
		t.Fatalf("second announcement %+v, want leader.lost of %s", lost, el.Owner.Node)
	}
	if el.ID != publish.MakeID(g, el.Owner.Node, publish.LeaderElected) {
		t.Fatalf("announced id %s is not the id a bridge gives the same change", el.ID)
	}
}

// announcements starts a NATS server and subscribes to group g's subjects.
// It returns the server's URL and a function that waits for the next n
// events announced there.
func announcements(t *testing.T, g string) (string, func(n int) []publish.Event) {
	t.Helper()
	url := natsserver.Start(t).URL()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tok, err := publish.Tokens(g)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync("herald.*." + tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return url, func(n int) []publish.Event {
		t.Helper()
		var got []publish.Event
		for len(got) < n {
			m, err := sub.NextMsg(10 * time.Second)
			if err != nil {
				t.Fatalf("after %d announced events: %v", len(got), err)
			}
			e, err := natssink.Decode(m)
			if err != nil {
				t.Fatalf("announced message does not decode: %v", err)
			}
			got = append(got, e)
		}
		return got
	}
}

// TestRunnerAnnouncementsStoredOnce (issue 13): `herald run --nats` and
// `herald lock --nats` beside a bridge publishing to JetStream on the same
// server. The runners announce their own transitions with Nats-Msg-Id = the
// event id, the bridge reports the same changes under the same ids (its
// audit log has them), and the HERALD stream stores every ce-id once.
func TestRunnerAnnouncementsStoredOnce(t *testing.T) {
	zk := zkFlags(t)
	url := natsserver.Start(t).URL()
	base := uniq(t)
	ge, gl := base+"/leader", base+"/lock"
	log := filepath.Join(t.TempDir(), "audit.log")
	br := start(t, nil, append([]string{"bridge", "--watch", ge, "--watch", gl, "--nats", url, "--audit", log,
		"--source", "bridge-1", "--http", "127.0.0.1:0"}, zk...)...)
	waitRole(t, waitMatch(t, br, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second), "active")
	// The stream exists and holds the bridge's first snapshots before
	// any runner announces: whatever the runners publish, it captures.
	stored := map[string]*events{ge: streamOf(t, url, ge), gl: streamOf(t, url, gl)}
	for g, ev := range stored {
		waitEvent(t, ev, g+": the bridge's snapshot", func(e publish.Event) bool { return e.Snapshot })
	}
	announced := runnerMessages(t, url)

	for _, args := range [][]string{
		{"run", "--election", ge, "--id", "runner-1"},
		{"lock", "--lock", gl, "--id", "locker-1"},
		{"run", "--election", ge, "--id", "runner-2"},
	} {
		_, stderr, code := heraldRun(t, nil, append(append(zk, args...), "--nats", url, "--", "true")...)
		if code != 0 {
			t.Fatalf("herald %v: exit %d: %s", args, code, stderr)
		}
	}
	// A last change in each group, reported by the bridge alone: the
	// bridge stores a group's events in order, so once this one is in the
	// stream, its reports of the runners' changes are too.
	s := zkSession(t)
	marker := map[string]string{ge: campaign(t, s, ge, "marker").Node()}
	l, err := elect.NewLock(s, gl, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	marker[gl] = h.Node()
	for g, ev := range stored {
		waitEvent(t, ev, g+": the marker", func(e publish.Event) bool {
			return e.Type.Gains() && e.Owner != nil && e.Owner.Node == marker[g]
		})
	}

	msgs := announced()
	if len(msgs) != 6 {
		t.Fatalf("%d runner announcements, want 6 (elected and lost, acquired and released, elected and lost)", len(msgs))
	}
	logged, err := audit.ReadAll(context.Background(), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	byBridge := map[string]publish.Event{}
	for _, e := range logged {
		byBridge[e.ID] = e
	}
	counts := map[string]int{}
	for _, ev := range stored {
		for _, e := range ev.all() {
			counts[e.ID]++
		}
	}
	for _, m := range msgs {
		e, err := natssink.Decode(m)
		if err != nil {
			t.Fatalf("announcement does not decode: %v", err)
		}
		if got := m.Header.Get(nats.MsgIdHdr); got != e.ID || got != m.Header.Get("ce-id") {
			t.Errorf("%s of %s: Nats-Msg-Id %q, ce-id %q: want both the event id %s", e.Type, e.Group, got, m.Header.Get("ce-id"), e.ID)
		}
		b, ok := byBridge[e.ID]
		if !ok {
			t.Errorf("the bridge has no event with the id the runner gave its %s %+v", e.Type, e)
		} else if b.Type != e.Type || b.Group != e.Group || b.Term != e.Term {
			t.Errorf("the bridge's event %+v and the runner's %+v share id %s but not the change", b, e, e.ID)
		}
		if counts[e.ID] != 1 {
			t.Errorf("%s %s (runner %s) stored %d times in stream %s, want once", e.Type, e.ID, e.Source, counts[e.ID], jetstream.DefaultStream)
		}
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("ce-id %s stored %d times", id, n)
		}
	}
}

// streamOf gathers every event of group stored in the HERALD stream, once
// the stream exists.
func streamOf(t *testing.T, url, group string) *events {
	t.Helper()
	js := natsserver.JetStream(t, url)
	if err := waitFor(20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.Stream(ctx, jetstream.DefaultStream)
		return err == nil
	}); err != nil {
		t.Fatalf("stream %s never created: %v", jetstream.DefaultStream, err)
	}
	return streamIDs(t, url, group)
}

// waitEvent waits for an event matching ok among ev.
func waitEvent(t *testing.T, ev *events, what string, ok func(publish.Event) bool) {
	t.Helper()
	if err := waitFor(15*time.Second, func() bool {
		for _, e := range ev.all() {
			if ok(e) {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("%s never reached the stream; got %+v", what, ev.all())
	}
}

// runnerMessages subscribes to every herald subject and returns a function
// listing the messages runners (not bridges) published, headers included.
func runnerMessages(t *testing.T, url string) func() []*nats.Msg {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var mu sync.Mutex
	var got []*nats.Msg
	if _, err := nc.Subscribe(publish.SubjectPrefix+".>", func(m *nats.Msg) {
		if src := m.Header.Get("ce-source"); strings.HasPrefix(src, "herald-run/") || strings.HasPrefix(src, "herald-lock/") {
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []*nats.Msg {
		mu.Lock()
		defer mu.Unlock()
		return append([]*nats.Msg(nil), got...)
	}
}

// TestHistoryOfRunnersBesideABridge: three `herald lock --nats` loops take
// one lock in turn beside a bridge on the same JetStream stream; each
// command prints its term, the truth. The stream keeps whichever copy of a
// change came first, often the runner's, so the runners' events must sort
// among the bridge's as the changes happened: history then shows every
// tenure once, each start and end seen, no gap. Before, a runner's events
// carried its term as their zxid, which sorted a release before the
// candidate events of its own tenure: tenures came out twice, with FROM ?
// and GAP maybe rows, and a released lock as open.
func TestHistoryOfRunnersBesideABridge(t *testing.T) {
	zk := zkFlags(t)
	url := natsserver.Start(t).URL()
	g := uniq(t)
	// Made before the bridge looks: a group made while it looked may
	// have been made more than once, and its first owner then comes with
	// a gap mark (a row of owners not observed) when other groups beside
	// it come and go, as the other tests' do.
	madeEmpty(t, g)
	br := start(t, nil, append([]string{"bridge", "--watch", g, "--nats", url, "--heartbeat", "200ms", "--source", "bridge-1",
		"--http", "127.0.0.1:0"}, zk...)...)
	waitRole(t, waitMatch(t, br, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second), "active")
	var mu sync.Mutex
	terms := map[int64]string{} // the truth: term -> locker
	var wg sync.WaitGroup
	for _, id := range []string{"locker-1", "locker-2", "locker-3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				out, stderr, code := heraldRun(t, nil, append(zk, "lock", "--lock", g, "--id", id, "--nats", url, "--",
					"sh", "-c", `echo "term=$HERALD_TERM"; sleep 0.2`)...)
				var term int64
				if _, err := fmt.Sscanf(strings.TrimSpace(out), "term=%d", &term); code != 0 || err != nil {
					t.Errorf("lock %s: exit %d, %q: %s", id, code, out, stderr)
					return
				}
				mu.Lock()
				terms[term] = id
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var ts []audit.Tenure
	if err := waitFor(20*time.Second, func() bool {
		ts = historyJSON(t, g, "--nats", url)
		closed := 0
		for _, x := range ts {
			if !x.Open() && terms[x.Term] != "" {
				closed++
			}
		}
		return closed == len(terms)
	}); err != nil {
		t.Fatalf("history never closed all %d tenures: %+v", len(terms), ts)
	}
	rows := map[int64]int{}
	for _, x := range ts {
		rows[x.Term]++
		switch {
		case terms[x.Term] == "" || x.Owner.ID != terms[x.Term]:
			t.Errorf("a row no locker held: %+v", x)
		case x.Missing || x.Gap || !x.FromSeen || !x.UntilSeen || x.Reason != elect.ReasonReleased:
			t.Errorf("tenure of %s (term %d) not told whole: %+v", x.Owner.ID, x.Term, x)
		}
	}
	for term, id := range terms {
		if rows[term] != 1 {
			t.Errorf("tenure of %s (term %d) in %d rows, want 1", id, term, rows[term])
		}
	}
	if t.Failed() {
		out, _, _ := heraldRun(t, nil, "history", g, "--nats", url)
		t.Logf("history:\n%s", out)
	}
}
