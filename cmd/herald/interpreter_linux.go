//go:build linux

package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
)

// missingInterpreter returns the interpreter the #! line of the script at
// path names when that interpreter does not exist, else "". The kernel
// then fails the exec with ENOENT, which reads as if the script itself
// were missing. The line is read as the kernel reads it: its first 256
// bytes, the interpreter ending at a space, a tab or the newline (a \r
// stays part of its name).
func missingInterpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return ""
	}
	line, ok := bytes.CutPrefix(buf[:n], []byte("#!"))
	if !ok {
		return ""
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	line = bytes.TrimLeft(line, " \t")
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		line = line[:i]
	}
	if len(line) == 0 {
		return ""
	}
	if _, err := os.Stat(string(line)); errors.Is(err, fs.ErrNotExist) {
		return string(line)
	}
	return ""
}
