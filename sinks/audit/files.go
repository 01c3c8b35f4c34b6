package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	fileMode = 0o640
	dirMode  = 0o750
	seqWidth = 6
)

// rotatedName is the name of the rotated file with sequence seq.
func rotatedName(path string, seq int) string {
	return fmt.Sprintf("%s.%0*d", path, seqWidth, seq)
}

// rotated lists the rotated files of path, oldest first, with their
// sequence numbers. Names that do not end in a plain sequence are ignored.
func rotated(path string) ([]string, []int, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var seqs []int
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, base+".") {
			continue
		}
		suffix := name[len(base)+1:]
		if len(suffix) < seqWidth {
			continue
		}
		n, err := strconv.Atoi(suffix)
		if err != nil || n <= 0 || strings.TrimLeft(suffix, "0123456789") != "" {
			continue
		}
		seqs = append(seqs, n)
	}
	sort.Ints(seqs)
	names := make([]string, len(seqs))
	for i, n := range seqs {
		names[i] = rotatedName(path, n)
	}
	return names, seqs, nil
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
		missing = appendMissing(missing, path, seqs[i-1]+1, upTo)
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
	for n := from; n < upTo; n++ {
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
		holes[i] = seqs[i] != seqs[i-1]+1
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
// can tell a log that began after a rotation.
func LastRotatedPath(path string) string { return filepath.Clean(path) + lastRotatedSuffix }

// lastRotated is the number LastRotatedPath keeps: 0 when there is no
// such file (the log never rotated, or herald before 2026-11-29 rotated it).
func lastRotated(path string) (int, error) {
	b, err := os.ReadFile(LastRotatedPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("audit: %s holds no rotation number: %q", LastRotatedPath(path), b)
	}
	return n, nil
}
