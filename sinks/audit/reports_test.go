package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// TestLastReports: a sink opened on an earlier run's log reports, per
// group, the owner of its newest event (by zxid) or none, and that event's
// epoch, across rotated files and past a malformed line; a group found gone (an event of zxid
// 0, after the others) has none; a log not written yet reports nothing.
func TestLastReports(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	at := func(typ publish.Type, group, owner string, zxid int64) publish.Event {
		e := publish.Event{Type: typ, Group: group, Recipe: elect.RecipeLock, Zxid: zxid, Time: time.Unix(1700000000+zxid, 0).UTC()}
		if owner != "" {
			e.Owner = &publish.Participant{Node: owner}
		}
		return e.WithID()
	}
	fresh := open(t, path)
	if got, err := fresh.LastReports(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("a new log reports %v, %v; want nothing", got, err)
	}
	write(t, fresh, []publish.Event{
		at(publish.LockAcquired, "/a", "a1", 10),
		at(publish.LockAcquired, "/b", "b1", 11),
		at(publish.LockReleased, "/b", "", 12),
		// /c's owner, a waiter who joined and left, then the group found
		// gone (zxid 0): gone is its last word, whatever zxids came before.
		at(publish.LockAcquired, "/c", "c1", 13),
		at(publish.CandidateJoined, "/c", "c1", 14),
		at(publish.CandidateLeft, "/c", "c1", 15),
		at(publish.LockReleased, "/c", "", 0),
	})
	k := at(publish.LeaderElected, "/k", "k1", 16)
	k.Epoch = 5
	write(t, fresh, []publish.Event{k.WithID()})
	_ = fresh.Close()
	// A torn write of an earlier crash in the middle of the log, then more.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("{\"not\": an event\n")
	_ = f.Close()
	// A small limit: the next batches go to a new file each.
	s := open(t, path, MaxSize(1))
	write(t, s, []publish.Event{
		at(publish.LockAcquired, "/a", "a2", 20),
	})
	// A late event of an older zxid does not replace the newest.
	write(t, s, []publish.Event{at(publish.LockAcquired, "/a", "a1", 10)})
	if files, _ := filepath.Glob(path + "*"); len(files) < 2 {
		t.Fatalf("files %v; want the log rotated", files)
	}
	got, err := s.LastReports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]publish.LastReport{"/a": {Owner: "a2", Zxid: 20, Recipe: elect.RecipeLock}, "/b": {Zxid: 12, Recipe: elect.RecipeLock},
		"/c": {Zxid: 15, Recipe: elect.RecipeLock}, "/k": {Owner: "k1", Zxid: 16, Recipe: elect.RecipeLock, Epoch: 5}}
	if len(got) != len(want) || got["/a"] != want["/a"] || got["/b"] != want["/b"] || got["/c"] != want["/c"] || got["/k"] != want["/k"] {
		t.Fatalf("reports %+v; want %+v", got, want)
	}
}
