package elect

import (
	"errors"
	"time"
)

// Held reports whether ownership is still safe. It asks the clock as well
// as Done: a process that did not run for a while (SIGSTOP, a paused VM, a
// machine starved of CPU) runs again before the goroutines that would
// close Done do, and its first Held said true while the servers had
// expired its session and the next owner held (found by an adversarial
// test: every try under LoseOnExpiry, most under LoseOnSuspend). So a
// handle whose session has gone unheard for longer than the loss policy
// allows ends here, as the monitor would end it a moment later; its
// fenced writes are refused by the same check.
func (h *Handle) Held() bool {
	select {
	case <-h.done:
		return false
	default:
	}
	reason, err := h.q.s.unvouched(h.q.o.policy)
	if err == nil {
		return true
	}
	h.lose(reason, err)
	if reason == ReasonSuspended || reason == ReasonSessionExpired {
		h.giveBack(reason) // our node, should it be left, goes as on a suspension
	}
	return false
}

// errUnvouched is the loss Held finds when ZooKeeper's leader has answered
// no sync for half the session timeout (see leader_lease.go).
var errUnvouched = errors.New("elect: ZooKeeper's leader answered none of the session's syncs for half its timeout (the process may have been frozen, or its member cut off); ownership given up as the loss policy says")

// unvouched is why ownership on s can no longer be vouched for under
// policy p, by s's state and the clock, before its own timers and events
// say so: nil while it can. A session whose newest sync the leader
// answered was sent a whole timeout ago (on the monotonic clock, so a
// step of the wall clock ends nothing) may have been expired by the
// leader under either policy: a member cut off from it goes on answering
// pings, so replies alone prove nothing. Under LoseOnSuspend ownership
// ends sooner, once the lease has run out or the connection is lost.
func (s *Session) unvouched(p LossPolicy) (Reason, error) {
	s.mu.Lock()
	st, leaderAt, timeout := s.state, s.leaderAt, s.timeout
	s.mu.Unlock()
	syncs := !s.noSyncs.Load() && timeout > 0 && !leaderAt.IsZero()
	switch {
	case st == StateLost:
		return ReasonSessionExpired, ErrSessionLost
	case st == StateClosed:
		return ReasonSessionClosed, ErrSessionClosed
	case syncs && time.Since(leaderAt) >= timeout, !syncs && s.unheardPastTimeout():
		return ReasonSessionExpired, ErrSessionLost
	case p != LoseOnSuspend:
		return "", nil
	case st == StateSuspended:
		return ReasonSuspended, errors.New("elect: connection to ZooKeeper suspended; ownership given up as the loss policy says")
	case st == StateConnected && syncs && time.Since(leaderAt) >= timeout/leaseStale:
		return ReasonSuspended, errUnvouched
	}
	return "", nil
}
