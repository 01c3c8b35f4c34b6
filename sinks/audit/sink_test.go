package audit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

func quiet() Option { return Logger(slog.New(slog.NewTextHandler(io.Discard, nil))) }

func TestConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T) publish.Sink {
			s, err := New(filepath.Join(t.TempDir(), "log", "audit.log"), quiet())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Read: func(t *testing.T, ctx context.Context, s publish.Sink, min int) []publish.Event {
			evs, err := ReadAll(ctx, s.(*Sink).Path(), nil)
			if err != nil {
				t.Fatalf("read back: %v", err)
			}
			return evs
		},
	})
}

func open(t *testing.T, path string, opts ...Option) *Sink {
	t.Helper()
	s, err := New(path, append([]Option{quiet()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Connect(context.Background()); err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func write(t *testing.T, s *Sink, evs []publish.Event) {
	t.Helper()
	if err := s.Write(context.Background(), evs); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func readIDs(t *testing.T, path string) []string {
	t.Helper()
	evs, err := ReadAll(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}

func ids(evs []publish.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestModeDirectoryAndFsyncPerBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "audit.log")
	s := open(t, path)
	evs := sinktest.Events("mode", 2, 3)
	write(t, s, evs[:2])
	write(t, s, evs[2:])
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("log mode %v, want 0640", st.Mode().Perm())
	}
	if got := s.Stats(); got.Batches != 2 || got.Syncs != 2 {
		t.Fatalf("stats %+v: want 2 batches each followed by an fsync", got)
	}
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte("\n")); n != len(evs) {
		t.Fatalf("file has %d lines, want one per event (%d)", n, len(evs))
	}
}

func TestTornTailTruncatedOnConnect(t *testing.T) {
	for name, tail := range map[string]string{
		"unterminated":     `{"id":"abc","type":"leader.el`,
		"zeros":            "\x00\x00\x00\x00",
		"invalid+newline":  "{\"id\":\"x\",\x00\x00\n",
		"unterminated+bad": "garbage\n{\"id\":",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			s := open(t, path)
			evs := sinktest.Events("torn", 1, 4)
			write(t, s, evs[:3])
			s.Close()
			before, _ := os.ReadFile(path)

			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(tail)
			f.Close()

			// The Reader already copes before any repair, except
			// with a bad line that ends in a newline: that one it
			// reports.
			got, rerr := ReadAll(context.Background(), path, nil)
			if len(got) != 3 {
				t.Fatalf("reader before repair: %d events, want 3 (err %v)", len(got), rerr)
			}

			s2 := open(t, path)
			if d := s2.Stats().TornBytes; d != int64(len(tail)) {
				t.Fatalf("dropped %d bytes, want the %d of the torn tail", d, len(tail))
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatalf("repair changed the complete lines:\nbefore %q\nafter  %q", before, after)
			}
			write(t, s2, evs[3:])
			if got, want := readIDs(t, path), ids(evs); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("after repair and a new write: ids %v, want %v", got, want)
			}
		})
	}
}

func TestRotationAndReaderOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	evs := sinktest.Events("rot", 2, 30)
	line, _ := os.ReadFile(writeOne(t, dir, evs[0]))
	s := open(t, path, MaxSize(int64(len(line))*5))
	for i := 0; i < len(evs); i += 3 {
		write(t, s, evs[i:min(i+3, len(evs))])
	}
	if s.Stats().Rotations == 0 {
		t.Fatal("no rotation after writing 12 files' worth of events")
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files := r.Files()
	if len(files) < 3 || files[0] != path+".000001" || files[len(files)-1] != path {
		t.Fatalf("files %v: want audit.log.000001... then audit.log", files)
	}
	var got []string
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.ID)
	}
	if strings.Join(got, ",") != strings.Join(ids(evs), ",") {
		t.Fatalf("across %d rotated files the order is broken:\ngot  %v\nwant %v", len(files), got, ids(evs))
	}
	// A restarted sink continues the sequence instead of overwriting.
	s.Close()
	s2 := open(t, path, MaxSize(int64(len(line))*5))
	write(t, s2, evs[:3])
	write(t, s2, evs[3:6])
	write(t, s2, evs[6:9])
	_, seqs, _ := rotated(path)
	if len(seqs) != len(files) && seqs[len(seqs)-1] != len(seqs) {
		t.Fatalf("sequences %v are not 1..n", seqs)
	}
	if got := readIDs(t, path); len(got) != len(evs)+9 {
		t.Fatalf("after restart %d events, want %d", len(got), len(evs)+9)
	}
}

