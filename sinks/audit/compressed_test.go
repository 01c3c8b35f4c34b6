package audit

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestReaderReadsRotatedFilesCompressedInPlace: herald's rotated files
// compressed where they lie (gzip audit.log.000001, bzip2
// audit.log.000002) were not read: their events missing, the hole warned
// of, the next rotation numbered over them. They are read, decompressed,
// in their place; while gzip works, the plain file beside its .gz is read
// once.
func TestReaderReadsRotatedFilesCompressedInPlace(t *testing.T) {
	log, s, evs := rotatedEach(t, "compressed", 4)
	for _, c := range [][]string{{"gzip", log + ".000001"}, {"bzip2", log + ".000002"}, {"gzip", "-k", log + ".000003"}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %q, want the %d events the sink wrote, each once", got, len(evs))
	}
	if missing, err := MissingRotated(log); err != nil || len(missing) != 0 {
		t.Errorf("MissingRotated: %q, %v; want none", missing, err)
	}
	if gone, err := OldestRemoved(log); err != nil || gone {
		t.Errorf("OldestRemoved: %v, %v; want false", gone, err)
	}
	if strays, err := Strays(log); err != nil || len(strays) != 0 {
		t.Errorf("Strays: %q, %v; want none: every file is herald's", strays, err)
	}
	more := sinktest.Events("compressed-more", 1, 1)
	write(t, s, more)
	if _, err := os.Stat(log + ".000004"); err != nil {
		t.Errorf("the next rotation did not number after the compressed files: %v", err)
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(append(evs, more...))) {
		t.Errorf("after a rotation, read %q, want every event once", got)
	}
}

// rotatedEach writes n events to a log in a directory of its own, one to
// each file: the first n-1 in the rotated files .000001 on, the last in
// the live log. It returns the log's path, its sink and the events.
func rotatedEach(t *testing.T, prefix string, n int) (string, *Sink, []publish.Event) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "audit.log")
	s := open(t, log, MaxSize(1))
	evs := sinktest.Events(prefix, 1, n)
	for _, e := range evs {
		write(t, s, []publish.Event{e})
	}
	return log, s, evs
}

// gzipInPlace compresses file to file.gz as gzip does, removing file; a
// failure is reported and the read it interrupts goes on.
func gzipInPlace(t *testing.T, file string) {
	t.Helper()
	if out, err := exec.Command("gzip", file).CombinedOutput(); err != nil {
		t.Errorf("gzip: %v\n%s", err, out)
	}
}

// TestReaderOpensARotatedFileCompressedAfterItWasListed: gzip compressing
// a rotated file in place between the reader's listing and its opening
// removed the name listed, and the read failed, the file not found. The
// reader opens the file under its compressed name.
func TestReaderOpensARotatedFileCompressedAfterItWasListed(t *testing.T) {
	log, _, evs := rotatedEach(t, "compressed-late", 3)
	openHook = func(step string) {
		if step == "listed" {
			gzipInPlace(t, log+".000001")
		}
	}
	t.Cleanup(func() { openHook = nil })
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %q, want the %d events the sink wrote", got, len(evs))
	}
}

// TestReaderReadsOnceALiveLogRotatedAndCompressedAsItOpens: a rotation
// after the reader opened the live log, and gzip compressing the rotated
// file before the listing, left the file opened as the live log listed
// under no name of its (audit.log.000002.gz is gzip's new file): its
// events were read twice, from the file opened and from the .gz, every
// tenure in it told twice.
func TestReaderReadsOnceALiveLogRotatedAndCompressedAsItOpens(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	evs := sinktest.Events("compressed-live", 1, 4)
	line, _ := os.ReadFile(writeOne(t, t.TempDir(), evs[0]))
	s := open(t, log, MaxSize(int64(len(line))*2))
	write(t, s, evs[:2])
	rotated := false
	openHook = func(step string) {
		if step == "live opened" && !rotated {
			rotated = true
			write(t, s, evs[2:3]) // past MaxSize: rotates first, to .000001
			gzipInPlace(t, log+".000001")
		}
	}
	t.Cleanup(func() { openHook = nil })
	got := readIDs(t, log)
	if s.Stats().Rotations != 1 {
		t.Fatalf("%d rotations while the reader opened the log, want 1", s.Stats().Rotations)
	}
	if want := ids(evs[:3]); !slices.Equal(got, want) && !slices.Equal(got, want[:2]) {
		t.Errorf("read %q, want the events written before the open, each once (%q), and the one after or not", got, want)
	}
}

// TestReaderHoldsNoMoreThanALineLimitOfAnEndlessLine: a small gzip file
// can hold an endless line (256 MiB of zeros in a quarter of a megabyte:
// a file of another program's beside the log, zeros a crash left); the
// reader held the whole line to find its end, every byte of it in
// memory. A line longer than any event is malformed, its bytes past the
// limit let go as read, and the events after it are read.
func TestReaderHoldsNoMoreThanALineLimitOfAnEndlessLine(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	s := open(t, log, MaxSize(1))
	evs := sinktest.Events("endless", 1, 2)
	write(t, s, evs[:1])
	write(t, s, evs[1:]) // rotates: .000001 holds the first
	zeros := exec.Command("sh", "-c", "{ head -c 268435456 /dev/zero; echo; cat \"$0\"; } | gzip -1 > \"$0.gz\" && rm \"$0\"", log+".000001")
	if out, err := zeros.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	var malformed int
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrMalformed) {
			malformed++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.ID)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 128<<20 {
		t.Errorf("reading a 256 MiB line allocated %d MiB, want no more than a line limit's", alloc>>20)
	}
	if malformed != 1 || !slices.Equal(got, ids(evs)) {
		t.Errorf("read %q with %d malformed lines, want %q and one", got, malformed, ids(evs))
	}
}
