package audit

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// probeEvery is the probe interval of these tests; the bounds they wait
// are many times longer: the machine may be loaded.
const probeEvery = 100 * time.Millisecond

// logBuf is a log the sink writes while the test reads it.
type logBuf = sinktest.LogBuf

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	sinktest.WaitUntil(t, d, what, cond)
}

// probes counts the goroutines running a sink's probe.
func probes() int { return sinktest.Goroutines("audit.(*Sink).watch(") }

// breakDir makes dir unusable in a way that stops root too: the directory
// (and the log in it) is removed and a regular file put at its path. It
// returns what puts an empty directory back.
func breakDir(t *testing.T, dir string) (restore func()) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, dirMode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConnectedFollowsTheDirectory: an idle sink says not connected within
// a few probes of its directory becoming unusable (replaced by a file),
// with one WARN, and its writes fail; once the directory is back it says
// connected, with one INFO, and the next batch starts a new log at the
// path rather than going to the file removed with the old directory.
func TestConnectedFollowsTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	path := filepath.Join(dir, "audit.log")
	var log logBuf
	s, err := New(path, ProbeInterval(probeEvery), Logger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.Connected() {
		t.Fatal("a sink never connected says it is connected")
	}
	before := probes()
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.Connected() {
		t.Fatal("a sink just connected says it is not")
	}
	evs := sinktest.Events("dir", 1, 4)
	write(t, s, evs[:1])
	time.Sleep(5 * probeEvery) // letting probes run, not ordering
	if !s.Connected() {
		t.Fatalf("turned not connected with its directory fine; log:\n%s", log.String())
	}
	// A look may be under way: its file comes and goes. Left behind, it
	// would stay.
	waitUntil(t, 5*time.Second, "the directory holding only the log: the probe must clean up", func() bool {
		ents, _ := os.ReadDir(dir)
		return len(ents) == 1
	})

	restore := breakDir(t, dir)
	waitUntil(t, 10*time.Second, "not connected with the directory replaced by a file", func() bool { return !s.Connected() })
	waitUntil(t, 5*time.Second, "the WARN", func() bool { return strings.Contains(log.String(), "the log cannot be written") })
	if w := log.String(); !strings.Contains(w, "level=WARN") || !strings.Contains(w, dir) || !strings.Contains(w, "check that it exists") {
		t.Errorf("the WARN does not name the directory and what to check:\n%s", w)
	}
	err = s.Write(context.Background(), evs[1:2])
	if !errors.Is(err, publish.ErrReconnect) || s.Connected() {
		t.Fatalf("Write with the directory gone: %v, connected %v; want an error asking to reconnect, not connected", err, s.Connected())
	}
	time.Sleep(5 * probeEvery) // more failed probes: still one WARN
	if n := strings.Count(log.String(), "the log cannot be written"); n != 1 {
		t.Errorf("%d WARN lines over several failed probes, want 1; log:\n%s", n, log.String())
	}

	restore()
	waitUntil(t, 10*time.Second, "connected with the directory back", s.Connected)
	waitUntil(t, 5*time.Second, "the INFO", func() bool {
		return strings.Contains(log.String(), "level=INFO msg=\"audit: the log can be written again")
	})
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(t, s, evs[1:])
	if got, want := readIDs(t, path), ids(evs[1:]); !slices.Equal(got, want) {
		t.Fatalf("the log at the path holds %v, want %v", got, want)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Connected() {
		t.Error("a closed sink says it is connected")
	}
	waitUntil(t, 5*time.Second, "the probe gone after Close", func() bool { return probes() == before })
}

// A log removed behind the sink's back while the sink is idle, its
// directory still there: the next Write starts a new log at the path and
// says so, instead of appending to the removed file.
func TestWriteFollowsARemovedLog(t *testing.T) {
	var log logBuf
	path := filepath.Join(t.TempDir(), "audit.log")
	s := open(t, path, ProbeInterval(probeEvery), Logger(slog.New(slog.NewTextHandler(&log, nil))))
	evs := sinktest.Events("removed", 1, 3)
	write(t, s, evs[:1])
	if err := os.Rename(path, path+".outside"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * probeEvery) // letting probes run, not ordering
	if !s.Connected() {
		t.Fatal("not connected with the directory writable: the next Write starts a new log")
	}
	write(t, s, evs[1:])
	if got, want := readIDs(t, path), ids(evs[1:]); !slices.Equal(got, want) {
		t.Fatalf("the log at the path holds %v, want %v", got, want)
	}
	if got, want := readIDs(t, path+".outside"), ids(evs[:1]); !slices.Equal(got, want) {
		t.Fatalf("the renamed file holds %v, want %v", got, want)
	}
	if !strings.Contains(log.String(), "level=WARN msg=\"audit: the log file is no longer the one herald had open") {
		t.Errorf("no WARN for the replaced log:\n%s", log.String())
	}
}

// TestHealthGaugeWhileIdle: through the pipeline, herald_sink_healthy for
// the audit sink reads 0 while its directory is unusable and nothing is
// written, and 1 again once it is back.
func TestHealthGaugeWhileIdle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	s, err := New(filepath.Join(dir, "audit.log"), quiet(), ProbeInterval(probeEvery))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	t.Cleanup(func() { _ = s.Close() })
	p := sinktest.RunPipeline(t, []publish.Sink{s}, publish.WithRegisterer(reg), publish.Lossless(s.Name()))
	ctx := t.Context()
	stats := func() publish.SinkStats { return p.Stats().Sinks["audit"] }
	if err := p.Publish(ctx, sinktest.Events(t.Name(), 1, 2)...); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the events stored", func() bool { return stats().Delivered == 2 })
	if v := healthGauge(t, reg); v != 1 {
		t.Fatalf("herald_sink_healthy %v after storing, want 1", v)
	}
	restore := breakDir(t, dir)
	waitUntil(t, 10*time.Second, "herald_sink_healthy 0 with the directory gone", func() bool { return healthGauge(t, reg) == 0 })
	if st := stats(); !st.Down || st.Errors != 0 {
		t.Errorf("stats %+v: want down with no write tried", st)
	}
	restore()
	waitUntil(t, 10*time.Second, "herald_sink_healthy 1 with the directory back", func() bool { return healthGauge(t, reg) == 1 })
}

