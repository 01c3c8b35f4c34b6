package main

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// TestHistoryInBatchesMarksAGroupOfALiveLogRotatedAndRemovedBetweenThem:
// between the batches the live log the count had read was rotated
// (.000002) and retention removed it with the older file: the late
// group's first event, read in the live log, is gone, and charlie, in
// the new live log, follows an owner no file holds now. The live log
// counted as no file retention removes, nothing was marked.
func TestHistoryInBatchesMarksAGroupOfALiveLogRotatedAndRemovedBetweenThem(t *testing.T) {
	_, late, path := rotatedStory(t, false)
	mkL := storyOf(late, time.Now().UTC().Add(-time.Minute))
	c := participant("charlie", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{}, []string{path}, 1, &historyBatchTold, func(batch int) {
		if batch == 1 {
			rotateAwayLive(t, path, mkL(publish.LeaderElected, c, nil, 30, 30, false))
		}
	})
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	checkOwnerGap(t, ts, late, "charlie", true, errs)
}

// rotateAwayLive rotates the live log at path to .000002, as herald's
// sink does, removes every rotated file (retention) and writes evs to a
// new live log.
func rotateAwayLive(t *testing.T, path string, evs ...publish.Event) {
	t.Helper()
	if err := os.Rename(path, path+".000002"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(audit.LastRotatedPath(path), []byte("2\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path + ".000001", path + ".000002"} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, as, evs...)
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryInBatchesDoesNotMarkAGroupOfALiveLogRotatedAndCompressedBetweenThem:
// the live log the count had read rotated between the batches and its
// rotated file compressed (logrotate's compress) lost nothing: the late
// group is not marked.
func TestHistoryInBatchesDoesNotMarkAGroupOfALiveLogRotatedAndCompressedBetweenThem(t *testing.T) {
	_, late, path := rotatedStory(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, batches, errs := historyInBatches(ctx, t, &sourceFlags{}, []string{path}, 1, &historyBatchTold, func(batch int) {
		if batch != 1 {
			return
		}
		if err := os.Rename(path, path+".000002"); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(audit.LastRotatedPath(path), []byte("2\n"), 0o640); err != nil {
			t.Error(err)
		}
		if out, err := exec.Command("gzip", path+".000002").CombinedOutput(); err != nil {
			t.Errorf("gzip: %v\n%s", err, out)
		}
	})
	if batches != 2 {
		t.Fatalf("history told %d batches, want 2 (one for each group)", batches)
	}
	checkNoGap(t, ts, late, "bravo", errs)
}
