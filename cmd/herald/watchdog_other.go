//go:build !unix

package main

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// watchdogArg: see watchdog_unix.go. Without process groups there is no
// group to stop, and no watchdog.
const watchdogArg = "__herald-watchdog"

type watchdog struct{}

// watchdogReadyWait: see watchdog_unix.go.
const watchdogReadyWait = 10 * time.Second

func startWatchdog(*child, watchdogSpec) (*watchdog, error) {
	return nil, errors.New("no watchdog on this platform: a frozen runner's command runs until the runner thaws")
}

func (*watchdog) stop() bool              { return false }
func (*watchdog) pid() int                { return 0 }
func (*watchdog) exited() <-chan struct{} { return nil }
func (d *watchdog) spent() *watchdog      { return d }
func (*watchdog) hasFired() bool          { return false }

func runWatchdog(_ []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "herald watchdog: not supported on this platform")
	return exitUsage
}
