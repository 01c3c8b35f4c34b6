//go:build !linux

package spawn

import "os/exec"

// Start starts cmd: without Pdeathsig, the thread it starts from does not
// matter.
func Start(cmd *exec.Cmd) error { return cmd.Start() }
