package zkserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// CPUTime is the CPU time (user and system) the server process has used so
// far, read from /proc. Benchmarks take the difference over a run to tell
// what a workload costs the server.
func (s *Server) CPUTime() (time.Duration, error) {
	s.mu.Lock()
	if !s.runningLocked() {
		s.mu.Unlock()
		return 0, fmt.Errorf("%w: zk%d on %s", ErrNotRunning, s.id, s.Addr())
	}
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("zkserver: read member %d's CPU time: %w", s.id, err)
	}
	// Fields after the command name (in parentheses): state is the 1st,
	// utime the 12th, stime the 13th.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("zkserver: member %d: unexpected /proc stat %q", s.id, b)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("zkserver: member %d: CPU time %q: %w", s.id, v, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
