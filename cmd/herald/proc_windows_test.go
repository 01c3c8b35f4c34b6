//go:build windows

package main

import (
	"errors"
	"syscall"
	"time"
)

// Windows has no such signals, process groups or named pipes in the file
// system: the tests that need them fail there with errNoSignals, and the
// others build and run.
const (
	sigStop = syscall.Signal(0x13)
	sigCont = syscall.Signal(0x12)
	sigTSTP = syscall.Signal(0x14)
)

var errNoSignals = errors.New("no signals to other processes, process groups or FIFOs on Windows")

func signalPID(int, syscall.Signal) error   { return errNoSignals }
func ownProcessGroup() *syscall.SysProcAttr { return nil }
func mkfifo(string) error                   { return errNoSignals }

// strayLookEvery is the watchdog's (watchdog_unix.go); there is no
// watchdog here.
const strayLookEvery = 250 * time.Millisecond
