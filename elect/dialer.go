package elect

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// lookupHost resolves a server's host name (a variable so that tests can
// point a name of their own at a test server).
var lookupHost = net.DefaultResolver.LookupHost

// zkMember is one address herald dials: a resolved ip:port and the host
// name it was given as in the server list, which a TLS server's
// certificate must name.
type zkMember struct{ addr, host string }

// label names the member in errors and logs: the address, and the name it
// was given as when that is not the address itself.
func (m zkMember) label() string {
	host, port, err := net.SplitHostPort(m.addr)
	if err != nil || host == m.host || m.host == "" {
		return m.addr
	}
	return net.JoinHostPort(m.host, port) + " (" + m.addr + ")"
}

// hostProvider gives the client the servers' addresses as go-zookeeper's
// own DNSHostProvider does (each name resolved once, every address a
// member, shuffled), but keeps the name each address came from: the
// client hands the dialer only the resolved ip:port, and TLS must verify
// the server's certificate against the name given, not the IP it
// resolved to. The client calls Next and then dials its answer on one
// goroutine, so the member Next returned last is the one being dialled.
type hostProvider struct {
	mu         sync.Mutex
	members    []zkMember
	curr, last int
}

func (hp *hostProvider) Init(servers []string) error {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var found []zkMember
	for _, server := range servers {
		host, port, err := net.SplitHostPort(server)
		if err != nil {
			return err
		}
		addrs, err := lookupHost(ctx, host)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			found = append(found, zkMember{addr: net.JoinHostPort(a, port), host: host})
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("no addresses found for %q", servers)
	}
	rand.Shuffle(len(found), func(i, j int) { found[i], found[j] = found[j], found[i] })
	hp.members, hp.curr, hp.last = found, -1, -1
	return nil
}

func (hp *hostProvider) Len() int {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return len(hp.members)
}

func (hp *hostProvider) Next() (string, bool) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.curr = (hp.curr + 1) % len(hp.members)
	retryStart := hp.curr == hp.last
	if hp.last == -1 {
		hp.last = 0
	}
	return hp.members[hp.curr].addr, retryStart
}

func (hp *hostProvider) Connected() {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	hp.last = hp.curr
}

// memberAt is the member being dialled at address: the one Next returned
// last, or failing that the first with that address.
func (hp *hostProvider) memberAt(address string) zkMember {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	if hp.curr >= 0 && hp.curr < len(hp.members) && hp.members[hp.curr].addr == address {
		return hp.members[hp.curr]
	}
	for _, m := range hp.members {
		if m.addr == address {
			return m
		}
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	return zkMember{addr: address, host: host}
}

// dialer wraps net.DialTimeout for two reasons: it reads the session timeout
// the server granted from the handshake (the client does not expose it), and
// it refuses to dial once the session is lost, so the client cannot quietly
// open a new session in its place. Under TLS it verifies the server's
// certificate against the host name the member was given as.
func (s *Session) dialer(timeout time.Duration, tlsCfg *tls.Config) zk.Dialer {
	return func(network, address string, _ time.Duration) (net.Conn, error) {
		if s.lostFlag.Load() && !s.lingerOpen.Load() {
			return nil, errors.New("elect: session lost; not reconnecting")
		}
		m := s.hosts.memberAt(address)
		c, err := net.DialTimeout(network, address, timeout)
		var sent bool
		if err == nil && tlsCfg != nil {
			c, err = handshake(c, m, timeout, presenting(tlsCfg, &sent))
		}
		if err != nil {
			s.dialFailed(m.label(), err)
			return nil, err
		}
		if tlsCfg != nil {
			s.tlsAnswered.Store(true)
		}
		s.certSent.Store(sent)
		sc := &sniffConn{Conn: c, s: s, r: bufio.NewReaderSize(c, 16<<10), address: m.label(), plain: tlsCfg == nil,
			answerBy: time.Now().Add(max(timeout, answerWait)), answers: answers{answered: s.noteAnswered, heard: s.noteHeard, opened: s.noteOpened, gated: s.connection() > 0}}
		s.current.Store(sc)
		return sc, nil
	}
}

// dialFailed records why a dial of member (its label) failed, for the
// error NewSession returns. A TLS failure, which no retry mends, ends
// NewSession's wait at once once every member failed so: one member with
// a bad certificate (mid-rotation, say) must not keep a session from the
// others, which the client tries next. Every member has failed when as
// many members as the server list resolved to have (a name may resolve to
// several addresses, each a member), or a member fails a second time (the
// client came round the list again) while no other member answered in TLS
// or ran out of time doing so. A member too slow to finish its handshake
// within the dial timeout (a loaded server) may well be a good one: the
// client's next round tries it again.
func (s *Session) dialFailed(member string, err error) {
	s.dialErr.Store(&err)
	if !errors.Is(err, ErrTLS) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			s.tlsAnswered.Store(true) // not a refusal: it may answer next time
		}
		return
	}
	s.tlsMu.Lock()
	if s.tlsBad == nil {
		s.tlsBad = map[string]bool{}
	}
	again := s.tlsBad[member]
	s.tlsBad[member] = true
	all := again && !s.tlsAnswered.Load() || len(s.tlsBad) >= s.hosts.Len()
	n := len(s.tlsBad)
	s.tlsMu.Unlock()
	if !all {
		s.log.Warn("TLS to a ZooKeeper member failed; trying the others", "member", member, "err", err)
		return
	}
	if n > 1 {
		err = fmt.Errorf("%w (and %d other members failed TLS too)", err, n-1)
	}
	if s.opened.Load() {
		s.warnReconnectTLS(err)
		return
	}
	select {
	case s.tlsFailed <- err:
	default:
	}
}