// healthGauge is herald_sink_healthy{sink="audit"} as reg serves it.
func healthGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return sinktest.HealthGauge(t, reg, "audit")
}

func TestProbeIntervalValidated(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond, 2 * time.Minute} {
		if _, err := New("audit.log", ProbeInterval(d)); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "ProbeInterval") {
			t.Errorf("ProbeInterval(%v): %v, want ErrBadOption naming it", d, err)
		}
	}
}

// TestWriteAfterACopytruncate: an outside logrotate with copytruncate cuts
// the log to nothing behind the sink's back. The sink counted the bytes
// written before as still there, so it rotated the near-empty file at the
// next batch (and a failed write would have padded it back out with
// zeros). It now counts what the file holds, and says what happened.
func TestWriteAfterACopytruncate(t *testing.T) {
	var log logBuf
	path := filepath.Join(t.TempDir(), "audit.log")
	evs := sinktest.Events("truncated", 1, 4)
	one, err := json.Marshal(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, path, MaxSize(int64(len(one))*5/2), Logger(slog.New(slog.NewTextHandler(&log, nil))))
	write(t, s, evs[:2])
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	write(t, s, evs[2:3])
	if got, want := readIDs(t, path), ids(evs[2:3]); !slices.Equal(got, want) {
		t.Fatalf("the log holds %v, want %v", got, want)
	}
	if _, err := os.Stat(rotatedName(path, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the log was rotated with one event in it (stat %s: %v)", rotatedName(path, 1), err)
	}
	if !strings.Contains(log.String(), "cut shorter behind herald's back") {
		t.Errorf("no WARN for the truncated log:\n%s", log.String())
	}
	// logrotate's create mode leaves the events before in its copy
	// (audit.log.1, audit.log.20261129), which history does not read
	// either: the WARN advised it.
	if strings.Contains(log.String(), "create mode") {
		t.Errorf("the WARN advises logrotate's create mode, whose copy history does not read either:\n%s", log.String())
	}
}

// TestCopytruncateJustBeforeTheWriteMarksTheBatch: logrotate's
// copytruncate cut the log after the sink looked at it and before its
// batch landed. The batch was written, unmarked, at the start of the cut
// log, where history reads its first event as the group's first owner,
// following nobody; only the batch after said gap.
func TestCopytruncateJustBeforeTheWriteMarksTheBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	evs := sinktest.Events("cut-under", 1, 4)
	s := open(t, path)
	write(t, s, evs[:2])
	s.beforeWrite = func() {
		s.beforeWrite = nil
		if err := os.Truncate(path, 0); err != nil {
			t.Error(err)
		}
	}
	write(t, s, evs[2:4])
	got, err := ReadAll(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := ids(evs[2:4]); !slices.Equal(ids(got), want) {
		t.Fatalf("the log holds %v, want %v", ids(got), want)
	}
	if !got[0].Gap || got[1].Gap {
		t.Errorf("the log cut just before the batch landed begins unmarked: gap %v, %v; want the group's first event after the cut to say gap, and only it", got[0].Gap, got[1].Gap)
	}
	write(t, s, evs[:1])
	if got, err := ReadAll(context.Background(), path, nil); err != nil || len(got) != 3 || got[2].Gap {
		t.Errorf("the batch after the marked one: %d events (%v), last gap %v; want 3, unmarked", len(got), err, len(got) == 3 && got[2].Gap)
	}
}

// TestLogRotatedOutsideWhileClosedAfterAFailedWriteMarksAGap: a write
// failed (a full disk, say), so the sink closed the log until the next
// Connect; meanwhile logrotate moved it away (create mode) or cut it
// (copytruncate). Connect opened what was at the path as if it were the
// log it had, and the events after, a change first, said no gap.
func TestLogRotatedOutsideWhileClosedAfterAFailedWriteMarksAGap(t *testing.T) {
	for _, mode := range []string{"create", "copytruncate"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			evs := sinktest.Events("closed-"+mode, 1, 4)
			s := open(t, path)
			write(t, s, evs[:2])
			s.mu.Lock()
			err := s.undo(errors.New("no space left on device"))
			s.mu.Unlock()
			if !errors.Is(err, publish.ErrReconnect) {
				t.Fatalf("undo: %v", err)
			}
			switch mode {
			case "create":
				if err := os.Rename(path, path+".1"); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, 0o640); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.Truncate(path, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			write(t, s, evs[2:4])
			got, err := ReadAll(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || !got[0].Gap || got[1].Gap {
				t.Errorf("the log after the outside rotation holds %d events, gap %v; want 2, the first marked", len(got), gaps(got))
			}
		})
	}
}

func gaps(evs []publish.Event) []bool {
	out := make([]bool, len(evs))
	for i, e := range evs {
		out[i] = e.Gap
	}
	return out
}
