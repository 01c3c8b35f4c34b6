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
	case err == nil && fl&unix.O_ACCMODE == unix.O_RDWR:
		return stdinClosed
	case err == nil && fl&unix.O_APPEND != 0:
		return stdinFromRun
	}
	return stdinDevNull
}

// commandStdin is the standard input herald run (or lock) gives its
// command: its own, unless that is /dev/null. Then the command gets a
// /dev/null of its own, opened read-only with O_APPEND (which no read
// minds): a runner's /dev/null (systemd's StandardInput=null, a daemon's,
// a closed one) passed on as it is looked like the command's own
// </dev/null, and herald checkpoint put - in a command with no producer
// saved an empty checkpoint over the progress. closeIt closes herald's
// copy once the command started.
func commandStdin(r io.Reader) (in io.Reader, closeIt func()) {
	switch stdinKind(r) {
	case stdinDevNull, stdinClosed, stdinFromRun:
	default:
		return r, func() {}
	}
	f, err := os.OpenFile(os.DevNull, os.O_RDONLY|os.O_APPEND, 0)
	if err != nil {
		return r, func() {}
	}
	return f, func() { _ = f.Close() }
}
