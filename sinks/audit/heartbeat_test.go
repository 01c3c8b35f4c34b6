package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
)

// TestHeartbeatBesideTheLog: the sink keeps its bridge's latest heartbeat
// in one file beside the log, replaced whole, readable by the log's group,
// never taken for a rotated file nor read as events; a log without one
// reads as not found, a file that holds no heartbeat is an error naming
// it, and a closed sink writes none.
func TestHeartbeatBesideTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log", "audit.log")
	s := open(t, path)
	if _, found, err := ReadHeartbeat(path); found || err != nil {
		t.Fatalf("before any heartbeat: found=%v err=%v, want neither", found, err)
	}
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for i, st := range []publish.BridgeState{publish.BridgeStandby, publish.BridgeActive, publish.BridgeStopped} {
		hb := publish.Heartbeat{Source: "b-1", State: st, Time: at.Add(time.Duration(i) * time.Second), Interval: 5 * time.Second, HA: "/ha",
			Confirmed: at.Add(time.Second), Scope: &publish.Scope{Watch: []string{"/g"}}}
		if err := s.WriteHeartbeat(context.Background(), hb); err != nil {
			t.Fatal(err)
		}
		got, found, err := ReadHeartbeat(path)
		if err != nil || !found || got.State != st || !got.Time.Equal(hb.Time) || got.HA != "/ha" || !got.Scope.Covers("/g") || got.Scope.Covers("/h") {
			t.Fatalf("heartbeat %d read back as %+v (found=%v, err=%v), want %+v", i, got, found, err, hb)
		}
	}
	fi, err := os.Stat(HeartbeatPath(path))
	if err != nil || fi.Mode().Perm() != fileMode {
		t.Errorf("heartbeat file: %v, mode %v; want %v", err, fi.Mode().Perm(), os.FileMode(fileMode))
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".heartbeat.") {
			t.Errorf("a temporary file was left beside the log: %s", e.Name())
		}
	}
	if names, _, _ := rotated(path); len(names) != 0 {
		t.Errorf("the heartbeat file was taken for a rotated log: %v", names)
	}
	if err := s.WriteHeartbeat(context.Background(), publish.Heartbeat{Source: "b-1"}); err == nil {
		t.Error("an invalid heartbeat was written")
	}
	if err := os.WriteFile(HeartbeatPath(path), []byte("not json\n"), fileMode); err != nil {
		t.Fatal(err)
	}
	if _, found, err := ReadHeartbeat(path); found || err == nil || !strings.Contains(err.Error(), HeartbeatPath(path)) {
		t.Errorf("a heartbeat file holding no heartbeat: found=%v err=%v, want an error naming the file", found, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	hb := publish.Heartbeat{Source: "b-1", State: publish.BridgeActive, Time: at, Interval: time.Second}
	if err := s.WriteHeartbeat(context.Background(), hb); !errors.Is(err, ErrClosed) {
		t.Errorf("heartbeat after Close: %v, want ErrClosed", err)
	}
}
