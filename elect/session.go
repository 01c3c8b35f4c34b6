package elect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// State is the liveness of a Session.
type State int32

const (
	// StateConnecting: not yet connected for the first time.
	StateConnecting State = iota
	// StateConnected: connected, the session is alive.
	StateConnected
	// StateSuspended: the connection is lost; the session may still be alive
	// on the servers (and our ephemeral nodes with it) until its timeout.
	StateSuspended
	// StateLost: the session expired; every ephemeral node it owned is gone.
	StateLost
	// StateClosed: Close was called.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateSuspended:
		return "suspended"
	case StateLost:
		return "lost"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// Session is one ZooKeeper session. It owns liveness: every recipe built on
// it learns from the session when its ephemeral nodes may be, or are, gone.
// A Session never silently becomes a new ZooKeeper session: once expired it
// stays lost (Done is closed) and the caller creates a new one.
type Session struct {
	conn    *zk.Conn
	servers []string
	hosts   *hostProvider // the members servers resolved to
	log     *slog.Logger
	timeout time.Duration // negotiated

	digestACL []zk.ACL    // the digest identity with every permission, when credentials were given (DefaultACL)
	certID    bool        // the first connection presented a client certificate
	certSent  atomic.Bool // the last handshake presented a client certificate
	acl       []zk.ACL    // WithDefaultACL, else nil
	id        atomic.Int64
	nonces    atomic.Uint32 // counts our queue nodes; see heraldID
	notes     atomic.Uint32 // counts our run notes; see runNoteName
	waitsWord atomic.Int32  // see claimWaits
	conns     atomic.Uint64 // counts the connections the session had; see connection
	writes    writeWaits    // see afterWrite
	granted   atomic.Int64  // negotiated timeout in ms, sniffed from the handshake
	answered  atomic.Int64  // see Answered (unix ns)
	heardAt   atomic.Int64  // see heard (unix ns)
	// moved: the latest connection, and what the one before it vouched
	// for (see vouchedLeaving).
	moved    atomic.Pointer[connMove]
	lostFlag atomic.Bool
	// rewatched: the newest connection whose watch events of the time
	// without one have all come (see openConn).
	rewatched atomic.Uint64
	dialErr   atomic.Pointer[error] // the last failed dial, named when no server answers
	tlsFailed chan error            // a handshake retrying cannot mend (buffered 1)
	tlsMu     sync.Mutex
	tlsBad    map[string]bool // members whose TLS failed (see dialFailed)
	// tlsAnswered: a member finished its TLS handshake, or timed out
	// trying, since this attempt began (see dialFailed).
	tlsAnswered atomic.Bool
	// opened: the first connection made a session; tlsWarned is when
	// a failed reconnect's TLS was last logged, and what it said.
	opened    atomic.Bool
	tlsWarned time.Time
	tlsWhy    string
	mu        sync.Mutex
	state     State
	gen       uint64 // bumped on every state change
	changed   chan struct{}
	done      chan struct{}
	err       error
	closeOnce sync.Once
	// bg counts the background work Close waits for; closing (under mu)
	// says Close is waiting, and work started after that is not counted
	// (see background).
	bg      sync.WaitGroup
	closing bool
	// bgBusy counts the same work for Settle, and bgIdle is closed when
	// it falls to zero (under mu): a WaitGroup may not be waited on while
	// work is still being added.
	bgBusy int
	bgIdle chan struct{}
	// lingering is closed once the connection of a session presumed
	// lost has been closed (see lingerLocked); nil when none lingers.
	// lingerEnded: its closing has begun; stopLinger stops its bound.
	lingering   chan struct{}
	lingerEnded bool
	stopLinger  func() bool
	// lingerOpen: the dialer still connects for a lingering session.
	lingerOpen atomic.Bool
	// watchFns are given every watch event the connection receives (see
	// ObserveMany); they run on the client's receive loop. Copy on write,
	// under mu.
	watchFns atomic.Pointer[[]*func(zk.Event)]

	// sessionWatches: the session nodes (of other sessions) this session
	// watches for the waits behind their owners, each with whether it is
	// still trusted (see seeSessionNode): path -> *sessionTrust.
	sessionWatches sync.Map
	// ownSessionNodes: the session nodes this session made, or found made
	// by an earlier node of its own (path -> struct{}): every deletion of
	// one of its queue nodes that records its reason nowhere else notes it
	// there (see queue.remove).
	ownSessionNodes sync.Map
	// rootsChecked: the session roots whose ACL this session checked
	// (path -> struct{}; see checkSessionRoot).
	rootsChecked sync.Map
	// groupsChecked: the groups whose ACL this session checked (path ->
	// struct{}; see checkGroup).
	groupsChecked sync.Map
	// timeoutsRead: the session nodes of other sessions whose timeout this
	// session has read (path -> time.Duration, 0 for none), and
	// longestSeen the longest, in nanoseconds (see LongestTimeoutSeen).
	timeoutsRead sync.Map
	longestSeen  atomic.Int64

	// The leader's word (see leader_lease.go), under mu: leaderAt is when
	// the newest sync the leader answered was sent, leaseTimer checks it,
	// and leaseSuspended says the lease suspended the session. current
	// is the client's connection, closed when the lease runs out.
	leaderAt       time.Time
	leaderNs       atomic.Int64 // leaderAt, for readers without mu (see vouchedAsOf)
	syncSent       atomic.Int64 // when the newest sync was sent, unix ns (see leaderBehind)
	leaseTimer     *time.Timer
	leaseSuspended bool
	current        atomic.Pointer[sniffConn]
	noSyncs        atomic.Bool // tests that count requests turn the lease off
	// closeNotBefore: a lingering session is not closed before this
	// (see giveUpShortenedLocked), under mu.
	closeNotBefore time.Time
}

// NewSession connects to the ensemble and waits until the servers grant a
// session. An unreachable ensemble is retried with exponential backoff until
// the ConnectTimeout (or ctx) runs out, then reported with the servers named.
func NewSession(ctx context.Context, servers []string, opts ...SessionOption) (*Session, error) {
	o := defaultSessionOptions()
	for _, opt := range opts {
		if opt == nil {
			return nil, errNilOption
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if err := o.validate(servers); err != nil {
		return nil, err
	}
	if err := resolvable(ctx, servers); err != nil {
		return nil, err
	}
	// The connect timeout bounds the whole wait, attempts included: a
	// caller must hear about an unreachable ensemble when it said.
	ctx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	defer cancel()
	if err := o.checkACL(); err != nil {
		return nil, err
	}
	o.attemptTimeout = min(o.attemptTimeout, o.connectTimeout)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = o.connectTimeout
	var last error
	attempt := 0
	deadline, _ := ctx.Deadline()
	outOfTime := false
	for {
		attempt++
		s, err := dial(ctx, servers, o)
		if err == nil {
			return s, nil
		}
		last = err
		if errors.Is(err, ErrSessionTimeout) || errors.Is(err, ErrTLS) || errors.Is(err, errNoIdentity) || ctx.Err() != nil {
			break
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop || time.Now().Add(wait).After(deadline) {
			outOfTime = true
			break
		}
		o.log.Info("ZooKeeper not reachable yet, retrying", "servers", strings.Join(servers, ","), "attempt", attempt, "in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	if errors.Is(last, ErrSessionTimeout) || errors.Is(last, errNoIdentity) {
		return nil, last
	}
	if errors.Is(last, ErrTLS) {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, last)
	}
	if outOfTime || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		last = fmt.Errorf("%v; gave up after the connect timeout, %v", last, o.connectTimeout)
	} else if ctx.Err() != nil && !errors.Is(last, ctx.Err()) {
		last = fmt.Errorf("%v (%w)", last, ctx.Err())
	}
	tries := fmt.Sprintf("%d attempts", attempt)
	if attempt == 1 {
		tries = "1 attempt"
	}
	return nil, fmt.Errorf("%w: no session from %s after %s: %v; check that ZooKeeper runs there and the addresses are right",
		ErrUnreachable, strings.Join(servers, ","), tries, last)
}

func dial(ctx context.Context, servers []string, o sessionOptions) (*Session, error) {
	s := &Session{servers: servers, hosts: &hostProvider{}, log: o.log, changed: make(chan struct{}), done: make(chan struct{}), tlsFailed: make(chan error, 1)}
	first := make(chan struct{})
	var firstOnce sync.Once
	cb := func(ev zk.Event) {
		if ev.Type != zk.EventSession && s.lostFlag.Load() {
			return // a lingering connection's (see lingerLocked): nobody's
		}
		if ev.Type != zk.EventSession {
			if fns := s.watchFns.Load(); fns != nil && ev.Type != zk.EventNotWatching {
				for _, fn := range *fns {
					(*fn)(ev)
				}
			}
			return
		}
		if ev.State == zk.StateHasSession {
			s.noteMove(s.conns.Add(1)) // before the client reads anything on the connection
		}
		s.onState(ev)
		if ev.State == zk.StateHasSession {
			firstOnce.Do(func() { close(first) })
		}
	}
	conn, _, err := zk.Connect(servers, o.timeout,
		zk.WithEventCallback(cb),
		zk.WithLogger(zkLogger{o.log}),
		zk.WithLogInfo(false),
		zk.WithHostProvider(s.hosts),
		zk.WithDialer(s.dialer(o.dialTimeout, o.tls)),
		zk.WithMaxBufferSize(o.maxBuffer),
	)
	if err != nil {
		return nil, fmt.Errorf("elect: connect: %w", err)
	}
	// The client's event loop runs already, and onState reads these
	// under s.mu.
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	if err := s.awaitFirst(ctx, first, o.attemptTimeout); err != nil {
		return nil, err
	}
	granted := time.Duration(s.granted.Load()) * time.Millisecond
	s.mu.Lock()
	s.timeout = granted
	s.mu.Unlock()
	if granted != o.timeout && !o.acceptNegotiated {
		conn.Close()
		return nil, fmt.Errorf("%w: asked for %v, the server granted %v (it bounds timeouts by its minSessionTimeout/maxSessionTimeout, by default 2 and 20 ticks); ask for %v or change the server's limits",
			ErrSessionTimeout, o.timeout, granted, granted)
	}
	if o.digest != "" {
		if err := conn.AddAuth("digest", []byte(o.digest)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("elect: digest authentication: %w", err)
		}
		user, pw, _ := strings.Cut(o.digest, ":")
		s.digestACL = zk.DigestACL(zk.PermAll, user, pw)
	}
	s.certID = s.certSent.Load()
	if err := o.checkIdentity(s.certID); err != nil {
		conn.Close()
		return nil, err
	}
	s.acl = o.acl
	s.id.Store(conn.SessionID())
	s.mu.Lock()
	s.leaseFromLocked(time.Now())
	s.mu.Unlock()
	go s.confirmLeader()
	return s, nil
}

// awaitFirst waits for the connection's first session (first closed), at
// most attempt. With no session yet, the client's Close waits a second for
// an answer to its close request that no server will send, so on failure
// it closes behind the caller, who was promised the connect timeout.
func (s *Session) awaitFirst(ctx context.Context, first <-chan struct{}, attempt time.Duration) error {
	t := time.NewTimer(attempt)
	defer t.Stop()
	select {
	case <-first:
		s.opened.Store(true)
		return nil
	case err := <-s.tlsFailed:
		go s.conn.Close()
		return err
	case <-t.C:
		go s.conn.Close()
		if e := s.dialErr.Load(); e != nil {
			return fmt.Errorf("no server answered within %v: %w", attempt, *e)
		}
		return errors.New("no server answered within " + attempt.String())
	case <-ctx.Done():
		go s.conn.Close()
		if e := s.dialErr.Load(); e != nil {
			return fmt.Errorf("%w; the last dial: %v", ctx.Err(), *e)
		}
		return ctx.Err()
	}
}

// DefaultACL is the ACL of the nodes herald creates on this session when a
// recipe is given none: the session's WithDefaultACL if given; else, with
// digest credentials (WithDigestAuth), the digest identity by name
// (digest:user:hash) may do anything and everyone may read; without,
// everyone may do anything, as ZooKeeper's own clients and Curator and
// Kazoo default to.
//
// The digest identity is named rather than written auth::, because
// ZooKeeper expands auth:: to every identity of the creating session: on
// a server that asks for client certificates that includes the
// certificate's subject, and any process holding that certificate, with
// no credentials, could then change and delete the nodes.
//
// A TLS client certificate the servers asked for is an identity too
// (ZooKeeper's x509 provider names it by the certificate's subject, and
// auth:: entries name it), but it does not change this default: hosts
// usually hold certificates of their own, and a group that admitted only
// its creator's would shut the others out. Give WithDefaultACL (--zk-acl)
// the identities that may change the nodes.
func (s *Session) DefaultACL() []zk.ACL {
	if s.acl != nil {
		return s.acl
	}
	if s.digestACL != nil {
		return append(append([]zk.ACL(nil), s.digestACL...), zk.WorldACL(zk.PermRead)...)
	}
	return zk.WorldACL(zk.PermAll)
}

// connection numbers the connection the session is on, counting from 1:
// it moves as each connection is made, before the client reads a byte
// from it. ZooKeeper sends a session's replies and events in the order it
// handled them only along one connection. On a new one the client sets its
// watches again, and the events that brings for nodes that went meanwhile
// come in the order of the client's list (go-zookeeper builds it from a
// map: any order), and not in order with the replies to other requests
// (it sends the list from a goroutine of its own). So what an event or a
// reply says about the order of two changes holds only when both came on
// one connection.
func (s *Session) connection() uint64 { return s.conns.Load() }

// connMove is the session's latest connection, to, and what the session
// vouched for as it was made (vouchedAsOf): the newest moment the
// connection before it vouched for.
type connMove struct {
	to      uint64
	vouched time.Time
}

// noteMove notes connection to made, before the client reads anything on
// it: Answered is still the last connection's (a new one vouches for
// nothing before the watches are set again, see answers), and the lease
// not yet started anew.
func (s *Session) noteMove(to uint64) {
	s.moved.Store(&connMove{to: to, vouched: s.vouchedAsOf()})
	if to == 1 {
		s.rewatched.Store(1) // the first connection sets no watches again
	}
}

// noteOpened notes that the latest connection has had the reply to the
// request that set its watches again: the events of what changed while
// there was no connection came before it (see answers).
func (s *Session) noteOpened() { s.rewatched.Store(s.connection()) }

// openConn is the newest connection of the session that has had the
// events of what its watches missed while there was none (0 before the
// first): an event that comes later, on it, is of a change made on it.
func (s *Session) openConn() uint64 { return s.rewatched.Load() }

// vouchedLeaving is the newest moment the session vouched for what it
// watched on connection c, as the connection after it was made: zero when
// c is not the one before the latest, or nothing was vouched for.
func (s *Session) vouchedLeaving(c uint64) time.Time {
	if mv := s.moved.Load(); mv != nil && mv.to == c+1 {
		return mv.vouched
	}
	return time.Time{}
}

func (s *Session) onState(ev zk.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateLost || s.state == StateClosed {
		if s.lingering != nil {
			switch ev.State {
			case zk.StateHasSession, zk.StateExpired, zk.StateAuthFailed:
				// The servers answered the connection kept after the
				// session was presumed lost: close it now (see linger),
				// unless its work may still run (giveUpShortenedLocked).
				if time.Now().After(s.closeNotBefore) {
					s.endLingerLocked()
				}
			}
		}
		return
	}
	next := s.state
	switch ev.State {
	case zk.StateHasSession:
		if id := s.id.Load(); id != 0 && s.conn != nil && s.conn.SessionID() != id {
			next = StateLost // a new session behind our back: ours is gone
		} else if s.shortenedLocked() {
			s.giveUpShortenedLocked()
			return
		} else {
			next = StateConnected
		}
	case zk.StateDisconnected, zk.StateConnecting:
		if s.state == StateConnected {
			next = StateSuspended
		}
	case zk.StateExpired, zk.StateAuthFailed:
		next = StateLost
	}
	if next == s.state {
		return
	}
	s.log.Debug("ZooKeeper session state", "session", fmt.Sprintf("0x%x", uint64(s.id.Load())), "from", s.state, "to", next)
	switch next {
	case StateLost:
		s.setLocked(next)
		s.loseLocked()
	case StateSuspended:
		s.suspendLocked()
	case StateConnected:
		s.setLocked(next)
		s.leaseFromLocked(time.Now())
	default:
		s.setLocked(next)
	}
}

// shortenedLocked reports, on a reconnect, whether the member granted
// the session a shorter timeout than the one it was opened with, and
// says so. Members can differ in maxSessionTimeout (midway through a
// rolling change of it, or of tickTime), and a member moved to grants
// what its own limits allow: the servers then expire the session sooner
// than every bound herald keeps (its work stopped, a watchdog's kill,
// the leader's syncs) was made for, and a frozen runner's command ran
// 2.2 s beside the next owner's (found by an adversarial test). Such a
// session is given up (see giveUpShortenedLocked); a new one is checked
// at its handshake. (The client would ask every member after that for
// the shorter timeout.)
func (s *Session) shortenedLocked() bool {
	granted := time.Duration(s.granted.Load()) * time.Millisecond
	if s.timeout == 0 || granted <= 0 || granted >= s.timeout {
		return false
	}
	member := "a member"
	if c := s.current.Load(); c != nil {
		member = c.address
	}
	s.log.Error("ZooKeeper member granted the session a shorter timeout on reconnecting (its maxSessionTimeout is lower than the others'): herald's bounds rest on the timeout it asked for, so the session is given up; make the members' session limits agree",
		"session", fmt.Sprintf("0x%x", uint64(s.id.Load())), "member", member, "asked", s.timeout, "granted", granted)
	return true
}

// giveUpShortenedLocked gives up a session a member shortened: lost at
// once, so that its owners stop their work and its waiters give up (and
// the events its connection still brings go to nobody), but closed, which
// deletes its nodes, only once that work has had the time an owner that
// loses its connection has (GiveBackDelay): closed at once, the next owner
// could start beside it.
func (s *Session) giveUpShortenedLocked() {
	s.setLocked(StateLost)
	s.lingerLocked()
	// Not closed sooner, not even when the connection moves again (a
	// review found the linger's close at the next reconnect: the next
	// owner owned 39 ms after the loss).
	s.closeNotBefore = time.Now().Add(GiveBackDelay(s.timeout))
	time.AfterFunc(GiveBackDelay(s.timeout), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.endLingerLocked()
	})
}

// suspendLocked suspends the session. A partitioned client hears of its
// expiry only once it reaches a server again: after a whole session
// timeout suspended, the servers have expired it, and it says so then;
// sooner once a whole timeout has passed since the send of the newest sync
// the leader answered (see leader_lease.go), when the leader may have
// expired it: the suspension itself came half a timeout after that send
// on a member cut off from the leader, and a LoseOnExpiry owner believed
// it held for half a timeout beside the next owner.
func (s *Session) suspendLocked() {
	s.setLocked(StateSuspended)
	if s.timeout == 0 {
		return // still connecting: NewSession says what went wrong
	}
	gen, d := s.gen, s.timeout
	if !s.noSyncs.Load() && !s.leaderAt.IsZero() {
		d = max(0, min(d, time.Until(s.leaderAt.Add(s.timeout))))
	}
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gen == gen && s.state == StateSuspended {
			s.log.Warn("ZooKeeper unreachable for a whole session timeout: session considered expired (or the ensemble has no quorum, and expires nothing until it has)",
				"session", fmt.Sprintf("0x%x", uint64(s.id.Load())), "timeout", s.timeout)
			s.setLocked(StateLost)
			s.lingerLocked()
		}
	})
}

