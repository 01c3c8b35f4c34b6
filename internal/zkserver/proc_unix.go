//go:build unix

package zkserver

import (
	"errors"
	"os/exec"
	"syscall"
)

// signalGroup sends sig to the process group led by cmd's process, so any
// helper the JVM may start dies with it.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}

func terminate(cmd *exec.Cmd) error {
	if err := signalGroup(cmd, syscall.SIGTERM); err != nil {
		return err
	}
	// A stopped process only acts on SIGTERM once it runs again.
	return signalGroup(cmd, syscall.SIGCONT)
}

func kill(cmd *exec.Cmd) error   { return signalGroup(cmd, syscall.SIGKILL) }
func pause(cmd *exec.Cmd) error  { return signalGroup(cmd, syscall.SIGSTOP) }
func resume(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGCONT) }
