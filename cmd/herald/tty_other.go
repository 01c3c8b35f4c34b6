//go:build !unix

package main

import (
	"io"
	"syscall"
)

// terminal: no process groups, so the command shares herald's terminal.
type terminal struct{}

func foregroundTerminal(io.Reader) *terminal                   { return nil }
func (*terminal) giveTo(*syscall.SysProcAttr) (started func()) { return func() {} }
func (*terminal) takeBack(int)                                 {}