func (s *Session) loseLocked() {
	s.markLostLocked()
	// Never let the client quietly open a new session: close it.
	go s.conn.Close()
}

// markLostLocked says the session is lost, to every waiter on it.
func (s *Session) markLostLocked() {
	s.lostFlag.Store(true)
	s.err = ErrSessionLost
	close(s.done)
}

// lingerMax bounds how long a session presumed lost keeps its connection
// trying to reach the servers (see lingerLocked).
const lingerMax = 10 * time.Minute

// lingerLocked is loseLocked for a session presumed lost because no
// server answered for a whole session timeout. The servers may not have
// expired it: an ensemble without a quorum expires nothing, and the
// leader it elects when the quorum is back gives every session a whole
// timeout again. Closed cut off, the session's nodes (an owner's, whose
// work has stopped) would then hold its groups for that timeout after
// the ensemble is back, every copy waiting behind them. So the client
// goes on trying to reach the servers, for at most lingerMax, and the
// connection is closed as soon as they answer: closing a session they
// still hold deletes its ephemeral nodes at once; one they expired, or a
// new session the client was given instead, is closed as well. Nothing
// of herald acts on the session meanwhile: it is lost.
func (s *Session) lingerLocked() {
	s.markLostLocked()
	s.lingering = make(chan struct{})
	s.lingerOpen.Store(true)
	t := time.AfterFunc(lingerMax, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.endLingerLocked()
	})
	s.stopLinger = t.Stop
}

