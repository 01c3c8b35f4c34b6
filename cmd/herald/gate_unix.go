//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// gateArg is the hidden first argument with which herald's own binary
// holds the command's place. run and lock start the command through it, in
// the command's process group and with its kill-on-death, and it execs the
// command (same pid, same descriptors) only once the runner says so, which
// the runner does once the watchdog runs. A runner killed before that
// leaves nothing behind: the kernel kills the held process with it, and
// that process has started nothing. Before, a command that forked in the
// milliseconds between its start and its watchdog's left what it forked
// running, beside the next owner's command, should the runner die then.
const gateArg = "__herald-gate"

// gated is the command that runs args, found at path, once a byte is
// written to the last pipe end returned (see child.begin); the first is
// the end the held process reads, for the caller to close once it
// started. Without herald's own binary it is the command itself, started
// at once, and no pipe.
func gated(path string, args []string) (*exec.Cmd, *os.File, *os.File) {
	self, err := heraldBinary()
	if err != nil {
		return exec.Command(args[0], args[1:]...), nil, nil
	}
	return gatedBy(self, path, args)
}

// gatedBy is gated with herald's binary at self.
func gatedBy(self, path string, args []string) (*exec.Cmd, *os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		return exec.Command(args[0], args[1:]...), nil, nil
	}
	cmd := exec.Command(self, append([]string{gateArg, path}, args...)...)
	cmd.ExtraFiles = []*os.File{r}
	return cmd, r, w
}

// runGate is the held process (args: the command's path, then its
// arguments from the name it was given): it waits for the runner's byte
// on descriptor 3, and then becomes the command. End of file means the
// runner is gone: nothing is started.
func runGate(args []string, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, "herald: the command gate is herald's own; it takes a path and a command")
		return exitUsage
	}
	gate := os.NewFile(3, "gate")
	n, _ := gate.Read(make([]byte, 1))
	gate.Close()
	if n == 0 {
		return exitNotLeader
	}
	err := syscall.Exec(args[0], args[1:], os.Environ())
	// Only a failed exec returns: say it as a shell would.
	var ee *exitError
	if errors.As(cannotStart(args[1], args[0], err), &ee) {
		fmt.Fprintf(stderr, "herald: %v\n", ee.err)
		return ee.code
	}
	fmt.Fprintf(stderr, "herald: cannot start %s: %v\n", args[1], err)
	return exitCannotExec
}
