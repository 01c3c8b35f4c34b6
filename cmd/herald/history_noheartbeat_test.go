package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// TestHistoryAuditWithoutHeartbeatConfirmsNothing: an audit log read
// without the heartbeat its bridge keeps beside it (copied elsewhere
// without it, or written by an older herald) leaves its open tenure "open,
// not confirmed", with a warning naming the missing file: only that the
// log holds no later event would back "holding". With an active heartbeat
// beside it, the tenure is holding.
func TestHistoryAuditWithoutHeartbeatConfirmsNothing(t *testing.T) {
	g := uniq(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = as.Close() })
	write(t, as, story(g)...)
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", path)
	if code != 0 || !strings.Contains(out, "bravo") || strings.Contains(out, "holding") || !strings.Contains(out, "open, not confirmed") ||
		!strings.Contains(stderr, audit.HeartbeatPath(path)) {
		t.Errorf("history of a log without its heartbeat: exit %d, want bravo open, not confirmed, and a warning naming %s:\n%s%s",
			code, audit.HeartbeatPath(path), out, stderr)
	}
	h := publish.Heartbeat{Source: "test", State: publish.BridgeActive, Time: time.Now(), Interval: 5 * time.Second}
	h.Confirmed = h.Time
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := as.WriteHeartbeat(ctx, h); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = heraldRun(t, nil, "history", g, "--audit", path)
	if code != 0 || !strings.Contains(out, "holding") || stderr != "" {
		t.Errorf("history of a log whose bridge confirms it: exit %d, want bravo holding, no warning:\n%s%s", code, out, stderr)
	}
	// bravo's tenure began 90 s ago: confirmed holding now, it was held
	// at least that long, not "≥ 0s" (the time of its last event).
	out, stderr, _ = heraldRun(t, nil, "history", g, "--audit", path, "--json")
	var ts []audit.Tenure
	if err := json.Unmarshal([]byte(out), &ts); err != nil || len(ts) != 2 || !ts[1].Open() || ts[1].HeldFor < 89*time.Second {
		t.Errorf("history --json: bravo confirmed holding 90 s after it began, want held_for ≥ 89 s (%v):\n%s%s", err, out, stderr)
	}
}
