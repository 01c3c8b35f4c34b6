package audit

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
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
// touched.
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
	end = start // drop whatever follows the last newline
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
		end = start
	}
	return end, nil
}