func writeOne(t *testing.T, dir string, e publish.Event) string {
	t.Helper()
	p := filepath.Join(dir, "one", "x.log")
	s := open(t, p)
	write(t, s, []publish.Event{e})
	return p
}

func TestReaderReportsMalformedMiddleLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := open(t, path)
	evs := sinktest.Events("bad", 1, 3)
	write(t, s, evs[:1])
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{not json}\n") // a bad line that later batches bury
	f.Close()
	write(t, s, evs[1:])
	got, err := ReadAll(context.Background(), path, nil)
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, ErrMalformed) || le.File != path || le.Line != 2 {
		t.Fatalf("error %v: want a *LineError for %s:2", err, path)
	}
	if !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("error %q does not name file:line", err)
	}
	if len(got) != 3 {
		t.Fatalf("%d events around the bad line, want 3", len(got))
	}
}

func TestReaderSkipsLineBeingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := open(t, path)
	write(t, s, sinktest.Events("live", 1, 2))
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"id":"half`)
	f.Close()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("torn last line reported as %v; it must be skipped", err)
		}
		n++
	}
	if n != 2 || r.Torn() != 1 {
		t.Fatalf("read %d events and skipped %d torn lines, want 2 and 1", n, r.Torn())
	}
}

func TestBadInput(t *testing.T) {
	if _, err := New(""); !errors.Is(err, ErrBadOption) {
		t.Fatalf("New(\"\"): %v, want ErrBadOption", err)
	}
	if _, err := New("x", MaxSize(0)); !errors.Is(err, ErrBadOption) {
		t.Fatalf("MaxSize(0): %v, want ErrBadOption", err)
	}
	s, _ := New(filepath.Join(t.TempDir(), "a.log"))
	if err := s.Write(context.Background(), sinktest.Events("x", 1, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("write before Connect: %v, want ErrClosed", err)
	}
	s = open(t, filepath.Join(t.TempDir(), "b.log"))
	bad := publish.Event{Type: publish.LeaderElected, Group: "relative", Time: time.Now()}
	if err := s.Write(context.Background(), []publish.Event{bad}); err == nil {
		t.Fatal("an invalid event was written")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.log")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open of a missing log: %v, want os.ErrNotExist", err)
	}
}

// A rotation while a reader opens the log, after it listed the rotated
// files and before it opened the live one, renamed the file holding the
// events written so far to a name not listed: the reader opened the new,
// near empty log and read none of them, with no hole to mark or warn of.
// Whenever the rotation comes, the reader reads the events written before
// it opened the log, each once.
func TestReaderOpeningDuringARotationReadsEveryEventOnce(t *testing.T) {
	for _, at := range []string{"live opened", "listed"} {
		t.Run(at, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.log")
			evs := sinktest.Events("opening", 1, 6)
			line, _ := os.ReadFile(writeOne(t, t.TempDir(), evs[0]))
			s := open(t, path, MaxSize(int64(len(line))*4))
			write(t, s, evs[:3])
			openHook = func(step string) {
				if step == at {
					write(t, s, evs[3:]) // past MaxSize: rotates first
				}
			}
			t.Cleanup(func() { openHook = nil })
			got := readIDs(t, path)
			if s.Stats().Rotations != 1 {
				t.Fatalf("%d rotations while the reader opened the log, want 1", s.Stats().Rotations)
			}
			if len(got) < 3 || strings.Join(got[:3], ",") != strings.Join(ids(evs[:3]), ",") {
				t.Fatalf("read %v: want the 3 events written before, in order, first", got)
			}
			if seen := map[string]bool{}; len(got) > 0 {
				for _, id := range got {
					if seen[id] {
						t.Fatalf("read %v: %s twice", got, id)
					}
					seen[id] = true
				}
			}
		})
	}
}
