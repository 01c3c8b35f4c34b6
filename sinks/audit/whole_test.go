package audit

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// rotatedThree writes a log whose first rotated file, audit.log.000001,
// holds three events and the live log a fourth; it returns the log's path,
// the events and that file's lines.
func rotatedThree(t *testing.T, prefix string) (string, []publish.Event, [][]byte) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "audit.log")
	s := open(t, log, MaxSize(1))
	evs := sinktest.Events(prefix, 1, 4)
	write(t, s, evs[:3])
	write(t, s, evs[3:]) // rotates first: .000001 holds the three
	b, err := os.ReadFile(log + ".000001")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) != 4 || len(lines[3]) != 0 {
		t.Fatalf(".000001 holds %d lines, want 3", len(lines)-1)
	}
	return log, evs, lines[:3]
}

// TestReaderReadsTheWholeGzipWhileGunzipWritesThePlainFile: gunzip
// audit.log.000001.gz writes audit.log.000001 and removes the .gz only at
// its end; read meanwhile, the partly written plain file was read, not
// the whole .gz, and the events past what gunzip had written were
// missing without a mark.
func TestReaderReadsTheWholeGzipWhileGunzipWritesThePlainFile(t *testing.T) {
	log, evs, lines := rotatedThree(t, "gunzip-at-work")
	if out, err := exec.Command("gzip", "-k", log+".000001").CombinedOutput(); err != nil {
		t.Fatalf("gzip: %v\n%s", err, out)
	}
	// gunzip at work: the plain file holds its first line and a half.
	partly := append(slices.Clone(lines[0]), lines[1][:len(lines[1])/2]...)
	if err := os.WriteFile(log+".000001", partly, 0o640); err != nil {
		t.Fatal(err)
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %q, want the %d events the sink wrote, from the whole .gz", got, len(evs))
	}
}

// TestReaderReadsThePlainFileWhileGzipWritesTheGzip: gzip
// audit.log.000001 writes the .gz and removes the plain file only at its
// end; read meanwhile, the .gz cut short is partial, the plain file whole.
func TestReaderReadsThePlainFileWhileGzipWritesTheGzip(t *testing.T) {
	log, evs, _ := rotatedThree(t, "gzip-at-work")
	if out, err := exec.Command("gzip", "-k", log+".000001").CombinedOutput(); err != nil {
		t.Fatalf("gzip: %v\n%s", err, out)
	}
	fi, err := os.Stat(log + ".000001.gz")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log+".000001.gz", fi.Size()-4); err != nil { // its trailer not written yet
		t.Fatal(err)
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %q, want the %d events the sink wrote, from the whole plain file", got, len(evs))
	}
}

// TestReaderMarksAGapAfterARotatedFileNeitherOfWhoseFormsIsWhole: a .gz
// cut short (a copy broken off) being decompressed, the plain file beside
// it holding less than the .gz decompresses to: neither is whole, and
// what the file held past them is missing. The first event after it is
// marked a gap, as after a rotated file missing.
func TestReaderMarksAGapAfterARotatedFileNeitherOfWhoseFormsIsWhole(t *testing.T) {
	log, evs, lines := rotatedThree(t, "neither-whole")
	// A real gzip stream of the three lines, flushed after two, cut there.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Join(lines[:2], nil))
	zw.Flush()
	cut := gz.Len()
	zw.Write(lines[2])
	zw.Close()
	if err := os.WriteFile(log+".000001.gz", gz.Bytes()[:cut], 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log+".000001", lines[0], 0o640); err != nil { // gunzip's first line
		t.Fatal(err)
	}
	r, err := Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []publish.Event
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if err == nil {
			got = append(got, e)
		}
	}
	if len(got) != 2 || got[0].ID != evs[0].ID || got[1].ID != evs[3].ID {
		t.Fatalf("read %q, want %q and %q", ids(got), evs[0].ID, evs[3].ID)
	}
	if got[0].Gap || !got[1].Gap {
		t.Errorf("gaps %v, %v; want the event after the file neither of whose forms is whole marked, and only it", got[0].Gap, got[1].Gap)
	}
}

// TestReaderReadsAPlainFileLongerThanItsWholeGzip: a .gz whose trailer
// checks beside a plain file longer than it decompresses to (gzip -k,
// then the plain file written on) is an older copy: gunzip writing the
// plain file from it would leave it shorter. Read from the .gz, the
// events past its copy were missing without a mark.
func TestReaderReadsAPlainFileLongerThanItsWholeGzip(t *testing.T) {
	log, evs, lines := rotatedThree(t, "older-gzip")
	if err := os.WriteFile(log+".000001", bytes.Join(lines[:2], nil), 0o640); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gzip", "-k", log+".000001").CombinedOutput(); err != nil {
		t.Fatalf("gzip: %v\n%s", err, out)
	}
	if err := os.WriteFile(log+".000001", bytes.Join(lines, nil), 0o640); err != nil {
		t.Fatal(err)
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %q, want the %d events the sink wrote, from the longer plain file", got, len(evs))
	}
}

// TestReaderReadsThePlainFileWhilePbzip2WritesItsStreams: pbzip2 writes
// a file as bzip2 streams one after another, each whole with its CRC;
// read between two of them, the .bz2 decompressed to its end without
// error and was read, the events of the streams not yet written missing
// without a mark. Shorter than the plain file, it is not read.
func TestReaderReadsThePlainFileWhilePbzip2WritesItsStreams(t *testing.T) {
	log, evs, lines := rotatedThree(t, "pbzip2-at-work")
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = bytes.NewReader(bytes.Join(lines[:2], nil))
	first, err := cmd.Output() // the first stream, the second not yet written
	if err != nil {
		t.Fatalf("bzip2: %v", err)
	}
	if err := os.WriteFile(log+".000001.bz2", first, 0o640); err != nil {
		t.Fatal(err)
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %q, want the %d events the sink wrote, from the whole plain file", got, len(evs))
	}
}
