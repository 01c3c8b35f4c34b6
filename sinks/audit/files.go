package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	fileMode = 0o640
	dirMode  = 0o750
	seqWidth = 6
)

// rotatedName is the name of the rotated file with sequence seq.
func rotatedName(path string, seq int) string {
	return path + "." + seqSuffix(seq)
}

// seqSuffix is the suffix that names the rotated file with sequence seq.
func seqSuffix(seq int) string { return fmt.Sprintf("%0*d", seqWidth, seq) }

// nextSeq is the number of the rotation after seq: the next that does
// not read as a date (dateLike), which readers take for no rotation of
// herald's. Numbering on from a date-named file's number (herald before
// 2026-11-30 did, .20261130 after .20261129) reached .20261201, and
// that file was left unread. Dates run at most 60 numbers in a row. Ten
// digits (dateNumber, seconds since 1970) run on for nine billion: the
// next is the first of eleven. A bridge before ten-digit numbers were
// strays numbered on from logrotate's audit.log.1764374400 and kept its
// number as the last rotation's; numbering on from that, every rotation
// after was named by ten digits and left unread by history.
func nextSeq(seq int) int {
	n := seq + 1
	for dateNumber(seqSuffix(n)) {
		if len(seqSuffix(n)) == 10 {
			return 10_000_000_000
		}
		n++
	}
	return n
}

// rotated lists the rotated files of path, oldest first, with their
// sequence numbers. Names that do not end in a plain sequence are
// ignored, and so are those whose number names a date (DateNamed). A
// rotated file compressed in place as the Reader reads it (gzip or bzip2:
// audit.log.000001.gz) is listed under that name, the plain one while
// both are there (gzip or gunzip at work: openRotated opens the one whole):
// left out, its events were missing from every history, and the hole
// warned of where it lay.
func rotated(path string) ([]string, []int, error) {
	bySeq := map[int]string{}
	err := besideLog(path, func(suffix string) {
		plain, ext := cutReadableExt(suffix)
		if n, ok := seqOf(plain); ok && !dateNumber(plain) && (ext == "" || bySeq[n] == "") {
			bySeq[n] = path + "." + suffix
		}
	})
	if err != nil {
		return nil, nil, err
	}
	seqs := make([]int, 0, len(bySeq))
	for n := range bySeq {
		seqs = append(seqs, n)
	}
	sort.Ints(seqs)
	names := make([]string, len(seqs))
	for i, n := range seqs {
		names[i] = bySeq[n]
	}
	return names, seqs, nil
}

// readableExts are the extensions of the compressed files the Reader
// decompresses as it reads (see contentOf).
var readableExts = []string{".gz", ".bz2"}

// cutReadableExt is suffix without a readable compressed file's
// extension, and that extension ("" when there is none).
func cutReadableExt(suffix string) (string, string) {
	for _, ext := range readableExts {
		if s, ok := strings.CutSuffix(suffix, ext); ok {
			return s, ext
		}
	}
	return suffix, ""
}

// besideLog calls f with the suffix of each file named path + "." +
// suffix.
func besideLog(path string, f func(suffix string)) error {
	return besideLogAfter(path, ".", f)
}

// besideLogAfter calls f with the suffix of each file named path + sep +
// suffix.
func besideLogAfter(path, sep string, f func(suffix string)) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if name := e.Name(); !e.IsDir() && strings.HasPrefix(name, base+sep) {
			f(name[len(base)+len(sep):])
		}
	}
	return nil
}

