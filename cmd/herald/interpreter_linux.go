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

// noProgram reports whether the executable file at path is text the
// kernel cannot run: no #! line, not an ELF program, no NUL byte in its
// first 256 bytes. The exec fails then (ENOEXEC) where a shell would run
// it with sh. Unknown when the system has binfmt_misc handlers, which may
// run it: false then.
func noProgram(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false
	}
	head := buf[:n]
	if bytes.HasPrefix(head, []byte("#!")) || bytes.HasPrefix(head, []byte("\x7fELF")) || bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	handlers, _ := os.ReadDir("/proc/sys/fs/binfmt_misc")
	for _, h := range handlers {
		if h.Name() != "register" && h.Name() != "status" {
			return false
		}
	}
	return true
}
