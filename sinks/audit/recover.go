package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/zkherald/herald/publish"
)

// complete reports whether line (without its newline) is a whole JSON
// object. It checks syntax only: a line a newer herald wrote, with a type
// this one does not know, is complete and must never be cut.
func complete(line []byte) bool {
	line = bytes.TrimSpace(line)
	return len(line) > 1 && line[0] == '{' && json.Valid(line)
}

// lineStart returns the offset just after the last '\n' in f[0:end), or 0.
func lineStart(f io.ReaderAt, end int64) (int64, error) {
	const block = 4096
	buf := make([]byte, block)
	for end > 0 {
		off := max(end-block, 0)
		n, err := f.ReadAt(buf[:end-off], off)
		if err != nil && !(err == io.EOF && int64(n) == end-off) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		end = off
	}
	return 0, nil
}

// goodEnd returns the length f must be truncated to so that it ends with a
// complete, valid line: an unterminated tail is dropped, then invalid lines
// at the very end (a torn write that happened to end in a newline, or
// zeros). It never looks past the last valid line, so nothing before it is
// touched. A file with no complete line that holds a line herald cannot
// have begun (see torn) is no audit log, and is left whole: ErrNotAuditLog.
func goodEnd(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := st.Size()
	start, err := lineStart(f, end)
	if err != nil {
		return 0, err
	}
	foreignAt := int64(-1)
	if start < end { // the unterminated tail: its first byte tells
		first := make([]byte, 1)
		if _, err := f.ReadAt(first, start); err != nil {
			return 0, err
		}
		if !torn(first) {
			foreignAt = start
		}
	}
	end = start
	for end > 0 {
		start, err := lineStart(f, end-1)
		if err != nil {
			return 0, err
		}
		line := make([]byte, end-1-start)
		if _, err := f.ReadAt(line, start); err != nil {
			return 0, err
		}
		if complete(line) {
			break
		}
		if !torn(line) {
			foreignAt = start
		}
		end = start
	}
	if end == 0 && foreignAt >= 0 {
		return 0, foreign(f, foreignAt)
	}
	return end, nil
}

// torn reports whether line, not a complete one, can be what a crash
// left of herald's first write to a file: a line herald began (it begins
// every line with '{') or blocks the file system never wrote (zeros); or
// nothing. Another file's text (a typo in --audit, a JSON document's
// closing brace) has other lines. Past a complete line, the tail is
// dropped whatever it holds: a file system may show stale blocks there.
func torn(line []byte) bool {
	return len(line) == 0 || line[0] == '{' || line[0] == 0
}

// foreign is the error for f, which holds no complete event and whose
// line at offset at herald cannot have begun.
func foreign(f *os.File, at int64) error {
	return fmt.Errorf("%w: %w: %s: no complete event, and the line at byte %d is none herald began: give the path of an audit log or of a new file (nothing in this one was changed)",
		publish.ErrSinkConfig, ErrNotAuditLog, f.Name(), at)
}
