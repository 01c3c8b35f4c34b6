//go:build !unix

package main

import "io"

// stdinKind cannot tell a closed standard input here: an empty one is
// taken as given on purpose, as before.
func stdinKind(io.Reader) stdinSource { return stdinUnknown }

// commandStdin is herald's own standard input, passed on to its command
// as it is.
func commandStdin(r io.Reader) (io.Reader, func()) { return r, func() {} }