// endLingerLocked closes the connection of a lingering session, once.
func (s *Session) endLingerLocked() {
	if s.lingering == nil || s.lingerEnded {
		return
	}
	s.lingerEnded = true
	s.lingerOpen.Store(false)
	if s.stopLinger != nil {
		s.stopLinger()
	}
	done := s.lingering
	go func() {
		s.conn.Close() // sends closeSession when connected
		close(done)
	}()
}

// Lingering is closed once the connection of a session presumed lost
// after a whole timeout without an answer has been closed: when the
// servers answered again (closing a session they still held deletes its
// nodes at once) or said it expired, after lingerMax, or on Close. It is
// closed already for a session not lost that way. A process that exits
// once its session is lost may wait on it, for a while, so that its
// nodes do not outlive it.
func (s *Session) Lingering() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lingering == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return s.lingering
}

func (s *Session) setLocked(st State) {
	s.gen++
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
}

// ID is the ZooKeeper session id.
func (s *Session) ID() int64 { return s.id.Load() }

// claimWaits records whether a recipe of the session was given
// WaitsForPredecessor, and refuses a recipe that says otherwise than the
// session's first. The word is read from the session node a node's name
// leads to, one per session under a session root, whichever group the
// node is in (and one named by a node of a recipe that keeps none): a
// program that waited in one group and not in another said it waited in
// both, and a runner deposed beside its second node gave its command the
// grace while that node owned at once (found by a review).
func (s *Session) claimWaits(waits bool) error {
	word := int32(1)
	if waits {
		word = 2
	}
	if s.waitsWord.CompareAndSwap(0, word) || s.waitsWord.Load() == word {
		return nil
	}
	if waits {
		return errors.New("elect: WaitsForPredecessor given to a recipe of a session whose other recipes were not given it: the word is the session's, on its session node, for all of its nodes; give it to every recipe of the session or to none (a session per kind)")
	}
	return errors.New("elect: a recipe without WaitsForPredecessor on a session whose other recipes were given it: the word is the session's, on its session node, for all of its nodes, and a deposed runner would take this recipe's node for one that waits; give it to every recipe of the session or to none (a session per kind)")
}

