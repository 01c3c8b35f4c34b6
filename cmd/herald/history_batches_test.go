package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// history --audit holding a few events at a time tells what it tells
// holding them all: the table, the JSON, a window and one group, from two
// bridges' logs; the rows it shows are more than it holds, so they go
// through the spool. A malformed line is warned of once, a file of no
// herald events is still refused, and a budget below one is a usage error.
func TestHistoryReadInBatchesTellsTheSame(t *testing.T) {
	dir := t.TempDir()
	logs := []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")}
	base := uniq(t)
	var groups []string
	for i := range 8 {
		groups = append(groups, fmt.Sprintf("%s/g%d", base, i))
	}
	for i, p := range logs {
		s, err := audit.New(p)
		if err != nil {
			t.Fatal(err)
		}
		var evs []publish.Event
		for j, g := range groups {
			st := story(g)
			if i == 1 { // the second bridge saw only the end of each story
				st = st[2:]
			}
			evs = append(evs, st...)
			if j%2 == 0 {
				evs = append(evs, finalLoss(g))
			}
		}
		write(t, s, evs...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	written, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	garbageAt := fmt.Sprintf("%s:%d", logs[0], strings.Count(string(written), "\n")+1)
	f, err := os.OpenFile(logs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("garbage\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	src := []string{"--audit", logs[0], "--audit", logs[1]}
	for _, args := range [][]string{nil, {"--json"}, {"--since", "60s"}, {"--since", "60s", "--json"}, {groups[3]}, {groups[3], "--json"}} {
		args = append(append([]string{"history"}, args...), src...)
		whole, stderr, code := heraldRun(t, nil, args...)
		if code != 0 || strings.Count(whole, base) < 2 || strings.Count(stderr, "skipped malformed lines") != 1 {
			t.Fatalf("herald %v: exit %d, want 0, rows and one warning of the malformed line:\n%s%s", args, code, whole, stderr)
		}
		batched, stderr, code := heraldRun(t, nil, append(args, "--events-in-memory", "3")...)
		if code != 0 || batched != whole {
			t.Errorf("herald %v --events-in-memory 3: exit %d:\n%s\nwant what it tells holding every event:\n%s", args, code, batched, whole)
		}
		if n := strings.Count(stderr, "skipped malformed lines"); n != 1 || strings.Count(stderr, garbageAt) != 1 {
			t.Errorf("herald %v --events-in-memory 3: warned %d times of the malformed line, want once, naming %s once:\n%s", args, n, garbageAt, stderr)
		}
	}
	var ts []audit.Tenure
	out, _, _ := heraldRun(t, nil, append([]string{"history", "--json", "--events-in-memory", "1"}, src...)...)
	if err := json.Unmarshal([]byte(out), &ts); err != nil || len(ts) != 2*len(groups) {
		t.Errorf("history --json --events-in-memory 1: %d rows, %v; want %d:\n%s", len(ts), err, 2*len(groups), out)
	}

	passwd := filepath.Join(dir, "passwd")
	if err := os.WriteFile(passwd, []byte(strings.Repeat("root:x:0:0:root:/root:/bin/bash\n", 5)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := heraldRun(t, nil, "history", "--audit", passwd, "--events-in-memory", "1"); code != exitFailure || !strings.Contains(stderr, "no herald audit records") {
		t.Errorf("a file of no herald events, read in batches: exit %d, want %d and no herald audit records:\n%s", code, exitFailure, stderr)
	}
	for _, bad := range [][]string{{"--events-in-memory", "0"}, {"--events-in-memory", "-5"}, {"--nats", "nats://127.0.0.1:1"}} {
		args := append(append([]string{"history"}, src...), bad...)
		if _, stderr, code := heraldRun(t, nil, args...); code != exitUsage || !strings.Contains(stderr, bad[0]) {
			t.Errorf("herald %v: exit %d, want %d naming %s:\n%s", args, code, exitUsage, bad[0], stderr)
		}
	}
}
