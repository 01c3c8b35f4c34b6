//go:build !linux

package main

import "fmt"

// Without /proc and a child subreaper, the command's strays (see
// strays_linux.go) are not found: only its process group is stopped.
type procInfo struct {
	pid     int
	start   uint64
	stopped bool
	zombie  bool
}

func (p procInfo) String() string                 { return fmt.Sprint(p.pid) }
func strayList([]int, int, []procInfo) []procInfo { return nil }
func stopStrays([]procInfo, bool)                 {}
func becomeSubreaper() error                      { return nil }
func reapStrays(int)                              {}
func reapAndList(int) []procInfo                  { return nil }
func readProc(int) (procInfo, bool)               { return procInfo{}, false }

// commandGone cannot be confirmed without /proc.
func commandGone(int, int, []procInfo, runTag) bool { return false }

func commandLeft(int, int, []procInfo, runTag) ([]procInfo, bool) { return nil, false }
func killLeft([]procInfo, int, runTag)                            {}

func strayCarriers(_ int, _ runTag, known []procInfo) []procInfo { return known }

func reapStraysFor(int) func() { return func() {} }
