package zkserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

const pollInterval = 50 * time.Millisecond

// withStartTimeout applies d unless ctx already ends sooner.
func withStartTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// waitServing polls mntr until the server reports a serving state. It fails
// at once when the process exits, and includes the log tail in errors.
func (s *Server) waitServing(ctx context.Context) error {
	_, done := s.process()
	var last error
	for {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		state, err := s.State(qctx)
		cancel()
		if err == nil {
			switch state {
			case "standalone", "leader", "follower", "observer":
				return nil
			}
			err = fmt.Errorf("zkserver: zk%d reports state %q", s.id, state)
		}
		last = err
		t := time.NewTimer(pollInterval)
		select {
		case <-done:
			t.Stop()
			s.mu.Lock()
			werr := s.waitErr
			s.mu.Unlock()
			return fmt.Errorf("%w: zk%d on %s: %v%s", ErrExited, s.id, s.Addr(), werr, s.logTail())
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("zkserver: zk%d on %s did not serve in time (%w; last: %v)%s",
				s.id, s.Addr(), ctx.Err(), last, s.logTail())
		case <-t.C:
		}
	}
}

// logTail returns the end of the server's log, ready to append to an error.
func (s *Server) logTail() string {
	const max = 4096
	f, err := os.Open(s.LogPath())
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > max {
		f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	tail := string(b)
	if len(b) == max {
		if i := strings.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		}
	}
	return fmt.Sprintf("\n--- end of %s ---\n%s", s.LogPath(), strings.TrimRight(tail, "\n"))
}
