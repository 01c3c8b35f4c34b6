//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// noSuspend keeps Ctrl-Z from suspending run and lock when the command
// does not have the terminal (standard input not the terminal: `herald run
// ... </dev/null`), and says why. A suspended herald sends no heartbeat:
// its watchdog stopped the command half a session timeout later, the
// session expired, and the `bg` that followed found the command gone and
// exited 3. (With the terminal given to the command, SIGTSTP is ignored,
// see terminal.giveTo.) stop restores the default.
func (a *app) noSuspend() (stop func()) {
	ch, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(ch, syscall.SIGTSTP)
	go func() {
		for {
			select {
			case <-ch:
				a.log.Warn("herald does not suspend (Ctrl-Z) while it holds or waits for its group: suspended, it could not stop its command in time, and its session would expire. " +
					"Ctrl-C stops it; to run it in the background, start it with &")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
