package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// ErrDuplicateSource is returned by Run when another live bridge
// campaigns at this bridge's HA path under the same source. Readers keep
// one heartbeat per source, so two bridges of one name would overwrite
// each other's: a standby's heartbeat would say the active's values are
// not being published, and a dead active's would be taken for alive.
var ErrDuplicateSource = errors.New("bridge: another bridge of this HA election has the same source")

// checkSource runs once this bridge's candidate, node, joined the HA
// election. A candidate that came before it, of another session, with the
// same source is either this bridge's previous process, whose session the
// server has not expired yet (a restart after a crash), or another bridge
// of the same name. The first goes within its session timeout, so the
// check waits for it, up to twice this bridge's own session timeout,
// before it refuses. Of two bridges of one name started together, the
// later one refuses; waiting costs nothing, as a candidate behind the
// other cannot lead before that one is gone.
func (b *Bridge) checkSource(ctx context.Context, s *elect.Session, node string) error {
	deadline := time.Now().Add(2 * b.cfg.SessionTimeout)
	for {
		other, err := b.sameSourceBefore(ctx, s, node)
		if err != nil || other == "" {
			return nil // unreadable now: the campaign says what is wrong
		}
		ok, _, ch, err := s.Conn().ExistsW(b.cfg.haPath() + "/" + other)
		if err != nil {
			return nil
		}
		if !ok {
			continue // gone since the listing: list again
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("%w: candidate %s in %s is another live bridge named %q (it stayed longer than two session timeouts, %v); give each bridge its own --source",
				ErrDuplicateSource, other, b.cfg.haPath(), b.cfg.Source, 2*b.cfg.SessionTimeout)
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
		t.Stop()
	}
}

// sameSourceBefore returns the first candidate ahead of node whose
// participant has this bridge's source and another session ("" if none).
// ReadGroup syncs first, so that a server behind the leader cannot hide
// a candidate created just before this one.
func (b *Bridge) sameSourceBefore(ctx context.Context, s *elect.Session, node string) (string, error) {
	v, err := elect.ReadGroup(ctx, s, b.cfg.haPath())
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return "", nil
		}
		return "", err
	}
	for _, p := range v.Queue {
		if p.Node == node {
			return "", nil
		}
		if p.ID == b.cfg.Source && p.Session != s.ID() && p.Suspect == "" {
			return p.Node, nil
		}
	}
	return "", nil
}
