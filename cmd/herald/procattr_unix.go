//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// childProcAttr puts the child in its own process group.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// bornIn: cgroups are Linux's; commandCgroup makes none here.
func bornIn(*syscall.SysProcAttr, *os.File) {}
