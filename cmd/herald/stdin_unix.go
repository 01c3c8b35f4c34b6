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
// an explicit <>/dev/null looks the same as a closed one.
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
	if err == nil && fl&unix.O_ACCMODE == unix.O_RDWR {
		return stdinClosed
	}
	return stdinDevNull
}