// seqOf is the sequence number a rotated file's suffix names.
func seqOf(suffix string) (int, bool) {
	if len(suffix) < seqWidth || strings.TrimLeft(suffix, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(suffix)
	return n, err == nil && n > 0
}

// dateLike reports whether a suffix of digits reads as a date, with the
// hour, minute and second or not (logrotate's dateext with a dot,
// dateformat .%Y%m%d): a date read as a number is nineteen million or
// more, rotations no log of herald's reaches. Read as one, such a file
// was the newest rotated file, after millions said missing, and the
// sink numbered its next rotation after it.
func dateLike(suffix string) bool {
	const layout = "20060102150405"
	if len(suffix) < 8 || len(suffix) > len(layout) || len(suffix)%2 != 0 {
		return false
	}
	t, err := time.Parse(layout[:len(suffix)], suffix)
	return err == nil && t.Year() >= 1970
}

// dateNumber reports whether a suffix of digits names a date: one that
// reads as a date (dateLike), or ten digits, seconds since 1970
// (logrotate's dateformat .%s, for more than one rotation a day: 2001 to
// 2286), a billion rotations no log of herald's reaches. Read as a
// rotation's number, audit.log.1764374400 was the newest rotated file,
// after more than a billion said missing, and the sink numbered its next
// rotation after it.
func dateNumber(suffix string) bool {
	return dateLike(suffix) || (len(suffix) == 10 && digits(suffix))
}

// DateNamed names the files beside the log at path whose names are
// those of a rotated file but for a number that reads as a date
// (audit.log.20261129, from logrotate's dateext with a dot; dateNumber): no rotation
// of herald's, they are not read with the log, and a reader says so.
func DateNamed(path string) ([]string, error) {
	var names []string
	err := besideLog(path, func(suffix string) {
		if _, ok := seqOf(suffix); ok && dateNumber(suffix) {
			names = append(names, path+"."+suffix)
		}
	})
	sort.Strings(names)
	return names, err
}

// Strays names the files beside the log at path that another program's
// rotation named, logrotate's: a date after a dot (DateNamed), its own
// numbering (audit.log.1, fewer digits than herald's), or a date after a
// dash (audit.log-20261129, dateext's default dateformat), a date with
// separators after either (audit.log.2026-11-29, separatedDate), each also
// compressed (audit.log.2.gz: logrotate's compress, on in most of its
// configurations, left them unnamed). None is a rotation of herald's, so
// none is read with the log, and a reader says so: only
// audit.log.20261129 was named, and the others lay there unread without a
// word, whatever they held.
func Strays(path string) ([]string, error) {
	names, err := DateNamed(path)
	numbered := besideLog(path, func(suffix string) {
		plain := uncompressed(suffix)
		if digits(plain) && (len(plain) < seqWidth || (plain != suffix && dateNumber(plain))) || separatedDate(plain) {
			names = append(names, path+"."+suffix)
		}
	})
	dashed := besideLogAfter(path, "-", func(suffix string) {
		if plain := uncompressed(suffix); digits(plain) && dateNumber(plain) || separatedDate(plain) {
			names = append(names, path+"-"+suffix)
		}
	})
	sort.Strings(names)
	return names, errors.Join(err, numbered, dashed)
}

// separatedDate reports whether suffix is a date written with
// separators: logrotate's dateformat .%Y-%m-%d (audit.log.2026-11-29),
// with the hour (-%H) or time (_%H-%M-%S) too, or newsyslog's timestamp
// (audit.log.20261129T120000). No digits alone, it was no stray, and such
// a file lay beside the log unread without a word.
func separatedDate(suffix string) bool {
	if digits(suffix) {
		return false
	}
	plain := strings.Map(func(r rune) rune {
		if strings.ContainsRune("-_T:", r) {
			return -1
		}
		return r
	}, suffix)
	return len(plain) >= len(suffix)-5 && digits(plain) && len(suffix) > 4 && digits(suffix[:4]) && dateLike(plain)
}

// compressedExts are the extensions logrotate's compress gives a rotated
// file with its default compresscmd (gzip) or the common others.
var compressedExts = []string{".gz", ".bz2", ".xz", ".zst", ".lz4", ".Z"}

// uncompressed is suffix without a compressed file's extension.
func uncompressed(suffix string) string {
	for _, ext := range compressedExts {
		if s, ok := strings.CutSuffix(suffix, ext); ok {
			return s
		}
	}
	return suffix
}

// digits reports whether s is a number: digits only, at least one.
func digits(s string) bool {
	return s != "" && strings.TrimLeft(s, "0123456789") == ""
}

// syncDir makes a rename or create in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// MissingRotated names the rotated files of path missing between the
// oldest and the newest found, and after the newest up to the sink's last
// rotation (LastRotatedPath): a rotation numbers each file one above the
// last, and removing the oldest (retention) leaves no hole, so a hole is
// a file removed or lost from the middle, whose events a reader lacks.
func MissingRotated(path string) ([]string, error) {
	last, _ := lastRotated(path) // before the listing, as Open reads it
	_, seqs, err := rotated(path)
	if err != nil {
		return nil, err
	}
	var missing []string
	for i := 1; i <= len(seqs); i++ {
		upTo := last + 1 // after the newest found: up to the last rotation's
		if i < len(seqs) {
			upTo = seqs[i]
		}
		missing = appendMissing(missing, path, nextSeq(seqs[i-1]), upTo)
	}
	return missing, nil
}

// appendMissing names the rotated files of path numbered from up to
// before upTo; a run of more than three is named by its ends, so that a
// stray file with a long number (a date) names no millions of files.
func appendMissing(missing []string, path string, from, upTo int) []string {
	if upTo-from > 3 {
		return append(missing, fmt.Sprintf("%s to %s (%d files)", rotatedName(path, from), rotatedName(path, upTo-1), upTo-from))
	}
	for n := from; n < upTo; n = nextSeq(n) {
		missing = append(missing, rotatedName(path, n))
	}
	return missing
}

// holesBefore says, for each of the files a Reader reads (the rotated
// ones found, seqs, then the log itself when live), whether rotated files
// are missing just before it (see MissingRotated); last is the number of
// the last rotation.
func holesBefore(seqs []int, last int, live bool) []bool {
	holes := make([]bool, len(seqs), len(seqs)+1)
	for i := 1; i < len(seqs); i++ {
		holes[i] = seqs[i] != nextSeq(seqs[i-1])
	}
	if live {
		holes = append(holes, len(seqs) > 0 && last > seqs[len(seqs)-1])
	}
	return holes
}

// OldestRemoved reports whether rotated files of path were removed from
// the head (retention): a rotation numbers the first rotated file 1, so
// an oldest file numbered above it follows files that held older events.
// With none left, the number of the sink's last rotation (LastRotatedPath)
// says whether there were: every rotated file archived away left a log
// that began after a rotation, and read as holding every event.
func OldestRemoved(path string) (bool, error) {
	_, seqs, err := rotated(path)
	if err != nil {
		return false, err
	}
	if len(seqs) > 0 {
		return seqs[0] > 1, nil
	}
	last, err := lastRotated(path)
	return last > 0, err
}

// lastRotatedSuffix names the file beside the log that keeps the number
// of its last rotation. It is no rotated file's name (those end in digits
// only).
const lastRotatedSuffix = ".rotated"

// LastRotatedPath is the file beside the log at path that keeps the
// number of the sink's last rotation, so that a rotation after every
// rotated file was moved away numbers its file above theirs, and a reader
// can tell a log that began after a rotation. It is a dot file,
// .audit.log.rotated: named audit.log.rotated, a cleanup of the rotated
// files (find -name 'audit.log.*' -delete, a logrotate pattern) took it
// with them, and the log read as holding every event again.
func LastRotatedPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+lastRotatedSuffix)
}

// lastRotated is the number the sink's last rotation kept: the higher of
// LastRotatedPath's and of audit.log.rotated, where herald before
// 2026-11-30 kept it; 0 when neither is there (the log never rotated, or
// herald before 2026-11-29 rotated it).
func lastRotated(path string) (int, error) {
	last, err := readRotation(LastRotatedPath(path))
	old, oldErr := readRotation(filepath.Clean(path) + lastRotatedSuffix)
	return max(last, old), errors.Join(err, oldErr)
}

// readRotation reads the rotation number kept in the file name: 0
// without error when there is none.
func readRotation(name string) (int, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("audit: %s holds no rotation number: %q", name, b)
	}
	return n, nil
}
