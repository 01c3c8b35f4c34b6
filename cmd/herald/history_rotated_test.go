package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// TestHistoryWarnsOfARotatedFileMissing: an audit log whose rotated files
// have a hole (.000001 and .000003 are there, .000002 was removed) is read,
// with a warning naming the missing file: its events are not in the
// history, and nothing else would say which file held them.
func TestHistoryWarnsOfARotatedFileMissing(t *testing.T) {
	g := uniq(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, as, story(g)...)
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{".000001", ".000003"} {
		if err := os.WriteFile(path+n, b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", path)
	if code != 0 || !strings.Contains(out, "bravo") || !strings.Contains(stderr, "missing") || !strings.Contains(stderr, path+".000002") {
		t.Errorf("history of a log whose .000002 is missing: exit %d, want the history and a warning naming %s.000002:\n%s%s", code, path, out, stderr)
	}
	if err := os.Remove(path + ".000001"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, _ = heraldRun(t, nil, "history", g, "--audit", path); strings.Contains(stderr, "missing between") {
		t.Errorf("history of a log whose oldest files were removed warns of a hole:\n%s", stderr)
	}
}

// TestHistoryMarksTheOwnerAfterARemovedRotatedFile: charlie's whole
// tenure, between alpha's seen end and bravo's election, was in a rotated
// file that was removed. Newest of the rotated files, nothing said it was
// gone; once the next rotation put it between others, history warned and
// still told bravo as following alpha, GAP -, charlie gone without a mark.
// The first event of each group read after a missing file now says gap,
// and a missing newest rotated file is named too.
func TestHistoryMarksTheOwnerAfterARemovedRotatedFile(t *testing.T) {
	g := uniq(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	now := time.Now().UTC().Add(-time.Minute)
	a := participant("alpha", 1)
	c := participant("charlie", 2)
	b := participant("bravo", 3)
	mk := storyOf(g, now)
	as := rotatingSink(t, path)
	write(t, as, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, a, nil, 10, 10, false), mk(publish.LeaderLost, nil, a, 10, 15, false))
	write(t, as, mk(publish.LeaderElected, c, nil, 20, 20, false), mk(publish.LeaderLost, nil, c, 20, 25, false))
	write(t, as, mk(publish.LeaderElected, b, nil, 30, 30, false))
	if err := os.Remove(path + ".000002"); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if _, stderr, code := heraldRun(t, nil, "history", g, "--audit", path); code != 0 || !strings.Contains(stderr, path+".000002") {
			t.Errorf("%s: exit %d, want 0 and a warning naming %s.000002:\n%s", when, code, path, stderr)
		}
		for _, r := range historyJSON(t, g, "--audit", path) {
			if r.Owner.ID == "bravo" && !r.Gap {
				t.Errorf("%s: bravo, first read after the removed file, is not GAP maybe: %+v", when, r)
			}
		}
	}
	check("the newest rotated file removed")
	write(t, as, mk(publish.LeaderReady, b, nil, 30, 31, false))
	check("the removed file between others")
}

// TestHistoryIgnoresADateNamedFileBesideTheLog: a file named like
// audit.log.20261129 (logrotate's dateext with a dot, a copy named by
// date) sits beside a log the bridge rotates itself. It was read as the
// newest rotated file: history warned that twenty million rotated files
// were missing before it, and the sink's next rotation was numbered
// after it, so every later read warned so too. It is no rotation of
// herald's now: history warns, naming it, and reads the log without it.
func TestHistoryIgnoresADateNamedFileBesideTheLog(t *testing.T) {
	g, path, mk := newStory(t)
	a, b := participant("alpha", 1), participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, a, nil, 10, 10, false), mk(publish.LeaderLost, nil, a, 10, 15, false))
	write(t, as, mk(publish.LeaderElected, b, nil, 20, 20, false))
	// A copy of the first rotated file, named by the day.
	first, err := os.ReadFile(path + ".000001")
	if err != nil {
		t.Fatal(err)
	}
	stray := path + ".20261129"
	if err := os.WriteFile(stray, first, 0o640); err != nil {
		t.Fatal(err)
	}
	write(t, as, mk(publish.LeaderReady, b, nil, 20, 21, false))
	if _, err := os.Stat(path + ".000002"); err != nil {
		t.Errorf("the sink's second rotation is not %s.000002: %v", path, err)
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", path)
	if code != 0 || !strings.Contains(out, "bravo") {
		t.Fatalf("history beside a date-named file: exit %d:\n%s%s", code, out, stderr)
	}
	if strings.Contains(stderr, "missing between") || !strings.Contains(stderr, stray) {
		t.Errorf("history beside %s warns of missing files, or does not name it:\n%s", stray, stderr)
	}
	for _, r := range historyJSON(t, g, "--audit", path) {
		if r.Gap {
			t.Errorf("history beside a date-named file marks a gap where none is: %+v", r)
		}
	}
}

// TestHistoryWithADateNamedFileGivenItsOwnAuditDoesNotWarnOfIt: logrotate
// (create, dateext) renamed the log to audit.log.20261129, which is no
// rotation of herald's, and history warned that it was not read, telling
// the operator to give it its own --audit. Given it, history still warned
// that it was not read, next to a history that held its events.
func TestHistoryWithADateNamedFileGivenItsOwnAuditDoesNotWarnOfIt(t *testing.T) {
	g, path, mk := newStory(t)
	a, b := participant("alpha", 1), participant("bravo", 2)
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	write(t, as, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, a, nil, 10, 10, false), mk(publish.LeaderLost, nil, a, 10, 15, false))
	stray := path + ".20261129"
	if err := os.Rename(path, stray); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	write(t, as, mk(publish.LeaderElected, b, nil, 20, 20, false))
	_, stderr, _ := heraldRun(t, nil, "history", g, "--audit", path)
	if !strings.Contains(stderr, stray) {
		t.Errorf("history of the log alone does not name %s:\n%s", stray, stderr)
	}
	// Relative, as an operator in the log's directory gives it.
	rel, err := filepath.Rel(mustGetwd(t), stray)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", path, "--audit", rel)
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "bravo") {
		t.Fatalf("history of the log and %s: exit %d, want alpha and bravo:\n%s%s", stray, code, out, stderr)
	}
	if strings.Contains(stderr, "named by another rotation") {
		t.Errorf("history given %s as its own --audit still warns that it is not read:\n%s", stray, stderr)
	}
}

