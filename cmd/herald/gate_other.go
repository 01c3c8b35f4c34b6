//go:build !unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

// gateArg: see gate_unix.go. Without a watchdog there is nothing to wait
// for: the command starts at once.
const gateArg = "__herald-gate"

func gated(_ string, args []string) (*exec.Cmd, *os.File, *os.File) {
	return exec.Command(args[0], args[1:]...), nil, nil
}

func runGate(_ []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "herald: the command gate is not supported on this platform")
	return exitUsage
}
