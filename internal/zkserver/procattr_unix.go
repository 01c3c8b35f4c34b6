//go:build unix && !linux

package zkserver

import (
	"syscall"
)

// sysProcAttr puts the server in its own process group so Close can signal
// it as a whole. Without Pdeathsig (Linux only), a server outlives a test
// binary that is killed before Close runs.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