// warnReconnectTLS logs why a session that had connected cannot reconnect
// over TLS (a certificate expired meanwhile, a CA changed): otherwise a
// holder says only that its connection is suspended, then lost. Once a
// minute at most, and at once when the reason changes.
func (s *Session) warnReconnectTLS(err error) {
	s.tlsMu.Lock()
	why := err.Error()
	quiet := why == s.tlsWhy && time.Since(s.tlsWarned) < time.Minute
	if !quiet {
		s.tlsWhy, s.tlsWarned = why, time.Now()
	}
	s.tlsMu.Unlock()
	if !quiet {
		s.log.Warn("cannot reconnect to ZooKeeper: TLS failed with every member; retrying", "err", err)
	}
}

// handshake runs the TLS handshake with member m within timeout. Unless
// the config names the server, its certificate must name the host m was
// given as: a host name as a DNS name, an IP address as an IP address. A
// server that answers in plain text, or a certificate the config does not
// trust, fails here with an error that says which.
func handshake(c net.Conn, m zkMember, timeout time.Duration, cfg *tls.Config) (net.Conn, error) {
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName = m.host
	}
	address := m.label()
	tc := tls.Client(c, cfg)
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		var rh tls.RecordHeaderError
		var cv *tls.CertificateVerificationError
		switch {
		case refusedCert(err):
			return nil, certRefused(address, err)
		case errors.As(err, &rh):
			return nil, fmt.Errorf("%w: %s did not answer in TLS; is this its secureClientPort? (%v)", ErrTLS, address, err)
		case errors.As(err, &cv):
			return nil, fmt.Errorf("%w: %s: %v; %s", ErrTLS, address, err, serverCertAdvice(cv.Err))
		}
		if errors.Is(err, io.EOF) {
			// A plain port closes on a ClientHello; so does a server going
			// down, so this one is retried.
			return nil, fmt.Errorf("TLS handshake with %s: the server closed the connection; is this its secureClientPort? (%w)", address, err)
		}
		return nil, fmt.Errorf("TLS handshake with %s: %w", address, err)
	}
	_ = c.SetDeadline(time.Time{})
	return tc, nil
}

// presenting is cfg set to record in sent whether the handshake gave the
// server a client certificate: only a server that asks gets one, and
// ZooKeeper then makes the certificate's subject an identity of the
// connection (scheme x509), which auth:: ACL entries name. The choice of
// certificate stays crypto/tls's: the first that suits the request.
func presenting(cfg *tls.Config, sent *bool) *tls.Config {
	if len(cfg.Certificates) == 0 && cfg.GetClientCertificate == nil {
		return cfg
	}
	own, certs := cfg.GetClientCertificate, cfg.Certificates
	cfg = cfg.Clone()
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if own != nil {
			c, err := own(cri)
			*sent = err == nil && c != nil && len(c.Certificate) > 0
			return c, err
		}
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				*sent = true
				return &certs[i], nil
			}
		}
		return new(tls.Certificate), nil
	}
	return cfg
}

