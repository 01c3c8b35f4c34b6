//go:build !linux

package zkserver

import (
	"errors"
	"time"
)

// CPUTime needs /proc; elsewhere it reports that it cannot tell.
func (s *Server) CPUTime() (time.Duration, error) {
	return 0, errors.New("zkserver: CPU time is read from /proc, which only Linux has")
}
