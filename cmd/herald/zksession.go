package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/pemtls"
)

// openSession connects to ZooKeeper with the global flags. strict asks the
// servers for exactly --session-timeout (run and lock time their loss
// decisions by it); read-only commands accept whatever the servers grant.
func (a *app) openSession(ctx context.Context, strict bool) (*elect.Session, error) {
	servers, err := a.servers()
	if err != nil {
		return nil, err
	}
	opts := []elect.SessionOption{
		elect.WithConnectTimeout(a.connectTimeout),
		elect.WithLogger(a.log),
	}
	if a.sessionTimeout > 0 {
		opts = append(opts, elect.WithSessionTimeout(a.sessionTimeout))
	}
	if !strict {
		opts = append(opts, elect.AcceptNegotiatedTimeout())
	}
	auth, err := a.zkAuth()
	if err != nil {
		return nil, err
	}
	if auth != "" {
		opts = append(opts, elect.WithDigestAuth(auth))
	}
	more, err := a.zkSecurity()
	if err != nil {
		return nil, err
	}
	opts = append(opts, more...)
	s, err := elect.NewSession(ctx, servers, opts...)
	if err != nil {
		if ctx.Err() != nil { // a signal, not the servers: exit as a shell reports it
			return nil, interrupted(ctx, "interrupted while connecting to ZooKeeper")
		}
		return nil, fmt.Errorf("connect to ZooKeeper: %w", err)
	}
	return s, nil
}

// groupArg validates a group path given on the command line; a bad path is
// a usage error.
func groupArg(flag, p string) error {
	if err := elect.ValidatePath(p); err != nil {
		return usageErr("%s: %v", flag, err)
	}
	return nil
}

// zkAuth is the digest credentials from --zk-auth-file, else from
// HERALD_ZK_AUTH (user:password), else none.
func (a *app) zkAuth() (string, error) {
	v := os.Getenv("HERALD_ZK_AUTH")
	if a.zkAuthFile != "" {
		var err error
		if v, err = secretFromFile("--zk-auth-file", a.zkAuthFile); err != nil {
			return "", err
		}
	}
	if v == "" {
		return "", nil
	}
	if user, pw, ok := strings.Cut(v, ":"); !ok || user == "" || pw == "" {
		return "", usageErr("--zk-auth-file / HERALD_ZK_AUTH: want user:password, both non-empty")
	}
	return v, nil
}

// zkTLSConfig builds the TLS config --zk-tls, --zk-ca, --zk-cert and
// --zk-key ask for; nil when none is given.
func (a *app) zkTLSConfig() (*tls.Config, error) {
	if !a.zkTLS && a.zkCA == "" && a.zkCert == "" && a.zkKey == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if a.zkCA != "" {
		pool, err := pemtls.RootCAs(a.zkCA)
		if err != nil {
			return nil, usageErr("--zk-ca: %v", err)
		}
		cfg.RootCAs = pool
	}
	switch {
	case a.zkCert != "" && a.zkKey != "":
		get, err := pemtls.Reloading(a.zkCert, a.zkKey)
		if err != nil {
			return nil, usageErr("--zk-cert/--zk-key: %v", err)
		}
		cfg.GetClientCertificate = get // read again when renewed in place
	case a.zkCert != "" || a.zkKey != "":
		return nil, usageErr("--zk-cert and --zk-key go together: give both or neither")
	}
	return cfg, nil
}

// zkSecurity is the session options of the TLS and ACL flags (the ACL
// only for a command that creates nodes).
func (a *app) zkSecurity() ([]elect.SessionOption, error) {
	var opts []elect.SessionOption
	cfg, err := a.zkTLSConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, elect.WithTLS(cfg))
	}
	if a.zkACL != "" && a.createsNodes {
		acl, err := elect.ParseACL(a.zkACL)
		if err != nil {
			return nil, usageErr("--zk-acl: %v", err)
		}
		opts = append(opts, elect.WithDefaultACL(acl))
	}
	return opts, nil
}

