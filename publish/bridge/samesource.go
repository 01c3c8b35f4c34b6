package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// ErrDuplicateSource is returned by Run when another live bridge has the
// same source: one campaigning at this bridge's HA path, or one holding
// the source's claim (see claimSource). Readers keep one
// heartbeat per source, so two bridges of one name would overwrite each
// other's: a standby's heartbeat would say the active's values are not
// being published, a dead bridge's would be taken for alive, and two
// bridges that observe different groups would each say the other's are
// not observed.
var ErrDuplicateSource = errors.New("bridge: another bridge has the same source")

// SourcesRoot is where every bridge claims its source: an
// ephemeral node named for the source (escaped), which a second bridge of
// the same source finds there.
const SourcesRoot = "/herald/sources"

// sourceClaim is the data of a source's claim: who holds it.
type sourceClaim struct {
	Source string    `json:"source"`
	Host   string    `json:"host,omitempty"`
	PID    int       `json:"pid"`
	Since  time.Time `json:"since"`
	// TimeoutMS is the holder's session timeout: a holder that died is
	// gone within it.
	TimeoutMS int64 `json:"timeout_ms"`
}

// claimSource claims this bridge's source for the session s (with HA
// too: checkSource sees the candidates of one election, not a bridge of
// the same source in another shard's election, another HA election or
// none, which both wrote the source's heartbeats): it creates the
// source's ephemeral node under SourcesRoot. A node there of another
// session is either this bridge's previous process, whose session the
// server has not expired yet (a restart after a crash), or another bridge
// of the same name: as checkSource, it waits for it up to twice the
// longer of the two session timeouts (the holder's is in its claim), then
// stops the bridge. The bridge publishes meanwhile,
// so a restarted bridge loses no time. A claim herald may not make (the
// ensemble's ACL) only costs the check, and is said once.
func (b *Bridge) claimSource(ctx context.Context, s *elect.Session) {
	node := SourcesRoot + "/" + url.PathEscape(b.cfg.Source)
	host, _ := os.Hostname()
	data, _ := json.Marshal(sourceClaim{Source: b.cfg.Source, Host: host, PID: os.Getpid(), Since: time.Now().UTC(), TimeoutMS: s.Timeout().Milliseconds()})
	start, wait := time.Now(), 2*max(b.cfg.SessionTimeout, s.Timeout())
	c := s.Conn()
	for tries := 0; ctx.Err() == nil && tries < 100; tries++ {
		_, err := c.Create(node, data, zk.FlagEphemeral, s.DefaultACL())
		switch {
		case err == nil:
			b.checkSourcesRoot(ctx, s)
			return // held for as long as the session lives
		case errors.Is(err, zk.ErrNoNode):
			if err := makeSourcesRoot(s); err != nil {
				b.noClaim(err)
				return
			}
			continue
		case errors.Is(err, zk.ErrNoAuth):
			b.noClaim(elect.RootRefused(ctx, s, SourcesRoot, err))
			return
		case !errors.Is(err, zk.ErrNodeExists):
			b.noClaim(err)
			return
		}
		held, st, ch, err := c.GetW(node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // gone meanwhile
		case err != nil:
			b.noClaim(err)
			return
		case st.EphemeralOwner == s.ID():
			return // ours: a create whose reply was lost
		case st.EphemeralOwner == 0:
			b.noClaim(fmt.Errorf("%s is a persistent node, which no bridge made; delete it to have sources claimed", node))
			return
		}
		var other sourceClaim
		_ = json.Unmarshal(held, &other)
		wait = max(wait, 2*other.timeout())
		if time.Since(start) >= wait {
			b.fail(other.refusal(node, b.cfg.Source, st.EphemeralOwner, wait))
			return
		}
		t := time.NewTimer(wait - time.Since(start))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// checkSourcesRoot warns where the sources root, or /herald above it,
// lets anyone create (see elect.CheckRoot), or where that could not be
// checked. Not where ctx ended meanwhile: the session is gone, and its
// successor's claim checks again, or the bridge stops; the warning that
// the check could not be made came at every such end.
func (b *Bridge) checkSourcesRoot(ctx context.Context, s *elect.Session) {
	err := elect.CheckRoot(ctx, s, SourcesRoot)
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, elect.ErrRootUnchecked):
		b.log.Warn("whether the sources root lets anyone create is unchecked: its ACL could not be read; a client without credentials may claim a source first there if it does", "err", err)
	case err != nil:
		b.log.Warn("the sources root lets anyone create: a client without credentials may claim a source first and stop its bridge as a duplicate", "err", err)
	}
}

// makeSourcesRoot creates SourcesRoot (see elect.MakeRoot): a session
// whose nodes admit no one else to write (digest credentials, or an
// --zk-acl that says so) gives the root its own ACL, as herald's parents
// take it (elect.ParentACL), without CREATE for anyone: anyone able to
// create there could claim a bridge's source (its name is public) before
// it, from a session of its own, and stop the bridge as a duplicate. A
// session open to all keeps the root open to all, as before.
func makeSourcesRoot(s *elect.Session) error { return elect.MakeRoot(s, SourcesRoot) }