// TestHistoryDoesNotConfirmAnOwnerADateNamedFileMayHaveEnded: logrotate
// (create, dateext) renamed the log, which held alpha's loss and bravo's
// election, to audit.log.20261129, which history does not read. The
// bridge's heartbeat beside the log stayed active: every change was
// stored, but not where history reads. Alpha, elected in the rotated
// file history read, showed holding, confirmed, GAP -, while bravo held
// the group. An owner last seen before the newest such file was written
// is not confirmed now; one seen after it is, as before.
func TestHistoryDoesNotConfirmAnOwnerADateNamedFileMayHaveEnded(t *testing.T) {
	g, g2 := uniq(t), uniq(t)+"-after"
	path := filepath.Join(t.TempDir(), "audit.log")
	start := time.Now().UTC().Add(-time.Minute)
	a := participant("alpha", 1)
	b := participant("bravo", 2)
	c := participant("charlie", 3)
	mk := func(group string, typ publish.Type, owner, prev *publish.Participant, term, zxid int64, snap bool, at time.Time) publish.Event {
		return publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Previous: prev, Snapshot: snap,
			Term: term, Zxid: zxid, Time: at, Source: "test"}.WithID()
	}
	as := rotatingSink(t, path)
	write(t, as, mk(g, publish.LeaderElected, a, nil, 10, 10, true, start))
	write(t, as, mk(g, publish.LeaderLost, nil, a, 10, 15, false, start.Add(5*time.Second)),
		mk(g, publish.LeaderElected, b, nil, 20, 20, false, start.Add(10*time.Second)))
	if err := os.Rename(path, path+".20261129"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	// Another group, elected after the rename, in the new log.
	write(t, as, mk(g2, publish.LeaderElected, c, nil, 30, 30, true, time.Now().UTC().Add(time.Second)))
	now := time.Now()
	if err := as.WriteHeartbeat(context.Background(), publish.Heartbeat{Source: "test", State: publish.BridgeActive,
		Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, r := range historyJSON(t, "--audit", path) {
		switch {
		case r.Group == g && r.Open() && !r.Unconfirmed:
			t.Errorf("%s, whose end may be in %s.20261129, not read, is confirmed holding: %+v", r.Owner.ID, path, r)
		case r.Group == g2 && r.Unconfirmed:
			t.Errorf("charlie, elected after the file named by a date was written, is not confirmed: %+v", r)
		}
	}
}

// TestHistoryDoesNotConfirmAnOwnerARemovedRotatedFileMayHaveEnded: the
// rotated file that held alpha's loss and bravo's election was removed
// from between the others. The bridge's heartbeat stayed active, and
// alpha, whose group had no event after the hole, read holding,
// confirmed, GAP -, while bravo held it: only a warning on standard error
// said that a file was missing. A group whose last event read is before
// the last hole is not confirmed now; one with events after it is.
func TestHistoryDoesNotConfirmAnOwnerARemovedRotatedFileMayHaveEnded(t *testing.T) {
	g, g2 := uniq(t), uniq(t)+"-after"
	path := filepath.Join(t.TempDir(), "audit.log")
	now := time.Now().UTC().Add(-time.Minute)
	a := participant("alpha", 1)
	b := participant("bravo", 2)
	c := participant("charlie", 3)
	mk := func(group string, typ publish.Type, owner, prev *publish.Participant, term, zxid int64, snap bool) publish.Event {
		return publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Previous: prev, Snapshot: snap,
			Term: term, Zxid: zxid, Time: now.Add(time.Duration(zxid) * time.Second), Source: "test"}.WithID()
	}
	as := rotatingSink(t, path)
	write(t, as, mk(g, publish.LeaderElected, a, nil, 10, 10, true), mk(g2, publish.LeaderElected, c, nil, 5, 11, true))
	write(t, as, mk(g, publish.LeaderLost, nil, a, 10, 15, false), mk(g, publish.LeaderElected, b, nil, 20, 20, false))
	write(t, as, mk(g2, publish.LeaderReady, c, nil, 5, 25, false))
	if err := os.Remove(path + ".000002"); err != nil {
		t.Fatal(err)
	}
	hb := time.Now()
	if err := as.WriteHeartbeat(context.Background(), publish.Heartbeat{Source: "test", State: publish.BridgeActive,
		Time: hb, Confirmed: hb, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, r := range historyJSON(t, "--audit", path) {
		switch {
		case r.Group == g && r.Open() && !r.Unconfirmed:
			t.Errorf("%s, whose end may have been in the removed %s.000002, is confirmed holding: %+v", r.Owner.ID, path, r)
		case r.Group == g2 && r.Unconfirmed:
			t.Errorf("charlie, seen after the removed file, is not confirmed: %+v", r)
		}
	}
}

// storyOf makes the events of election group g as a bridge stores them,
// each dated zxid seconds after now.
func storyOf(g string, now time.Time) func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, snap bool) publish.Event {
	return func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, snap bool) publish.Event {
		return publish.Event{Type: typ, Group: g, Recipe: elect.RecipeElection, Owner: owner, Previous: prev, Snapshot: snap,
			Term: term, Zxid: zxid, Time: now.Add(time.Duration(zxid) * time.Second), Source: "test"}.WithID()
	}
}

// rotatingSink is an audit sink writing path that rotates the log before
// every batch but the first (its size limit is one byte).
func rotatingSink(t *testing.T, path string) *audit.Sink {
	t.Helper()
	as, err := audit.New(path, audit.MaxSize(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	return as
}

// TestHistoryOfADateNamedFileGivenItsOwnAuditConfirmsWithTheLogsHeartbeat:
// as TestHistoryDoesNotConfirmAnOwnerADateNamedFileMayHaveEnded, the
// operator doing what the warning tells: giving audit.log.20261129 its
// own --audit. Its bridge's heartbeat is the one beside the log it was
// renamed from; history warned that none was beside it, "not copied with
// the log", a false alarm right after following its own advice.
func TestHistoryOfADateNamedFileGivenItsOwnAuditConfirmsWithTheLogsHeartbeat(t *testing.T) {
	g := uniq(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	start := time.Now().UTC().Add(-time.Minute)
	mk := storyOf(g, start)
	a := participant("alpha", 1)
	b := participant("bravo", 2)
	as := rotatingSink(t, path)
	write(t, as, mk(publish.LeaderElected, a, nil, 10, 10, true))
	write(t, as, mk(publish.LeaderLost, nil, a, 10, 15, false), mk(publish.LeaderElected, b, nil, 20, 20, false))
	stray := path + ".20261129"
	if err := os.Rename(path, stray); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := as.WriteHeartbeat(context.Background(), publish.Heartbeat{Source: "test", State: publish.BridgeActive,
		Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, "history", "--json", g, "--audit", path, "--audit", stray)
	var ts []audit.Tenure
	if err := json.Unmarshal([]byte(out), &ts); code != 0 || err != nil {
		t.Fatalf("history of the log and %s: exit %d, %v:\n%s%s", stray, code, err, out, stderr)
	}
	if strings.Contains(stderr, "WARN") {
		t.Errorf("history given %s its own --audit, as told, still warns:\n%s", stray, stderr)
	}
	if n := len(ts); n == 0 || ts[n-1].Owner.ID != "bravo" || !ts[n-1].Open() || ts[n-1].Unconfirmed {
		t.Errorf("history given %s: %+v, want bravo last, holding, confirmed by the log's heartbeat", stray, ts)
	}
}

// TestHistoryConfirmsAnOwnerADateNamedFileHoldsNothingOf: logrotate
// renamed the log to audit.log.20261129, which history does not read; it
// held another group's changes only, and was copied back from a backup
// without its time (cp without -p), so it reads as written now. Alpha,
// whose group has no event in it, read open, not confirmed, as every
// owner last seen before the file's time did: one stray file left every
// stable owner of the fleet unconfirmed for as long as it lay there. Only
// an owner of a group the file holds, seen before that group's last event
// in it, may have ended in it.
func TestHistoryConfirmsAnOwnerADateNamedFileHoldsNothingOf(t *testing.T) {
	g, g2 := uniq(t), uniq(t)+"-other"
	path := filepath.Join(t.TempDir(), "audit.log")
	start := time.Now().UTC().Add(-time.Minute)
	a := participant("alpha", 1)
	c := participant("charlie", 3)
	d := participant("delta", 4)
	mk := func(group string, typ publish.Type, owner, prev *publish.Participant, term, zxid int64, snap bool) publish.Event {
		return publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Previous: prev, Snapshot: snap,
			Term: term, Zxid: zxid, Time: start.Add(time.Duration(zxid) * time.Second), Source: "test"}.WithID()
	}
	as := rotatingSink(t, path)
	write(t, as, mk(g, publish.LeaderElected, a, nil, 10, 10, true))
	write(t, as, mk(g2, publish.LeaderElected, c, nil, 11, 11, true),
		mk(g2, publish.LeaderLost, nil, c, 11, 15, false), mk(g2, publish.LeaderElected, d, nil, 20, 20, false))
	stray := path + ".20261129"
	if err := os.Rename(path, stray); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(stray, now, now); err != nil {
		t.Fatal(err)
	}
	if err := as.WriteHeartbeat(context.Background(), publish.Heartbeat{Source: "test", State: publish.BridgeActive,
		Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	ts := historyJSON(t, "--audit", path)
	if len(ts) != 1 || ts[0].Group != g || !ts[0].Open() || ts[0].Unconfirmed {
		t.Errorf("history beside %s, which holds nothing of %s: %+v, want alpha alone, holding, confirmed", stray, g, ts)
	}
	// A line that is no event: its group may be alpha's.
	f, err := os.OpenFile(stray, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{not an event\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if ts := historyJSON(t, "--audit", path); len(ts) != 1 || !ts[0].Unconfirmed {
		t.Errorf("history beside %s, which holds a line that is no event: %+v, want alpha alone, not confirmed", stray, ts)
	}
}

// TestHistoryConfirmsAnOwnerSeenAfterAHoleInAnotherLog: bridge a's log
// lost a rotated file (.000002) after alpha's election, its last event of
// the group; bridge b (its HA peer taking over, say) then saw alpha
// holding, in its own whole log. Alpha read open, not confirmed, while
// both heartbeats were active: a group whose last event in one log lay
// before its hole was unconfirmed whatever the other logs said after it,
// for as long as that log was read. Seen after the hole, the owner is past
// what the missing file may hold.
func TestHistoryConfirmsAnOwnerSeenAfterAHoleInAnotherLog(t *testing.T) {
	g, g2 := uniq(t), uniq(t)+"-other"
	dir := t.TempDir()
	pathA, pathB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	start := time.Now().UTC().Add(-time.Minute)
	a := participant("alpha", 1)
	c := participant("charlie", 3)
	mk := func(src, group string, typ publish.Type, owner *publish.Participant, term, zxid int64, at int) publish.Event {
		return publish.Event{Type: typ, Group: group, Recipe: elect.RecipeElection, Owner: owner, Snapshot: true,
			Term: term, Zxid: zxid, Time: start.Add(time.Duration(at) * time.Second), Source: src}.WithID()
	}
	as := rotatingSink(t, pathA)
	write(t, as, mk("a", g, publish.LeaderElected, a, 10, 10, 10))
	write(t, as, mk("a", g2, publish.LeaderElected, c, 11, 11, 11))
	write(t, as, mk("a", g2, publish.LeaderReady, c, 11, 12, 20))
	if err := os.Remove(pathA + ".000002"); err != nil {
		t.Fatal(err)
	}
	bs, err := audit.New(pathB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	write(t, bs, mk("b", g, publish.LeaderElected, a, 10, 10, 30))
	now := time.Now()
	for src, s := range map[string]*audit.Sink{"a": as, "b": bs} {
		if err := s.WriteHeartbeat(context.Background(), publish.Heartbeat{Source: src, State: publish.BridgeActive,
			Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	ts := historyJSON(t, g, "--audit", pathA, "--audit", pathB)
	if len(ts) != 1 || !ts[0].Open() || ts[0].Unconfirmed {
		t.Errorf("history of alpha, seen by b after a's hole: %+v, want alpha alone, holding, confirmed", ts)
	}
}

// newStory is a new group, the path of an audit log in a directory of its
// own, and the maker of the group's events, dated from a minute ago.
func newStory(t *testing.T) (g, path string, mk func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, snap bool) publish.Event) {
	g = uniq(t)
	return g, filepath.Join(t.TempDir(), "audit.log"), storyOf(g, time.Now().UTC().Add(-time.Minute))
}

// participant is an owner of a story's group: its id, and node and
// session numbered n.
func participant(id string, n int) *publish.Participant {
	return &publish.Participant{ID: id, Node: fmt.Sprintf("n_%010d", n), Session: fmt.Sprintf("0x%x", n)}
}
