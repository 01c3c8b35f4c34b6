//go:build !linux

package main

import (
	"errors"
	"os"
)

// Cgroups are Linux's: elsewhere a command is tracked by its process
// group alone (see cgroup_linux.go).

func commandCgroup(string) (string, *os.File, error) {
	return "", nil, errors.New("cgroups are Linux's")
}

func cgroupPopulated(string) (bool, error)       { return false, errors.New("cgroups are Linux's") }
func cgroupMembers(string) []int                 { return nil }
func cgroupKill(string) error                    { return nil }
func removeCgroup(string)                        {}
func cgroupLeft(string) ([]procInfo, bool, bool) { return nil, false, false }
func cgroupStartErr(err error) error             { return err }
func validCgroup(string) error                   { return errors.New("cgroups are Linux's") }

func withMembers(list []procInfo, _ string, _ int) []procInfo { return list }
