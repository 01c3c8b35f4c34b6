package elect

import (
	"fmt"
	"time"
)

// The leader's word. A ZooKeeper follower answers its clients' pings
// itself and passes the session's signs of life on to the leader, which
// alone expires sessions. A follower cut off from the leader (a network
// partition between ZooKeeper's members, the client's own link up) goes on
// answering pings until it gives the leader up, syncLimit × tickTime
// later (10 s with ZooKeeper's stock settings, 20 s with syncLimit 10),
// while the leader expires the session a session timeout after it last
// heard of it. So with a session timeout under that, the client heard
// nothing wrong while its session expired, its nodes went, and the next
// owner started beside a command still running (found by an adversarial
// test: 2.7–4.4 s of two commands, every try).
//
// So the session also asks the leader: every eighth of the timeout it
// sends a sync, which a follower answers only once the leader has, and a
// session whose newest answered sync was sent more than half the timeout
// ago is suspended, as for a lost connection, and its connection is
// closed so that the client tries another member. The leader expires the
// session no sooner than a timeout after the last sign of life it got,
// and the follower passes them on every half tick while it is in touch:
// at the latest half a tick before the answered sync plus a sync period.
// Suspended half a timeout after that sync was sent, herald kills its
// command a sixth of the timeout later (see herald's lossGrace), a
// timeout minus half a tick and an eighth after that sign of life at the
// earliest, which leaves a margin where the tick is under five twelfths
// of the session timeout (ZooKeeper grants timeouts of two ticks and
// more; its stock tick is 2 s, and herald's default timeout 10 s).

// leaseEvery and leaseStale are the sync period and how old the newest
// answered sync may be, in session timeouts.
const (
	leaseEvery = 8 // a sync every eighth of the timeout
	leaseStale = 2 // suspended once the newest answered one is half a timeout old
)

// confirmLeader sends the session's syncs, one every eighth of the
// timeout while it is connected, each without waiting for the one before:
// sent one at a time, a member with a steady round trip over a quarter of
// the timeout, in touch with its leader, had the lease run out again and
// again (found by a review), and the session's packets could be further
// apart than the margin above counts on.
func (s *Session) confirmLeader() {
	t := time.NewTicker(s.timeout / leaseEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if st, _ := s.State(); st != StateConnected || s.noSyncs.Load() {
			continue
		}
		sent := time.Now()
		s.syncSent.Store(sent.UnixNano())
		go func() {
			// Bounded: the lease suspends the session, and closes its
			// connection (failing these), half a timeout after the last
			// one answered.
			if _, err := s.conn.Sync("/"); err == nil {
				s.leaderAnswered(sent)
			}
		}()
	}
}

// leaderAnswered notes a sync sent at sent answered. One answered fresh
// while the lease had suspended the session (on a connection not yet
// closed) shows the member in touch with the leader again: connected.
func (s *Session) leaderAnswered(sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sent.After(s.leaderAt) {
		return
	}
	s.leaderAt = sent
	s.leaderNs.Store(sent.UnixNano())
	if s.state == StateSuspended && s.leaseSuspended && time.Since(sent) < s.timeout/leaseStale {
		s.leaseSuspended = false
		s.log.Info("the ZooKeeper leader answers again; session connected", "session", fmt.Sprintf("0x%x", uint64(s.id.Load())))
		s.setLocked(StateConnected)
	}
	s.armLeaseLocked()
}

// leaseFromLocked starts the lease anew at at: a session's connection is made
// with the leader's consent (a new session is the leader's to make, and a
// follower asks the leader before it takes an existing one).
func (s *Session) leaseFromLocked(at time.Time) {
	s.leaseSuspended = false
	if at.After(s.leaderAt) {
		s.leaderAt = at
		s.leaderNs.Store(at.UnixNano())
	}
	s.armLeaseLocked()
}

// armLeaseLocked sets the check of the lease for when it would go stale.
func (s *Session) armLeaseLocked() {
	if s.timeout == 0 || s.closing {
		return // still connecting, or closed (Close stopped the timer)
	}
	d := time.Until(s.leaderAt.Add(s.timeout / leaseStale))
	if s.leaseTimer == nil {
		s.leaseTimer = time.AfterFunc(d, s.leaseCheck)
		return
	}
	s.leaseTimer.Reset(d)
}

// leaseCheck suspends a connected session whose newest answered sync is
// too old (see leaseStale).
func (s *Session) leaseCheck() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateConnected || s.noSyncs.Load() {
		return
	}
	if since := time.Since(s.leaderAt); since < s.timeout/leaseStale {
		s.armLeaseLocked()
		return
	}
	member := "the member"
	if c := s.current.Load(); c != nil {
		member = c.address
	}
	s.log.Warn("ZooKeeper member answers, but not for the leader: it may be cut off from the rest of the ensemble, and the session may expire there unheard; treating the connection as lost and trying another member",
		"session", fmt.Sprintf("0x%x", uint64(s.id.Load())), "member", member, "last answered sync", time.Since(s.leaderAt).Round(time.Millisecond), "timeout", s.timeout)
	s.leaseSuspended = true
	s.suspendLocked()
	if c := s.current.Load(); c != nil {
		go func() { _ = c.Conn.Close() }() // the client then connects again
	}
}

// vouchedAsOf is the newest moment ZooKeeper vouched for what the session
// watches: Answered, but no later than the send of the newest sync the
// leader answered (or the connection's making). A member cut off from the
// leader goes on answering pings and reads from its own state, which no
// longer changes, until the lease suspends the session half a timeout
// later; an observer that took those replies for vouchers said the owner
// it last saw held until then, though it may have gone just after the cut
// (found by an adversarial test). On a member in touch with the leader it
// lags Answered by up to an eighth of the timeout: the price of a voucher
// that holds on any member.
func (s *Session) vouchedAsOf() time.Time {
	at := s.Answered()
	if at.IsZero() || s.noSyncs.Load() {
		return at
	}
	if l := s.leaderNs.Load(); l < at.UnixNano() {
		if l == 0 {
			return time.Time{}
		}
		return time.Unix(0, l)
	}
	return at
}

// behindSlack is how long a sync may go unanswered before leaderBehind
// takes the member for one behind its leader.
const behindSlack = time.Second

// leaderBehind reports whether a sync the session sent has gone
// unanswered for over behindSlack: its member is behind the ZooKeeper
// leader, or cut off from it. The syncs go every eighth of the timeout,
// so the one after the newest answered was sent that long after it.
//
// A member cut off for less than syncLimit keeps its clients, and once
// back it delivers the watch events of all that changed meanwhile at
// once, before it answers the syncs: an observer that dated those changes
// by its read of them dated them seconds late, as seen (found by an
// adversarial test). Such changes are now marked as seen late
// (Change.NotBefore). A cut that ends before the next sync is sent goes
// unnoticed: up to an eighth of the timeout, plus behindSlack.
func (s *Session) leaderBehind() bool {
	if s.noSyncs.Load() {
		return false
	}
	sent, answered := s.syncSent.Load(), s.leaderNs.Load()
	if sent <= answered {
		return false // none outstanding
	}
	return time.Since(time.Unix(0, answered)) > s.timeout/leaseEvery+behindSlack || time.Since(time.Unix(0, sent)) > behindSlack
}
