//go:build !unix

package main

import "io"

// stdinKind cannot tell a closed standard input here: an empty one is
// taken as given on purpose, as before.
func stdinKind(io.Reader) stdinSource { return stdinUnknown }
