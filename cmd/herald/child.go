package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"time"
)

// child is the command run, lock and the demo run while they hold
// ownership. It runs in its own process group so that stopping it stops
// everything it started.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the child has exited and been reaped
	code int           // valid after done
}

// startChild starts args with env added to herald's environment. A command
// that cannot start gets the shell's exit codes: 127 not found, 126 not
// executable.
func startChild(args, env []string, stdin io.Reader, stdout, stderr io.Writer) (*child, error) {
	if len(args) == 0 {
		return nil, usageErr("no command given: put it after --, e.g. herald run --election /jobs/x -- ./job.sh")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = time.Second // do not hang on pipes a grandchild keeps open
	if err := cmd.Start(); err != nil {
		code := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		return nil, &exitError{code: code, err: fmt.Errorf("cannot start %q: %w", args[0], err)}
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		c.code = exitCode(cmd.ProcessState)
		close(c.done)
	}()
	return c, nil
}

// checkCommand fails early, before any campaign, when the command cannot
// be found: a candidate that would win and then fail is worse than none.
func checkCommand(args []string) error {
	if len(args) == 0 {
		return usageErr("no command given: put it after --, e.g. herald run --election /jobs/x -- ./job.sh")
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		code := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = exitNotFound
		}
		return &exitError{code: code, err: fmt.Errorf("cannot start %q: %w", args[0], err)}
	}
	return nil
}

// exited reports whether the child has exited (and been reaped).
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Pid is the child's process id.
func (c *child) Pid() int { return c.cmd.Process.Pid }

// stop asks the child's process group to end (SIGTERM), waits up to grace,
// then kills the group (SIGKILL). It returns the child's exit code.
func (c *child) stop(grace time.Duration) int {
	select {
	case <-c.done:
		return c.code
	default:
	}
	_ = terminateGroup(c.cmd.Process)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = killGroup(c.cmd.Process)
		<-c.done
	}
	// Whatever the child left behind in its group goes too.
	_ = killGroup(c.cmd.Process)
	return c.code
}