// nextNonce numbers the session's queue nodes. Two nodes of one session
// never share a nonce while they could both exist.
func (s *Session) nextNonce() uint32 { return s.nonces.Add(1) }

// Timeout is the session timeout the servers granted.
func (s *Session) Timeout() time.Duration { return s.timeout }

// Servers are the addresses the session was opened with.
func (s *Session) Servers() []string { return append([]string(nil), s.servers...) }

// Conn is the underlying client, for reads that herald has no recipe for.
func (s *Session) Conn() *zk.Conn { return s.conn }

// State returns the current state and a channel closed at the next change.
func (s *Session) State() (State, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.changed
}

// Done is closed when the session is lost or closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why Done was closed: ErrSessionLost or ErrSessionClosed.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session; the servers delete its ephemeral nodes at once.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		if s.state != StateLost {
			s.err = ErrSessionClosed
			s.setLocked(StateClosed)
			close(s.done)
		}
		s.lostFlag.Store(true)
		if s.leaseTimer != nil {
			// A pending check would keep the session and its client
			// reachable for up to half a timeout.
			s.leaseTimer.Stop()
		}
		lingering := s.lingering
		s.endLingerLocked()
		s.mu.Unlock()
		if lingering != nil {
			<-lingering // its connection is closed, or being closed
		} else {
			s.conn.Close()
		}
		s.bg.Wait()
	})
	return nil
}

