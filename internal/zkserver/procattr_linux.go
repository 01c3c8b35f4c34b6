package zkserver

import (
	"syscall"
)

// sysProcAttr puts the server in its own process group and has the kernel
// kill it when the process that started it dies, so a crashed or killed
// test binary leaves no ZooKeeper behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