func certRefused(address string, err error) error {
	return fmt.Errorf("%w: %s refused the client certificate (%v); give one that a CA it trusts signed, that is valid now and is meant for client authentication (--zk-cert, --zk-key)", ErrTLS, address, err)
}

// serverCertAdvice says what to do about a server certificate that did not
// verify: an expired one is the server's to renew (or the clock is off),
// a wrong name is in --zk or the certificate, an unknown authority is
// --zk-ca's.
func serverCertAdvice(err error) string {
	var inv x509.CertificateInvalidError
	var host x509.HostnameError
	switch {
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return "the server's certificate is not valid now: renew it on the server, or check this host's clock"
	case errors.As(err, &host):
		return "the server's certificate does not name the address given: give --zk the name it carries, or a certificate that names the address"
	}
	return "give the CA that signed the server's certificate (--zk-ca)"
}

// refusedCert tells whether the server ended the handshake with an alert
// refusing the client's certificate: bad, unsupported, revoked, expired or
// unknown (Java's answer to an expired one, or one not meant for client
// authentication), signed by an authority it does not know, or missing.
// crypto/tls keeps the type of received alerts private, so their text is
// what it offers.
func refusedCert(err error) bool {
	m := err.Error()
	for _, alert := range []string{"bad certificate", "unsupported certificate", "revoked certificate", "expired certificate",
		"unknown certificate", "unknown certificate authority", "certificate required"} {
		if strings.Contains(m, "remote error: tls: "+alert) {
			return true
		}
	}
	return false
}

// sniffConn reads the first 12 bytes the server sends: the frame length,
// the protocol version and the negotiated timeout of the connect response.
//
// Under TLS 1.3 the client's side of the handshake ends before the server
// has checked the client's certificate: a refusal arrives as an alert on
// this first read instead. It is reported as the handshake's would be,
// not left to look like a server that never answered.
//
// It also bounds the wait for that response (answerBy): the client waits
// ten times its receive timeout for it, over a minute with a 10s session,
// and a member that accepts connections but does not answer (frozen,
// stalled, cut off behind a proxy) would hold it there while the members
// that answer go untried and the caller's connect timeout runs out.
type sniffConn struct {
	net.Conn
	r        *bufio.Reader
	s        *Session
	address  string
	buf      []byte
	done     bool
	answered atomic.Bool // done, for SetReadDeadline
	answerBy time.Time
	plain    bool    // no TLS
	answers  answers // see Session.Answered
}

// Write writes one request (the client writes each in one call).
func (c *sniffConn) Write(p []byte) (int, error) {
	c.answers.written(p)
	n, err := c.Conn.Write(p)
	if err == nil {
		c.s.writes.wrote(p)
	}
	return n, err
}

// answerWait is how long a server has to answer the connect request
// before the client tries the next: a live server answers within
// milliseconds, a loaded one within a second or two.
const answerWait = 2 * time.Second

// SetReadDeadline keeps a deadline no later than answerBy until the
// connect response has come.
func (c *sniffConn) SetReadDeadline(t time.Time) error {
	if !c.answered.Load() && !c.answerBy.IsZero() && (t.IsZero() || t.After(c.answerBy)) {
		t = c.answerBy
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.answers.read(p[:n])
	switch {
	case err == nil || len(c.buf) > 0 || n > 0:
	case refusedCert(err):
		c.s.dialFailed(c.address, certRefused(c.address, err))
	case c.plain && errors.Is(err, io.EOF):
		// A secureClientPort closes on a plain connect request; so does a
		// server going down, and a member of an ensemble that has lost its
		// quorum (it serves no session then), hence "if".
		c.s.dialFailed(c.address, fmt.Errorf("%s closed the connection before answering the ZooKeeper handshake: it may be a member of an ensemble that has lost its quorum (a majority of its servers down or cut off; it serves no session until they are back), or a server going down; if it is a secureClientPort, give --zk-tls (and --zk-ca)", c.address))
	}
	if !c.done && n > 0 {
		need := 12 - len(c.buf)
		c.buf = append(c.buf, p[:min(n, need)]...)
		if len(c.buf) >= 12 {
			c.done = true
			c.answered.Store(true)
			if to := int32(binary.BigEndian.Uint32(c.buf[8:12])); to > 0 {
				c.s.granted.Store(int64(to))
			}
		}
	}
	return n, err
}
