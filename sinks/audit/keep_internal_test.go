package audit

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestSinkKeepsTheRecordOfItsLastRotationFresh: a cleanup by age over the
// log's directory (find -mtime +30 -delete) took .audit.log.rotated once
// the log went 30 days without a rotation, and history then read the log
// as holding every event, its removed rotated files unmarked. The sink
// refreshes the record's time when it opens the log, and once a day while
// it runs, never more often; a log never rotated gets no record.
func TestSinkKeepsTheRecordOfItsLastRotationFresh(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	rec := LastRotatedPath(log)
	if err := os.WriteFile(rec, []byte("3\n"), fileMode); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * 24 * time.Hour).Truncate(time.Second)
	age := func(t *testing.T) time.Time {
		t.Helper()
		fi, err := os.Stat(rec)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	if err := os.Chtimes(rec, old, old); err != nil {
		t.Fatal(err)
	}
	s, err := New(log, quiet(), ProbeInterval(minProbeInterval))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now().Truncate(time.Second)
	s.clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(d); return now }
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if got := age(t); !got.Equal(now) {
		t.Errorf("the record of the last rotation after the sink opened the log: modified %v, want %v (the open)", got, now)
	}
	if err := os.Chtimes(rec, old, old); err != nil {
		t.Fatal(err)
	}
	advance(23 * time.Hour)
	s.keepRotated() // what a probe does
	if got := age(t); !got.Equal(old) {
		t.Errorf("the record was refreshed again within a day: modified %v", got)
	}
	want := advance(2 * time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for !age(t).Equal(want) && time.Now().Before(deadline) {
		time.Sleep(minProbeInterval)
	}
	if got := age(t); !got.Equal(want) {
		t.Errorf("the running sink did not refresh the record a day after: modified %v, want %v", got, want)
	}
	if n, err := lastRotated(log); n != 3 || err != nil {
		t.Errorf("the record after its refreshes: %d, %v; want 3", n, err)
	}

	fresh := filepath.Join(t.TempDir(), "audit.log")
	fs, err := New(fresh, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	if _, err := os.Stat(LastRotatedPath(fresh)); !os.IsNotExist(err) {
		t.Errorf("a log never rotated got a record of a rotation: %v", err)
	}
}

// TestSinkCarriesAnOldRecordOfItsLastRotationIntoTheDotFile: a log that
// herald before 2026-11-30 rotated keeps the number of its last rotation
// in audit.log.rotated alone, until its next rotation. The sink refreshed
// the dot file only, and there was none, so the old record aged and went
// with a cleanup (find -mtime +30 -delete, or find -name 'audit.log.*'
// -delete), and the log whose rotated files were all archived read as
// holding every event. Opening the log carries the number into the dot
// file, which the sink keeps fresh from then on.
func TestSinkCarriesAnOldRecordOfItsLastRotationIntoTheDotFile(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	old := filepath.Clean(log) + lastRotatedSuffix
	if err := os.WriteFile(old, []byte("4\n"), fileMode); err != nil {
		t.Fatal(err)
	}
	s, err := New(log, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := os.Remove(old); err != nil { // the cleanup
		t.Fatal(err)
	}
	if n, err := lastRotated(log); n != 4 || err != nil {
		t.Errorf("the number of the last rotation once the old record was cleaned up: %d, %v; want 4", n, err)
	}
	if gone, err := OldestRemoved(log); !gone || err != nil {
		t.Errorf("OldestRemoved once the old record was cleaned up: %v, %v; want true", gone, err)
	}
}
