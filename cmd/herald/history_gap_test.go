package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// gapStory is a lock group as a bridge restarted over it publishes it: F
// acquired and released (seen), the bridge down while G and H each held
// the lock unseen, then its snapshot finding nobody, with gap=true; then a
// node made by hand (a suspect) and W queued behind it.
func gapStory(group string, at time.Time) []publish.Event {
	f := &publish.Participant{ID: "F", Node: "lock-0000000000", Session: "0x1"}
	mk := func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, ms int) publish.Event {
		e := publish.Event{Type: typ, Group: group, Recipe: elect.RecipeLock, Owner: owner, Previous: prev,
			Term: term, Zxid: zxid, Time: at.Add(time.Duration(ms) * time.Millisecond), Source: "test"}
		if typ.Loses() {
			e.Reason = elect.ReasonUnknown
		}
		return e
	}
	acq := mk(publish.LockAcquired, f, nil, 633, 633, 0)
	acq.Snapshot = true
	rel := mk(publish.LockReleased, nil, f, 633, 634, 1012)
	empty := mk(publish.LockReleased, nil, nil, 0, 640, 8000)
	empty.Snapshot, empty.Gap = true, true
	sus := mk(publish.CandidateJoined, nil, nil, 0, 641, 9000)
	sus.Candidate = &publish.Participant{ID: "leftover", Node: "lock-0000000003", Sequence: 3,
		Suspect: "not ephemeral: no session holds it"}
	w := mk(publish.CandidateJoined, nil, nil, 0, 642, 9500)
	w.Candidate = &publish.Participant{ID: "W", Node: "lock-0000000004", Sequence: 4, Session: "0x4"}
	return []publish.Event{acq.WithID(), rel.WithID(), empty.WithID(), sus.WithID(), w.WithID()}
}

// TestHistoryMarksOwnersMissing: the empty snapshot that says gap=true is
// in every form of herald history, from the audit log and from JetStream:
// a row of its own in the table and --json, a gap drawn in --html, though
// no tenure follows it.
func TestHistoryMarksOwnersMissing(t *testing.T) {
	g := uniq(t)
	story := gapStory(g, time.Now().UTC().Add(-time.Minute))
	path := auditLog(t, story...)
	natsURL, js := jetStreamSink(t)
	write(t, js, story...)
	for _, src := range [][]string{{"--audit", path}, {"--nats", natsURL}} {
		out, stderr, code := heraldRun(t, nil, append([]string{"history", g}, src...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 3 || !strings.Contains(lines[2], "owners may be missing") || !strings.Contains(lines[2], "maybe") {
			t.Errorf("history %v: exit %d, want F's row then the stretch of missing owners:\n%s%s", src, code, out, stderr)
		}
		ts := historyJSON(t, append([]string{g}, src...)...)
		if len(ts) != 2 || ts[0].Owner.ID != "F" || !ts[1].Missing || !ts[1].Gap || !ts[1].Until.Equal(story[2].Time) {
			t.Errorf("history %v --json: %+v: want F, then owners missing until the snapshot", src, ts)
		}
		page := filepath.Join(t.TempDir(), "gap.html")
		if _, stderr, code := heraldRun(t, nil, append([]string{"history", g, "--html", page}, src...)...); code != 0 {
			t.Fatalf("history %v --html: exit %d: %s", src, code, stderr)
		}
		b, err := os.ReadFile(page)
		if err != nil || strings.Count(string(b), `<g class="gap">`) != 1 || !strings.Contains(string(b), "owners may be missing here") {
			t.Errorf("history %v --html: no gap drawn (%v):\n%s", src, err, b)
		}
	}
}
