//go:build !unix

package main

// noSuspend: no job control (SIGTSTP) to keep away.
func (a *app) noSuspend() (stop func()) { return func() {} }
