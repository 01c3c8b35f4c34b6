package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkherald/herald/elect"
)

// loop opens sessions and runs each until ctx ends. It returns the HA
// handle still held when ctx ended (to resign after draining), or the error
// that kept the first session from opening.
func (b *Bridge) loop(ctx context.Context) (*elect.Handle, error) {
	first := true
	for {
		s, err := b.openSession(ctx, first)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, err
		}
		first = false
		h := b.runSession(ctx, s)
		if ctx.Err() != nil {
			return h, nil
		}
		b.markAll(GroupUnknown)
		b.log.Warn("ZooKeeper session lost; opening a new one and publishing every group's snapshot again",
			"session", fmt.Sprintf("0x%x", uint64(s.ID())), "err", s.Err())
		_ = s.Close()
	}
}

// sessionCtx is cancelled when ctx ends or s is lost.
func sessionCtx(ctx context.Context, s *elect.Session) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-sctx.Done():
		}
	}()
	return sctx, cancel
}

// runSession observes (without HA) or campaigns and observes while leading
// (with HA), until ctx ends or the session is lost.
func (b *Bridge) runSession(ctx context.Context, s *elect.Session) *elect.Handle {
	sctx, cancel := sessionCtx(ctx, s)
	defer cancel()
	go b.logStates(sctx, s)
	if b.cfg.HAPath == "" {
		b.observe(sctx, s) // sets the role to active
		return nil
	}
	// Leadership ends the moment the connection is suspended: a bridge that
	// may be cut off must stop publishing before a standby takes over.
	el, err := elect.NewElection(s, b.cfg.HAPath, elect.CreateParents(), elect.WithLossPolicy(elect.LoseOnSuspend))
	if err != nil { // the path was validated: this is a bug, say so loudly
		b.log.Error("cannot set up the HA election", "path", b.cfg.HAPath, "err", err)
		<-sctx.Done()
		return nil
	}
	bo := b.backoff(200*time.Millisecond, b.cfg.MaxRetryWait)
	for sctx.Err() == nil {
		b.setRole(RoleStandby)
		b.markAll("")
		h, err := el.Campaign(sctx, b.cfg.Source)
		if err != nil {
			if sctx.Err() != nil || errors.Is(err, elect.ErrSessionLost) || errors.Is(err, elect.ErrSessionClosed) {
				break
			}
			wait := bo.NextBackOff()
			b.log.Warn("HA campaign failed, retrying", "path", b.cfg.HAPath, "in", wait.Round(time.Millisecond), "err", err)
			sleep(sctx, wait)
			awaitConnected(sctx, s)
			continue
		}
		bo.Reset()
		b.log.Info("won the HA election: publishing every group's snapshot, then changes",
			"path", b.cfg.HAPath, "node", h.Node(), "term", h.Term())
		actx, acancel := context.WithCancel(sctx)
		go func() {
			select {
			case <-h.Done():
				acancel()
			case <-actx.Done():
			}
		}()
		b.observe(actx, s)
		acancel()
		if ctx.Err() != nil && h.Held() {
			return h // resigned after draining
		}
		b.log.Warn("HA leadership lost: stopped publishing", "path", b.cfg.HAPath, "reason", h.Reason(), "err", h.Err())
		if ctx.Err() != nil {
			break
		}
		awaitConnected(sctx, s)
	}
	b.setRole(RoleStandby)
	b.markAll("")
	return nil
}

// logStates logs the session's connection changes, once per change rather
// than once per group.
func (b *Bridge) logStates(ctx context.Context, s *elect.Session) {
	st, ch := s.State()
	for {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		prev := st
		st, ch = s.State()
		switch {
		case st == elect.StateSuspended:
			b.log.Warn("ZooKeeper connection lost: observed groups are unknown and nothing is published for them until it is back",
				"session", fmt.Sprintf("0x%x", uint64(s.ID())), "groups", len(b.Status().Groups))
		case st == elect.StateConnected && prev == elect.StateSuspended:
			b.log.Info("ZooKeeper connection back: publishing every group's snapshot again", "session", fmt.Sprintf("0x%x", uint64(s.ID())))
		}
	}
}
