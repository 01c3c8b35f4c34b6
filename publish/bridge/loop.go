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
	var lost []*elect.Session // sessions presumed lost, their connections trying on
	defer func() {
		for _, s := range lost {
			_ = s.Close()
		}
	}()
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
		lost = closeWhenAnswered(lost, s)
	}
}

// closeWhenAnswered closes s, a session lost, once its connection is done
// trying the servers (elect.Session.Lingering), and returns lost with s
// and without those already closed. A session presumed lost after a whole
// timeout without an answer may not be lost to the servers: an ensemble
// without a quorum expires nothing, and a server that restarted, or the
// leader elected once the quorum is back, gives every session a whole
// timeout again. Its connection closes it as soon as the servers answer,
// which deletes its nodes (an HA candidate's, a source claim) at once;
// closed cut off, they held the bridges' election for that timeout, the
// standby and this bridge's own new candidate waiting behind them.
func closeWhenAnswered(lost []*elect.Session, s *elect.Session) []*elect.Session {
	kept := lost[:0]
	for _, l := range lost {
		select {
		case <-l.Lingering():
			_ = l.Close()
		default:
			kept = append(kept, l)
		}
	}
	go func() {
		<-s.Lingering()
		_ = s.Close()
	}()
	return append(kept, s)
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

// runSession observes (without HA) or observes and campaigns (with HA),
// until ctx ends or the session is lost. With HA the bridge observes the
// whole time: as a standby it holds what it sees, and when it wins it
// publishes that first (see replay.go).
func (b *Bridge) runSession(ctx context.Context, s *elect.Session) *elect.Handle {
	sctx, cancel := sessionCtx(ctx, s)
	defer cancel()
	go b.logStates(sctx, s)
	if b.cfg.HAPath == "" {
		go b.claimSource(sctx, s)
		b.startPublishing(sctx)
		b.observe(sctx, s, RoleActive)
		return nil
	}
	// Leadership ends the moment the connection is suspended: a bridge that
	// may be cut off must stop publishing before a standby takes over.
	if err := b.checkShards(sctx, s, 0); err != nil {
		b.fail(err)
		return nil
	}
	// checkSource sees this election only: a bridge of the same --source
	// in another shard's election, another HA election or none at all is
	// found by the claim.
	go b.claimSource(sctx, s)
	el, err := elect.NewElection(s, b.cfg.haPath(), elect.CreateParents(), elect.WithLossPolicy(elect.LoseOnSuspend),
		elect.OnQueued(func(node string) {
			b.setHAErr("")
			go func() {
				if err := b.checkSource(sctx, s, node); err != nil {
					b.fail(err)
				}
			}()
		}))
	if err != nil { // the path was validated: this is a bug, say so loudly
		b.log.Error("cannot set up the HA election", "path", b.cfg.haPath(), "err", err)
		<-sctx.Done()
		return nil
	}
	b.stopPublishing()
	b.setRole(RoleStandby)
	wait := b.startObserving(sctx, s)
	h := b.campaignLoop(ctx, sctx, s, el)
	cancel()
	wait()
	b.setRole(RoleStandby)
	return h
}

// campaignLoop campaigns, publishes while it leads and holds while it
// stands by, until sctx ends. It returns the handle still held when ctx
// ended (to resign after draining).
func (b *Bridge) campaignLoop(ctx, sctx context.Context, s *elect.Session, el *elect.Election) *elect.Handle {
	bo := b.backoff(200*time.Millisecond, b.cfg.MaxRetryWait)
	for sctx.Err() == nil {
		b.stopPublishing()
		b.setRole(RoleStandby)
		h, err := el.Campaign(sctx, b.cfg.Source)
		if err != nil {
			if sctx.Err() != nil || errors.Is(err, elect.ErrSessionLost) || errors.Is(err, elect.ErrSessionClosed) {
				break
			}
			b.setHAErr(err.Error())
			wait := bo.NextBackOff()
			b.log.Warn("HA campaign failed, retrying", "path", b.cfg.haPath(), "in", wait.Round(time.Millisecond), "err", err)
			sleep(sctx, wait)
			awaitConnected(sctx, s)
			continue
		}
		bo.Reset()
		// Bridges started beside this one with another shard count are
		// seen now at the latest: their elections exist before they lead.
		// Of two that started at the same moment, the later refuses.
		if err := b.checkShards(sctx, s, h.Term()); err != nil {
			b.fail(err)
			return h // resigned as Run stops
		}
		b.log.Info("won the HA election: publishing what was held while standing by, then changes",
			"path", b.cfg.haPath(), "node", h.Node(), "term", h.Term())
		b.startPublishing(sctx)
		b.setRole(RoleActive)
		select {
		case <-h.Done():
		case <-sctx.Done():
		}
		if ctx.Err() != nil && h.Held() {
			// Stopping, still the leader: what the sinks have still to
			// write is drained before the resign.
			b.holdForDrain()
			b.setRole(RoleStandby)
			go func() {
				// Deposed during the drain (its node deleted): it writes
				// no more, as any deposed bridge. After the resign this
				// drops what the drain left, which is nothing to write.
				<-h.Done()
				b.leading.Store(false)
				b.pipe.Pause()
			}()
			return h
		}
		b.stopPublishing()
		b.setRole(RoleStandby) // now, not after the resign below: it may wait for a server
		b.log.Warn("HA leadership lost: stopped publishing", "path", b.cfg.haPath(), "reason", h.Reason(), "err", h.Err())
		// A write begun before that (a slow Kafka produce, retried inside
		// its client) lands or fails before the standby may take over,
		// so that it never lands after the standby's newer ones.
		wctx, wcancel := context.WithTimeout(context.Background(), writesBound)
		if !b.pipe.AwaitWrites(wctx) {
			b.log.Warn("a sink's write begun before publishing stopped is still under way; handing over anyway: it may land after the next bridge's", "waited", writesBound)
		}
		wcancel()
		// Publishing has stopped, so the standby may take over now: a
		// handle lost to a suspension keeps its node until told so (or
		// for elect.GiveBackDelay).
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = h.Resign(rctx)
		cancel()
		if ctx.Err() != nil {
			break
		}
		awaitConnected(sctx, s)
	}
	b.stopPublishing()
	return nil
}

// writesBound bounds how long a bridge that lost its HA election waits
// for the writes under way to land before it hands the election over: a
// Kafka produce's timeout (10 s by default) and a retry's start.
const writesBound = 12 * time.Second

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
			observed, _ := b.groupCounts()
			b.log.Warn("ZooKeeper connection lost: observed groups are unknown and nothing is published for them until it is back",
				"session", fmt.Sprintf("0x%x", uint64(s.ID())), "groups", observed)
		case st == elect.StateConnected && prev == elect.StateSuspended:
			b.log.Info("ZooKeeper connection back: publishing every group's snapshot again", "session", fmt.Sprintf("0x%x", uint64(s.ID())))
		}
	}
}

// setHAErr records why the last HA campaign failed ("" once one joined).
func (b *Bridge) setHAErr(e string) {
	b.mu.Lock()
	b.haErr = e
	b.mu.Unlock()
}
