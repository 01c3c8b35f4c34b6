package main

import "golang.org/x/sys/unix"

// waiting is the number of bytes in the pipe at fd not read yet.
func waiting(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}