// closeOwned closes a session that held a group, waiting first, for at
// most its timeout, for a connection that is down to come back: closing
// a connected session deletes its nodes at once, while one closed cut off
// leaves them, and with them the group owned by nobody alive, until the
// server expires it. The wait ends early when the session expires.
func (a *app) closeOwned(ctx context.Context, s *elect.Session) {
	st, _ := s.State()
	if st == elect.StateSuspended || st == elect.StateConnecting {
		a.log.Info("waiting for ZooKeeper to come back, so that our node goes now rather than when the session expires", "up to", s.Timeout())
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout())
		_ = s.AwaitConnected(ctx) // connected, expired, or out of time: close either way
		cancel()
	}
	a.closeSettled(ctx, s)
}

// closeSettled closes a session that was in a group once the work it
// still does in the background has finished, for at most settleWait,
// while it is connected: a give-up's note or a release's deletion that
// did not finish before the call that asked for it returned. Closed
// without it, the next copy may wait as for an owner deleted by hand.
//
// A session presumed lost after a whole timeout without an answer keeps
// its connection trying the servers (see elect.Session.Lingering), for at
// most its timeout more here: the servers of an ensemble that lost its
// quorum expire nothing, and give every session a whole timeout again
// once it is back, so closing it cut off would leave its node holding the
// group for that long after ZooKeeper answers again. That wait ends when
// ctx does (a signal: whoever stops herald wants it gone now; lock's
// --timeout).
func (a *app) closeSettled(ctx context.Context, s *elect.Session) {
	switch st, _ := s.State(); st {
	case elect.StateConnected:
		ctx, cancel := context.WithTimeout(context.Background(), settleWait)
		if s.Settle(ctx) != nil {
			a.log.Debug("closing with work still under way", "waited", settleWait)
		}
		cancel()
	case elect.StateLost:
		select {
		case <-s.Lingering():
		case <-ctx.Done():
		default:
			a.log.Info("session presumed lost: trying ZooKeeper a while longer, so that our node goes as soon as it answers (a signal ends the wait)", "up to", s.Timeout())
			wctx, cancel := context.WithTimeout(ctx, s.Timeout())
			select {
			case <-s.Lingering():
			case <-wctx.Done():
			}
			cancel()
		}
	}
	_ = s.Close()
}

// settleWait bounds closeSettled's wait: the work left is a few requests
// on a live connection.
const settleWait = 2 * time.Second

// reopenSession opens a new session for a participant that was in its group
// before (one whose session expired while it waited, or a run --rejoin
// campaigning again): ZooKeeper unreachable then is an outage to wait out,
// not a reason to give up. --connect-timeout bounds each attempt; the
// attempts go on, with backoff up to 30 s, until ctx ends (a signal, or
// lock --timeout), and only other errors (credentials, ACLs) end them.
// Before, a ZooKeeper outage a little longer than the session timeout
// made every hot standby exit 1 at once.
func (a *app) reopenSession(ctx context.Context) (*elect.Session, error) {
	bo := backoff.NewExponentialBackOff(backoff.WithInitialInterval(time.Second), backoff.WithMaxInterval(30*time.Second), backoff.WithMaxElapsedTime(0))
	since := time.Now()
	for attempt := 1; ; attempt++ {
		s, err := a.openSession(ctx, true)
		if err == nil || !errors.Is(err, elect.ErrUnreachable) || ctx.Err() != nil {
			if err == nil && attempt > 1 {
				a.log.Info("ZooKeeper reachable again: joining the group", "after", time.Since(since).Round(time.Second))
			}
			return s, err
		}
		wait := bo.NextBackOff()
		a.log.Warn("ZooKeeper still unreachable; trying again (stop with SIGTERM)", "attempt", attempt, "for", time.Since(since).Round(time.Second), "in", wait.Round(100*time.Millisecond), "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, interrupted(ctx, "interrupted while waiting for ZooKeeper")
		}
	}
}
