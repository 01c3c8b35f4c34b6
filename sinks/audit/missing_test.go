package audit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestMissingRotatedNamesALongRunByItsEnds: a stray file beside the log
// whose suffix is a long number (a copy numbered by hand; one named by a
// date is no rotated file, TestDateNamedFileIsNoRotatedFile) sits far
// above the real rotations. Every number in
// between was named one by one: some twenty million names, a warning of
// hundreds of megabytes. A run of more than three is named by its ends.
func TestMissingRotatedNamesALongRunByItsEnds(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	for _, n := range []int{1, 3, 98765432} {
		if err := os.WriteFile(rotatedName(log, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing, err := MissingRotated(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{rotatedName(log, 2), rotatedName(log, 4) + " to " + rotatedName(log, 98765431) + " (98765428 files)"}
	if !slices.Equal(missing, want) {
		t.Errorf("missing %q (%d names), want %q", head(missing), len(missing), want)
	}
}

// TestDateNamedFileIsNoRotatedFile: audit.log.20261129 beside the log
// (logrotate's dateext with a dot) was read as its newest rotated file,
// after twenty million said missing. It is named by DateNamed, and
// neither read nor counted now.
func TestDateNamedFileIsNoRotatedFile(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	for _, n := range []string{log, rotatedName(log, 1), log + ".20261129", log + ".2026112913"} {
		if err := os.WriteFile(n, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if missing, err := MissingRotated(log); err != nil || len(missing) > 0 {
		t.Errorf("MissingRotated beside date-named files: %q, %v; want none", head(missing), err)
	}
	strays, err := DateNamed(log)
	if want := []string{log + ".20261129", log + ".2026112913"}; err != nil || !slices.Equal(strays, want) {
		t.Errorf("DateNamed: %q, %v; want %q", strays, err, want)
	}
	r, err := Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if want := []string{rotatedName(log, 1), log}; !slices.Equal(r.names, want) {
		t.Errorf("the reader reads %q, want %q", r.names, want)
	}
}

func head(s []string) []string { return s[:min(len(s), 4)] }

// TestOldestRemovedReadsTheRecordHeraldKeptBefore: herald before
// 2026-11-30 kept the number of the last rotation in audit.log.rotated;
// with every rotated file gone since, that record still says the log
// began after a rotation.
func TestOldestRemovedReadsTheRecordHeraldKeptBefore(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if gone, err := OldestRemoved(log); gone || err != nil {
		t.Fatalf("a log that never rotated: removed %v, %v", gone, err)
	}
	if err := os.WriteFile(log+".rotated", []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if gone, err := OldestRemoved(log); !gone || err != nil {
		t.Errorf("a log whose last rotation audit.log.rotated keeps: removed %v, %v; want true", gone, err)
	}
}

// TestRotationAfterADateNumberIsNeverNamedByADate: herald before
// 2026-11-30 numbered its rotation after a date-named file beside the log
// (audit.log.20261129, logrotate's dateext), .20261130, and kept that
// number. The sink numbers on from there: its rotations reached
// .20261201, a name that reads as a date, which readers take for no
// rotation of herald's and leave unread, telling the operator that
// something else rotated the log. Its events were lost to history. The
// sink now skips the numbers that read as dates, and a reader counts no
// hole for them.
func TestRotationAfterADateNumberIsNeverNamedByADate(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	for name, data := range map[string]string{log + ".20261129": "", log + ".20261130": "", log + ".rotated": "20261130\n"} {
		if err := os.WriteFile(name, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	// One byte: every batch but the first rotates; 75 rotations number
	// past .20261199 into December.
	s := open(t, log, MaxSize(1))
	evs := sinktest.Events("datenum", 1, 77)
	for _, e := range evs {
		write(t, s, []publish.Event{e})
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %d of the %d events the sink wrote", len(got), len(evs))
	}
	strays, err := DateNamed(log)
	if want := []string{log + ".20261129", log + ".20261130"}; err != nil || !slices.Equal(strays, want) {
		t.Errorf("DateNamed: %q, %v; want only %q, none of the sink's", strays, err, want)
	}
	// The hole is the old herald's .20261130, left unread, and no more.
	missing, err := MissingRotated(log)
	if err != nil || len(missing) != 0 {
		t.Errorf("MissingRotated: %q, %v; want none between the sink's own rotations", head(missing), err)
	}
}

// TestLogrotateNamedFilesAreStrays: logrotate's own numbering
// (audit.log.1) and its dateext's default name (audit.log-20261129) beside
// the log were neither read nor named, while audit.log.20261129 was named:
// a reader lay them aside without a word. Strays names all three, and no
// rotation of herald's nor another file beside the log.
func TestLogrotateNamedFilesAreStrays(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	for _, n := range []string{log, rotatedName(log, 1), log + ".1", log + ".12", log + "-20261129", log + ".20261129",
		log + "-notes", log + "-2026", log + ".heartbeat", LastRotatedPath(log)} {
		if err := os.WriteFile(n, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	strays, err := Strays(log)
	if want := []string{log + "-20261129", log + ".1", log + ".12", log + ".20261129"}; err != nil || !slices.Equal(strays, want) {
		t.Errorf("Strays: %q, %v; want %q", strays, err, want)
	}
	if missing, err := MissingRotated(log); err != nil || len(missing) > 0 {
		t.Errorf("MissingRotated beside logrotate's files: %q, %v; want none", missing, err)
	}
	if names, _, err := rotated(log); err != nil || !slices.Equal(names, []string{rotatedName(log, 1)}) {
		t.Errorf("rotated beside logrotate's files: %q, %v; want herald's alone", names, err)
	}
}

// TestLogrotateCompressedFilesAreStrays: logrotate compresses what it
// rotates (compress, on in most of its configurations): audit.log.2.gz,
// audit.log-20261128.gz and audit.log.20261127.xz lay beside the log,
// holding what the bridge wrote, and were neither read nor named. Strays
// names them; a rotation of herald's and other files stay unnamed.
func TestLogrotateCompressedFilesAreStrays(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	for _, n := range []string{log, rotatedName(log, 1), log + ".1", log + ".2.gz", log + "-20261128.gz", log + ".20261127.xz",
		log + ".gz", log + "-notes.gz", log + ".heartbeat.gz", log + ".2.gz.bak", log + ".12.bz2", log + ".3.zst"} {
		if err := os.WriteFile(n, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	strays, err := Strays(log)
	want := []string{log + "-20261128.gz", log + ".1", log + ".12.bz2", log + ".2.gz", log + ".20261127.xz", log + ".3.zst"}
	if err != nil || !slices.Equal(strays, want) {
		t.Errorf("Strays: %q, %v; want %q", strays, err, want)
	}
	if names, _, err := rotated(log); err != nil || !slices.Equal(names, []string{rotatedName(log, 1)}) {
		t.Errorf("rotated beside logrotate's compressed files: %q, %v; want herald's alone", names, err)
	}
}

// TestLogrotateDatesWithSeparatorsAreStrays: logrotate's dateext with
// dateformat .%Y-%m-%d (or -%Y-%m-%d-%H, hourly) and newsyslog's
// timestamps name a rotated file by a date with separators. Not digits
// alone, audit.log.2026-11-29 lay beside the log unread without a word,
// while audit.log-20261129 and audit.log.1 were named. Strays names them,
// compressed or not; a name that is no date stays unnamed.
func TestLogrotateDatesWithSeparatorsAreStrays(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	for _, n := range []string{log, rotatedName(log, 1), log + ".2026-11-29", log + "-2026-11-28.gz", log + ".2026-11-29-13",
		log + "-2026-11-29_12-00-00", log + ".20261129T120000.bz2", log + ".0", log + ".1.gz", log + "-20261127.gz",
		log + ".2026-13-45", log + ".v1-2-3", log + "-notes-2026", log + ".1-2"} {
		if err := os.WriteFile(n, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	strays, err := Strays(log)
	want := []string{log + "-2026-11-28.gz", log + "-2026-11-29_12-00-00", log + "-20261127.gz", log + ".0", log + ".1.gz",
		log + ".2026-11-29", log + ".2026-11-29-13", log + ".20261129T120000.bz2"}
	if err != nil || !slices.Equal(strays, want) {
		t.Errorf("Strays: %q, %v; want %q", strays, err, want)
	}
	if names, _, err := rotated(log); err != nil || !slices.Equal(names, []string{rotatedName(log, 1)}) {
		t.Errorf("rotated beside logrotate's dated files: %q, %v; want herald's alone", names, err)
	}
}

// TestLogrotateEpochNamedFilesAreStrays: logrotate's dateformat .%s (or
// -%s), for more than one rotation a day, names a rotated file by the
// seconds since 1970. audit.log.1764374400 read as herald's rotation
// numbered 1,764,374,400: the newest rotated file, after more than a
// billion said missing; audit.log-1764374400 lay there unread without a
// word. Both are strays, not read with the log, and count for no hole.
func TestLogrotateEpochNamedFilesAreStrays(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	for _, n := range []string{log, rotatedName(log, 1), rotatedName(log, 2), log + ".1764374400", log + "-1764460800.gz"} {
		if err := os.WriteFile(n, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	strays, err := Strays(log)
	if want := []string{log + "-1764460800.gz", log + ".1764374400"}; err != nil || !slices.Equal(strays, want) {
		t.Errorf("Strays: %q, %v; want %q", strays, err, want)
	}
	if names, _, err := rotated(log); err != nil || !slices.Equal(names, []string{rotatedName(log, 1), rotatedName(log, 2)}) {
		t.Errorf("rotated beside logrotate's epoch-named files: %q, %v; want herald's alone", names, err)
	}
	if missing, err := MissingRotated(log); err != nil || len(missing) != 0 {
		t.Errorf("MissingRotated: %q, %v; want none", head(missing), err)
	}
}

// TestRotationAfterAnEpochNumberIsNeverNamedByOne: a bridge before
// ten-digit numbers were strays numbered its next rotation after
// logrotate's audit.log.1764374400, as its newest rotated file, and kept
// that number as its last rotation's. Numbering on from it, the sink
// named every later rotation by ten digits (audit.log.1764374402), which
// history lays aside as logrotate's, never read: their events missing
// from every history. The sink numbers on past the ten digits.
func TestRotationAfterAnEpochNumberIsNeverNamedByOne(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	for name, data := range map[string]string{log + ".1764374400": "", log + ".1764374401": "", LastRotatedPath(log): "1764374401\n"} {
		if err := os.WriteFile(name, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, log, MaxSize(1)) // every batch but the first rotates
	evs := sinktest.Events("epochnum", 1, 4)
	for _, e := range evs {
		write(t, s, []publish.Event{e})
	}
	if got := readIDs(t, log); !slices.Equal(got, ids(evs)) {
		t.Errorf("read %d of the %d events the sink wrote", len(got), len(evs))
	}
	strays, err := Strays(log)
	if want := []string{log + ".1764374400", log + ".1764374401"}; err != nil || !slices.Equal(strays, want) {
		t.Errorf("Strays: %q, %v; want only %q, none of the sink's", strays, err, want)
	}
	if missing, err := MissingRotated(log); err != nil || len(missing) != 0 {
		t.Errorf("MissingRotated: %q, %v; want none between the sink's own rotations", head(missing), err)
	}
}