// timeout is the session timeout the claim carries, 0 for none or one no
// session can have (ZooKeeper carries it in 32 bits of milliseconds, as
// elect's session nodes do): a timeout_ms written by hand made a bridge
// of the same source wait for weeks before it refused, or overflowed.
func (c sourceClaim) timeout() time.Duration {
	if c.TimeoutMS <= 0 || c.TimeoutMS > math.MaxInt32 {
		return 0
	}
	return time.Duration(c.TimeoutMS) * time.Millisecond
}

// refusal is the error of a bridge named source that found node held by
// the claim c of session owner for wait.
func (c sourceClaim) refusal(node, source string, owner int64, wait time.Duration) error {
	bogus := ""
	if c.TimeoutMS != 0 && c.timeout() == 0 {
		bogus = fmt.Sprintf("; its claim's timeout_ms, %d, is none a ZooKeeper session can have (written by hand?), so this bridge's own timeout was taken", c.TimeoutMS)
	}
	return fmt.Errorf("%w: %s is held by another live bridge named %q (host %q, pid %d, since %s; session 0x%x), which stayed longer than two session timeouts (%v)%s; give each bridge its own --source",
		ErrDuplicateSource, node, source, c.Host, c.PID, c.Since.Format(time.RFC3339), uint64(owner), wait, bogus)
}

// noClaim says, once, that the source could not be claimed.
func (b *Bridge) noClaim(err error) {
	if b.claimWarned.CompareAndSwap(false, true) {
		b.log.Info("cannot claim this bridge's source in ZooKeeper, so a second bridge of the same --source would go unnoticed", "root", SourcesRoot, "err", err)
	}
}

// checkSource runs once this bridge's candidate, node, joined the HA
// election. A candidate that came before it, of another session, with the
// same source is either this bridge's previous process, whose session the
// server has not expired yet (a restart after a crash), or another bridge
// of the same name. The first goes within its session timeout, so the
// check waits for it, up to twice the longer of this bridge's session
// timeout and the candidate's (as its claim of the source says, see
// claimedTimeout), before it refuses. Of two bridges of one name started
// together, the later one refuses; waiting costs nothing, as a candidate
// behind the other cannot lead before that one is gone.
func (b *Bridge) checkSource(ctx context.Context, s *elect.Session, node string) error {
	queued := time.Now()
	for {
		other, err := b.sameSourceBefore(ctx, s, node)
		if err != nil || other.Node == "" {
			return nil // unreadable now: the campaign says what is wrong
		}
		ok, _, ch, err := s.Conn().ExistsW(b.cfg.haPath() + "/" + other.Node)
		if err != nil {
			return nil
		}
		if !ok {
			continue // gone since the listing: list again
		}
		longest := 2 * max(b.cfg.SessionTimeout, b.claimedTimeout(s, other.Session))
		wait := time.Until(queued.Add(longest))
		if wait <= 0 {
			return fmt.Errorf("%w: candidate %s in %s is another live bridge named %q (it stayed longer than two session timeouts, %v); give each bridge its own --source",
				ErrDuplicateSource, other.Node, b.cfg.haPath(), b.cfg.Source, longest)
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

// claimedTimeout is the session timeout in the source's claim if session
// holds it, else 0. A bridge's previous process claimed its source with
// its own timeout: restarted with a shorter one, the bridge waited two of
// its own only, and stopped as a duplicate of the dead process it
// replaced, whose session the server had not expired yet.
func (b *Bridge) claimedTimeout(s *elect.Session, session int64) time.Duration {
	data, st, err := s.Conn().Get(SourcesRoot + "/" + url.PathEscape(b.cfg.Source))
	if err != nil || st.EphemeralOwner != session {
		return 0
	}
	var c sourceClaim
	_ = json.Unmarshal(data, &c)
	return c.timeout()
}

// sameSourceBefore returns the first candidate ahead of node whose
// participant has this bridge's source and another session (none: Node
// "").
// ReadGroup syncs first, so that a server behind the leader cannot hide
// a candidate created just before this one.
func (b *Bridge) sameSourceBefore(ctx context.Context, s *elect.Session, node string) (elect.Participant, error) {
	v, err := elect.ReadGroup(ctx, s, b.cfg.haPath())
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return elect.Participant{}, nil
		}
		return elect.Participant{}, err
	}
	for _, p := range v.Queue {
		if p.Node == node {
			return elect.Participant{}, nil
		}
		if p.ID == b.cfg.Source && p.Session != s.ID() && p.Suspect == "" {
			return p, nil
		}
	}
	return elect.Participant{}, nil
}
