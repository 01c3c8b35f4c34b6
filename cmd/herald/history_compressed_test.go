package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
)

// gzipFile compresses name into to, as gzip (logrotate's compress) does,
// and removes name.
func gzipFile(t *testing.T, name, to string) {
	t.Helper()
	plain, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, gz.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryReadsGzippedFilesBesideTheLog: logrotate's compress (gzip by
// default) leaves audit.log.1.gz beside the log. history could not read
// it: the file counted for every group up to its time, so alpha, whose
// group it holds nothing of, read open, not confirmed, and given its own
// --audit it was "no herald audit records". A rotation of herald's
// compressed in place (audit.log.000001.gz) was not read at all: a hole,
// alpha GAP maybe. Both are read now, decompressed.
func TestHistoryReadsGzippedFilesBesideTheLog(t *testing.T) {
	g, g2 := uniq(t), uniq(t)+"-other"
	path := filepath.Join(t.TempDir(), "audit.log")
	start := time.Now().UTC().Add(-time.Minute)
	a, c, d := participant("alpha", 1), participant("charlie", 3), participant("delta", 4)
	mk, mk2 := storyOf(g, start), storyOf(g2, start)
	as := rotatingSink(t, path)
	write(t, as, mk(publish.LeaderElected, a, nil, 10, 10, true))
	write(t, as, mk2(publish.LeaderElected, c, nil, 11, 11, true),
		mk2(publish.LeaderLost, nil, c, 11, 15, false), mk2(publish.LeaderElected, d, nil, 20, 20, false))
	stray := path + ".1.gz"
	gzipFile(t, path, stray)
	gzipFile(t, path+".000001", path+".000001.gz")
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := as.WriteHeartbeat(context.Background(), publish.Heartbeat{Source: "test", State: publish.BridgeActive,
		Time: now, Confirmed: now, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	ts := historyJSON(t, "--audit", path)
	if len(ts) != 1 || ts[0].Group != g || !ts[0].Open() || ts[0].Unconfirmed || ts[0].Gap {
		t.Errorf("history of a log whose rotated file is gzipped, beside %s, which holds nothing of %s: %+v, want alpha alone, holding, confirmed, no gap", stray, g, ts)
	}
	ts = historyJSON(t, g2, "--audit", stray)
	if len(ts) != 2 || ts[0].Owner.ID != "charlie" || ts[1].Owner.ID != "delta" {
		t.Errorf("history --audit %s: %+v, want charlie's tenure and delta's", stray, ts)
	}
	if _, stderr, _ := heraldRun(t, nil, "history", "--audit", path); !strings.Contains(stderr, stray) || strings.Contains(stderr, "missing") {
		t.Errorf("history names not %s, or says a rotated file is missing:\n%s", stray, stderr)
	}
}
