//go:build unix && !linux

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// childProcAttr puts the child in its own process group.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// bornIn: cgroups are Linux's; commandCgroup makes none here.
func bornIn(*syscall.SysProcAttr, *os.File) {}

// startCmd starts cmd: without Pdeathsig, the thread it starts from
// does not matter.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
