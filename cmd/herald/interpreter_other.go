//go:build !linux

package main

// missingInterpreter: see interpreter_linux.go; elsewhere a script whose
// interpreter is missing is reported as the exec error says.
func missingInterpreter(string) string { return "" }

// noProgram: see interpreter_linux.go; elsewhere the exec's error says.
func noProgram(string) bool { return false }
