package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuditLogRotatedOutsideHeraldMarksAGap: logrotate rotated the audit
// log of a running bridge, in its create mode (the file renamed, a new one
// made at its path) or its copytruncate mode (copied, then cut to
// nothing). Either way the events before are in logrotate's copy, which
// history does not read, and the log at the path begins with worker-2's
// election, which follows nobody: history told worker-2 as the group's
// first owner, GAP no, worker-1's tenure gone without a mark. The
// bridge's first event of each group written after such a rotation now
// says gap.
func TestAuditLogRotatedOutsideHeraldMarksAGap(t *testing.T) {
	for _, mode := range []string{"create", "copytruncate"} {
		t.Run(mode, func(t *testing.T) {
			zk := zkFlags(t)
			g := uniq(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.log")
			madeEmpty(t, g)
			b := start(t, nil, append([]string{"bridge", "--watch", g, "--audit", path, "--heartbeat", "200ms", "--source", "rot-" + mode,
				"--nats-listen", "127.0.0.1:0", "--nats-store", filepath.Join(dir, "nats")}, zk...)...)
			s := zkSession(t)
			h := campaign(t, s, g, "worker-1")
			waitAuditHistory(t, g, path, "worker-1", true, b)
			if err := h.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
			waitAuditHistory(t, g, path, "resigned", false, b)
			rotateOutside(t, path, mode)
			campaign(t, s, g, "worker-2")
			waitAuditHistory(t, g, path, "worker-2", true, b)
			ts := historyJSON(t, g, "--audit", path)
			if len(ts) == 0 || !ts[0].Gap {
				t.Errorf("history of the log logrotate (%s) left: %+v, want its first row marked GAP maybe", mode, ts)
			}
			// Merged with logrotate's copy, the owners before are there
			// (worker-2 still says GAP maybe: the copy cannot show that
			// nothing came between).
			ts = historyJSON(t, g, "--audit", path+".1", "--audit", path)
			if len(ts) != 2 || ts[0].Owner.ID != "worker-1" || ts[1].Owner.ID != "worker-2" {
				t.Errorf("history of the log merged with logrotate's copy: %+v, want worker-1, then worker-2", ts)
			}
		})
	}
}

// waitAuditHistory waits until history --audit path shows what, holding
// or not.
func waitAuditHistory(t *testing.T, g, path, what string, holding bool, b *proc) {
	t.Helper()
	var out string
	if err := waitFor(30*time.Second, func() bool {
		out, _, _ = heraldRun(t, nil, "history", g, "--audit", path)
		return strings.Contains(out, what) && strings.Contains(out, "holding") == holding
	}); err != nil {
		t.Fatalf("history --audit never showed %s (holding %v):\n%s\nbridge:\n%s", what, holding, out, b.out)
	}
}

// rotateOutside rotates the log at path to path.1 as logrotate does in
// mode create or copytruncate.
func rotateOutside(t *testing.T, path, mode string) {
	t.Helper()
	if mode == "create" {
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o640); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}
