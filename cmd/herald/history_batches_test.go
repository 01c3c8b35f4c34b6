package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// batchStory is the events of eight groups, as two bridges saw them: the
// first the whole story of each, the second its end.
func batchStory(t *testing.T) (base string, groups []string, bridges [2][]publish.Event) {
	base = uniq(t)
	for i := range 8 {
		groups = append(groups, fmt.Sprintf("%s/g%d", base, i))
	}
	for i := range bridges {
		for j, g := range groups {
			st := story(g)
			if i == 1 {
				st = st[2:]
			}
			bridges[i] = append(bridges[i], st...)
			if j%2 == 0 {
				bridges[i] = append(bridges[i], finalLoss(g))
			}
		}
	}
	return base, groups, bridges
}

// sameInBatches runs herald history with src, as a table, as JSON, with a
// window, for one group and as a timeline (SVG, and HTML of a window), holding every event and then batch at a time
// (more than 3: only the table, and a window as JSON), and wants
// the same output; warn, when not "", is a warning each run
// prints once (for one group only when groupWarns: a stream is read only
// for the group's subjects).
func sameInBatches(t *testing.T, base string, groups []string, batch int, warn string, groupWarns bool, src ...string) {
	t.Helper()
	all := warn
	// Times, not durations: the runs begin at different moments (and a
	// window's chart reaches to now unless it ends before).
	since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	until := time.Now().UTC().Format(time.RFC3339)
	variants := [][]string{nil, {"--json"}, {"--since", since}, {"--since", since, "--json"}, {groups[3]}, {groups[3], "--json"},
		{"--svg", "-"}, {"--html", "-", "--since", since, "--until", until}}
	if batch > 3 {
		// Each read of a topic takes a while: the table, and a window as
		// JSON.
		variants = [][]string{nil, {"--since", since, "--json"}}
	}
	for _, args := range variants {
		if warn = all; len(args) > 0 && args[0] == groups[3] && !groupWarns {
			warn = ""
		}
		args = append(append([]string{"history"}, args...), src...)
		whole, stderr, code := heraldRun(t, nil, args...)
		if code != 0 || strings.Count(whole, base) < 2 || warn != "" && strings.Count(stderr, warn) != 1 {
			t.Fatalf("herald %v: exit %d, want 0, rows and %q once:\n%s%s", args, code, warn, whole, stderr)
		}
		batched, stderr, code := heraldRun(t, nil, append(args, "--events-in-memory", fmt.Sprint(batch))...)
		if code != 0 || unstamped(batched) != unstamped(whole) {
			t.Errorf("herald %v --events-in-memory %d: exit %d:\n%s\nwant what it tells holding every event:\n%s", args, batch, code, batched, whole)
		}
		if warn != "" && strings.Count(stderr, warn) != 1 {
			t.Errorf("herald %v --events-in-memory %d: %q %d times, want once:\n%s", args, batch, warn, strings.Count(stderr, warn), stderr)
		}
	}
}

// writtenAt is when a page says herald wrote it.
var writtenAt = regexp.MustCompile(`Written by herald [^<]*</p>`)

// unstamped is out without the time a page was written, which two runs
// need not share.
func unstamped(out string) string {
	return writtenAt.ReplaceAllString(out, "Written by herald (time)</p>")
}

// rowsInBatchesOfOne wants every row told holding a single event at a
// time, one group a batch.
func rowsInBatchesOfOne(t *testing.T, groups []string, src ...string) {
	t.Helper()
	var ts []audit.Tenure
	out, _, _ := heraldRun(t, nil, append([]string{"history", "--json", "--events-in-memory", "1"}, src...)...)
	if err := json.Unmarshal([]byte(out), &ts); err != nil || len(ts) != 2*len(groups) {
		t.Errorf("history --json --events-in-memory 1 %v: %d rows, %v; want %d:\n%s", src, len(ts), err, 2*len(groups), out)
	}
}

// history --audit holding a few events at a time tells what it tells
// holding them all, from two bridges' logs; the rows it shows are more
// than it holds, so they go through the spool. A malformed line is warned
// of once, a file of no herald events is still refused, and a budget
// below one is a usage error.
func TestHistoryReadInBatchesTellsTheSame(t *testing.T) {
	dir := t.TempDir()
	logs := []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")}
	base, groups, bridges := batchStory(t)
	for i, p := range logs {
		s, err := audit.New(p)
		if err != nil {
			t.Fatal(err)
		}
		write(t, s, bridges[i]...)
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
	sameInBatches(t, base, groups, 3, garbageAt, true, src...)
	rowsInBatchesOfOne(t, groups, src...)

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

// history --nats and --kafka read in batches too, and tell the same; a
// message in the stream or a record in the topic that is no herald event,
// and names no group (so every batch's read decodes it), is warned of
// once, not once a batch.
func TestHistoryFromAStreamReadInBatchesTellsTheSame(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	base, groups, bridges := batchStory(t)
	kafkaAddrs, natsURL, sinks := streamSinks(t)
	for _, s := range sinks {
		write(t, s, bridges[0]...)
		write(t, s, bridges[1]...)
	}
	// A record that is no herald event and names no group (so every
	// batch's read decodes it).
	kw := &kafka.Writer{Addr: kafka.TCP(strings.Split(kafkaAddrs, ",")...), Topic: kafkasink.DefaultEventsTopic, RequiredAcks: kafka.RequireAll}
	defer kw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kw.WriteMessages(ctx, kafka.Message{Value: []byte("garbage")}); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	raw, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Publish(context.Background(), "herald.garbage", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	sameInBatches(t, base, groups, 3, "not a herald event", false, "--nats", natsURL)
	rowsInBatchesOfOne(t, groups, "--nats", natsURL)
	// Each read of a topic takes a while: fewer, bigger batches.
	sameInBatches(t, base, groups, 20, "not a herald event", false, "--kafka", kafkaAddrs)
}
