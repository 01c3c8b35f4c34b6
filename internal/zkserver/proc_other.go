//go:build !unix

package zkserver

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

var errUnsupported = fmt.Errorf("zkserver: process control needs a Unix system: %w", errors.ErrUnsupported)

func sysProcAttr() *syscall.SysProcAttr { return nil }
func terminate(cmd *exec.Cmd) error     { return cmd.Process.Kill() }
func kill(cmd *exec.Cmd) error          { return cmd.Process.Kill() }
func pause(*exec.Cmd) error             { return errUnsupported }
func resume(*exec.Cmd) error            { return errUnsupported }