// CloseWithin is Close for a process about to exit, which would end a
// lingering connection (see Lingering) before it reached the servers:
// it first gives that connection up to d to reach them, so that the
// session's nodes go as soon as an ensemble that lost its quorum has it
// back rather than a whole timeout later. For a session not lingering it
// is Close.
func (s *Session) CloseWithin(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.Lingering():
	case <-t.C:
	}
	return s.Close()
}

// AwaitConnected blocks until the session is connected (nil), lost or
// closed (ErrSessionLost, ErrSessionClosed), or ctx ends (its error).
func (s *Session) AwaitConnected(ctx context.Context) error { return s.awaitConnected(ctx) }

// awaitConnected blocks until the session is connected, lost or closed, or
// ctx ends.
func (s *Session) awaitConnected(ctx context.Context) error {
	for {
		st, ch := s.State()
		switch st {
		case StateConnected:
			return nil
		case StateLost:
			return ErrSessionLost
		case StateClosed:
			return ErrSessionClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// gone returns the session's terminal error, or nil while it lives.
func (s *Session) gone() error {
	select {
	case <-s.done:
		return s.Err()
	default:
		return nil
	}
}

// background runs f tied to the session's life: Close waits for it.
//
// Work started once Close waits is not counted: adding to a WaitGroup
// while it is waited on is a race, and such work, on a session that is
// gone, returns at once (the servers delete its nodes themselves).
func (s *Session) background(f func()) {
	s.mu.Lock()
	counted := !s.closing
	if counted {
		s.bg.Add(1)
		if s.bgBusy++; s.bgBusy == 1 {
			s.bgIdle = make(chan struct{})
		}
	}
	s.mu.Unlock()
	go func() {
		if counted {
			defer s.backgroundDone()
		}
		f()
	}()
}

// backgroundDone counts a piece of background work finished.
func (s *Session) backgroundDone() {
	s.mu.Lock()
	if s.bgBusy--; s.bgBusy == 0 {
		close(s.bgIdle)
	}
	s.mu.Unlock()
	s.bg.Done()
}

// Settle waits, until ctx ends, for the work the session still does in
// the background to finish while the connection is open: a release or a
// give-up whose deletion or note did not finish before the call that
// asked for it returned (the connection was down, or the servers slow),
// a give-back waiting for its owner to stop. Call it before Close when
// the next participant should find the group tidy: Close ends that work
// where it stands, and the servers then delete the session's nodes
// without herald's note, so that a `herald run` or `herald lock` copy
// made after them may wait, as for an owner deleted by hand, before it
// owns. It returns nil once nothing is left, or ctx's error.
func (s *Session) Settle(ctx context.Context) error {
	for {
		s.mu.Lock()
		busy, idle := s.bgBusy, s.bgIdle
		s.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// resolvable fails at once, naming them, when no server's host name
// resolves: retrying a name that does not exist only makes the caller
// wait for the same answer. A failing resolver (not a name that does not
// exist) is left to the retries.
func resolvable(ctx context.Context, servers []string) error {
	var missing []string
	for _, hp := range servers {
		host, _, err := net.SplitHostPort(hp)
		if err != nil {
			return fmt.Errorf("%w: server address %q: %v; give host:port", ErrUnreachable, hp, err)
		}
		if net.ParseIP(host) != nil {
			return nil
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = lookupHost(lctx, host)
		cancel()
		var dns *net.DNSError
		if err == nil || !errors.As(err, &dns) || !dns.IsNotFound {
			return nil
		}
		missing = append(missing, host)
	}
	return fmt.Errorf("%w: no such host: %s; check the ZooKeeper addresses (--zk)", ErrUnreachable, strings.Join(missing, ", "))
}

// onWatch gives fn every watch event from now on, until remove is called.
// fn runs on the client's receive loop: it must not block.
func (s *Session) onWatch(fn func(zk.Event)) (remove func()) {
	p := &fn
	s.mu.Lock()
	var fns []*func(zk.Event)
	if old := s.watchFns.Load(); old != nil {
		fns = append(fns, *old...)
	}
	fns = append(fns, p)
	s.watchFns.Store(&fns)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		old := s.watchFns.Load()
		if old == nil {
			return
		}
		var fns []*func(zk.Event)
		for _, f := range *old {
			if f != p {
				fns = append(fns, f)
			}
		}
		s.watchFns.Store(&fns)
	}
}
