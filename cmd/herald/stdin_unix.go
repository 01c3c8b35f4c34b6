//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// stdinKind tells what standard input is, for checkpoint put -. Started
// with standard input closed (<&-), a Go program finds /dev/null there:
// the runtime opens it read-write in the closed descriptor's place, and
// reading it gives nothing, which would be saved as an empty checkpoint.
// A shell's </dev/null opens it read-only, as do systemd and os/exec; only
// an explicit <>/dev/null looks the same as a closed one. The /dev/null
// herald run gives its command (commandStdin) is told by its O_APPEND.
func stdinKind(r io.Reader) stdinSource {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return stdinOther
	}
	var st, null unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || unix.Stat(os.DevNull, &null) != nil {
		return stdinOther
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != null.Rdev {
		return stdinOther
	}
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	switch {
	case err == nil && fl&unix.O_APPEND != 0 && fl&unix.O_ACCMODE != unix.O_WRONLY:
		return stdinFromRun
	case err == nil && fl&unix.O_ACCMODE == unix.O_RDWR:
		return stdinClosed
	}
	return stdinDevNull
}

// commandStdin is the standard input herald run (or lock) gives its
// command: its own, unless that is /dev/null. Then the command gets a
// /dev/null of its own, opened as herald's own was (read-only, or
// read-write for a closed one) and with O_APPEND, which neither a read
// nor a write to /dev/null minds: a runner's /dev/null (systemd's
// StandardInput=null, a daemon's, a closed one) passed on as it is
// looked like the command's own </dev/null, and herald checkpoint put -
// in a command with no producer saved an empty checkpoint over the
// progress. closeIt closes herald's copy once the command started.
func commandStdin(r io.Reader) (in io.Reader, closeIt func()) {
	switch stdinKind(r) {
	case stdinDevNull, stdinClosed, stdinFromRun:
	default:
		return r, func() {}
	}
	mode := os.O_RDONLY
	if fl, err := unix.FcntlInt(r.(*os.File).Fd(), unix.F_GETFL, 0); err == nil && fl&unix.O_ACCMODE == unix.O_RDWR {
		mode = os.O_RDWR
	}
	f, err := os.OpenFile(os.DevNull, mode|os.O_APPEND, 0)
	if err != nil {
		return r, func() {}
	}
	return f, func() { _ = f.Close() }
}
