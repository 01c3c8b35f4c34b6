//go:build unix

package main

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminal is the terminal on herald's stdin while herald's process group
// is its foreground group. The command runs in a process group of its
// own, which the terminal would stop (SIGTTIN) the first time it reads
// there, holding the lock forever; so the command's group is made the
// foreground group while it runs, and herald takes the terminal back
// when it is done. The terminal's Ctrl-C, Ctrl-\ and hangup then go to the
// command, as they would to any foreground command; Ctrl-Z does not
// suspend it (SIGTSTP is ignored for it): a suspended command would hold
// the group with nobody working and the terminal with nobody to resume it.
// takeBack, with SIGTTOU ignored, needs no permission from the terminal.
type terminal struct {
	fd   int
	pgrp int // herald's process group, the foreground one before
}

// foregroundTerminal returns the terminal on stdin when herald's group is
// in the foreground there, and nil otherwise (no terminal, or herald runs
// in the background, where the command gets no terminal input either).
func foregroundTerminal(stdin io.Reader) *terminal {
	f, ok := stdin.(*os.File)
	if !ok || f == nil {
		return nil
	}
	fd := int(f.Fd())
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pg != syscall.Getpgrp() {
		return nil
	}
	return &terminal{fd: fd, pgrp: pg}
}

// giveTo sets attr so that the child's group becomes the foreground group
// as it starts, and returns what to do once it has started. The child
// inherits an ignored SIGTSTP (and so does the watchdog); herald itself,
// in the background from then on, ignores SIGTTOU so that its own
// messages to the terminal never stop it. herald keeps ignoring both
// until it exits (the runtime cannot hand back a disposition it did not
// set): a herald with --rejoin, waiting again, is not suspended by Ctrl-Z
// either, as it should not be while it holds or waits for the group.
func (t *terminal) giveTo(attr *syscall.SysProcAttr) (started func()) {
	if t == nil {
		return func() {}
	}
	attr.Foreground, attr.Ctty = true, t.fd
	signal.Ignore(syscall.SIGTSTP)
	return func() { signal.Ignore(syscall.SIGTTOU) }
}

// takeBack makes herald's group the foreground group again, if the
// command's group (pgid) still is: a shell that took the terminal back
// meanwhile keeps it.
func (t *terminal) takeBack(pgid int) {
	if t == nil {
		return
	}
	if pg, err := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP); err == nil && pg == pgid {
		_ = unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, t.pgrp)
	}
}
