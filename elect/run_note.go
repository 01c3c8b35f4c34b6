package elect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// A run note is an ephemeral node, run-<session id in hex>-<group hash in
// hex>-cmd (and -<count in hex> before -cmd from a session's second note
// on), that a runner (`herald run`, `herald lock`) keeps under the
// session root while the command it started for a group may run
// (MarkRunning): from just before the command starts until it has surely
// stopped (a release, RecordStopped), or until its session ends, which
// its watchdog makes sure comes only after the command was stopped.
//
// It is the one trace of an owner that survives its group. A deleteall of
// a group (or the group deleted and made again) takes every queue node,
// mark and office with it, so the group's next first node looks like a
// brand-new group's, with nobody before it; but an owner frozen while its
// node went (SIGSTOP, a paused VM) runs its command until its watchdog
// kills it, most of a session timeout later. A new copy's command then
// ran beside it, for 2.7 s with 6 s sessions (found by an adversarial
// test). The run note, outside the group, is still there: a runner that
// would start because nobody came before it first looks for another
// session's note on its group, and waits until that note goes or its
// bound ends (see runNoteBeside).
//
// The name ends in letters, as a session node's does, so no recipe and no
// discovery takes it for a queue node.

// runNoteName is session's n-th run note (from 1), for group. Each note
// has a name of its own: a note whose deletion failed is deleted again in
// the background, and under a shared name that deletion could take the
// note of the session's next tenure in the group, leaving its command
// unnoted. The first note has no count, as every note had before there
// was one: a herald that old, sharing the group during an upgrade, reads
// the first note of each session, which is most runners' only one.
func runNoteName(session int64, group string, n uint32) string {
	if n <= 1 {
		return fmt.Sprintf("run-%016x-%016x-cmd", uint64(session), groupHash(group))
	}
	return fmt.Sprintf("run-%016x-%016x-%x-cmd", uint64(session), groupHash(group), n)
}

// groupHash names a group in a run note: the path may be longer than a
// node's name should be. Two groups with one hash make a runner wait for
// the other group's command too, never less.
func groupHash(group string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(group))
	return h.Sum64()
}

// IsRunNoteName reports whether n is named as a run note: with the
// session nodes, what a session root holds.
func IsRunNoteName(n string) bool {
	_, _, ok := parseRunNote(n)
	return ok
}

// parseRunNote reads a run note's name.
func parseRunNote(n string) (session int64, group uint64, ok bool) {
	rest, ok1 := strings.CutPrefix(n, "run-")
	rest, ok2 := strings.CutSuffix(rest, "-cmd")
	f := strings.Split(rest, "-")
	if len(f) == 2 {
		f = append(f, "1") // a session's first note (see runNoteName)
	}
	if !ok1 || !ok2 || len(f) != 3 || len(f[0]) != 16 || len(f[1]) != 16 || len(f[2]) == 0 || len(f[2]) > 8 {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(f[0], 16, 64)
	g, err2 := strconv.ParseUint(f[1], 16, 64)
	_, err3 := strconv.ParseUint(f[2], 16, 32)
	return int64(s), g, err1 == nil && err2 == nil && err3 == nil
}

// MarkRunning notes, under the session root, that this owner's work for
// its group may run from now on (see the run notes above): `herald run`
// and `herald lock` call it just before they start their command. A
// release, a resignation and RecordStopped remove the note, as does the
// session's end. It does nothing without ProveSessionEnd or a session
// root, or when the work is noted already. An error (the root's ACL refuses the note, the connection lost)
// leaves the work unnoted: a copy that joins the group after a deleteall
// of it would not wait for this owner's work.
func (h *Handle) MarkRunning(ctx context.Context) error {
	q := h.q
	root := q.o.sessionRoot
	if !q.o.sessionProof || root == "" || h.runNote.Load() != nil {
		return nil
	}
	p := root + "/" + runNoteName(q.s.ID(), q.parent, q.s.notes.Add(1))
	data, _ := json.Marshal(sessionNote{Herald: 1, Group: q.parent, TimeoutMS: q.s.Timeout().Milliseconds()})
	acl := noteACL(q.o.acl)
	deleted := fmt.Errorf("elect: the session root %s keeps being deleted: %w", root, zk.ErrNoNode)
	why := deleted
	for try := 0; try < 3; try++ {
		_, err := call(ctx, func() (string, error) { return q.s.Conn().Create(p, data, zk.FlagEphemeral, acl) })
		if errors.Is(err, zk.ErrNodeExists) {
			var ours bool
			if ours, err = h.noteIsOurs(ctx, p); err == nil && !ours {
				// Another session made it under our name first (anyone may
				// create under the root): a note it could delete at will
				// is no note of ours. Take the next name.
				why = fmt.Errorf("elect: noting the command under the session root %s: another session holds our note's name, %s", root, path.Base(p))
				p = root + "/" + runNoteName(q.s.ID(), q.parent, q.s.notes.Add(1))
				continue
			}
		}
		switch {
		case err == nil:
			h.runNote.Store(&p)
			q.checkSessionRoot(ctx, root)
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := makeRoot(ctx, q.s.Conn(), root, q.o.acl, q.s.digestACL); err != nil {
				return fmt.Errorf("elect: noting the command under the session root %s: %w", root, err)
			}
			why = deleted
		case errors.Is(err, zk.ErrNoAuth):
			return fmt.Errorf("elect: noting the command under the session root: %w", q.refusedBy(ctx, root, err))
		default:
			return fmt.Errorf("elect: noting the command under the session root %s: %w", root, err)
		}
	}
	return why
}

// noteIsOurs reports whether the run note at p, which a create found
// there, is our session's: a create whose reply was lost, rather than
// another session's node under our note's name.
func (h *Handle) noteIsOurs(ctx context.Context, p string) (bool, error) {
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := h.q.s.Conn().Exists(p)
		return st, err
	})
	if err != nil {
		return false, err
	}
	return st != nil && st.EphemeralOwner == h.q.s.ID(), nil
}

// noteACL is a run note's ACL: acl, with READ for everyone. The next copy
// reads the note for how long its owner's command may run; one it could
// not read (an ACL chosen without READ for others) left it waiting only
// its own, shorter bound, and its command ran 7.4 s beside a frozen 20 s
// owner's (found by an adversarial test). The note holds only its
// session's timeout and its group's path.
func noteACL(acl []zk.ACL) []zk.ACL { return withAnyone(acl, zk.PermRead) }

// RunNote is the path of our run note while we keep one (MarkRunning),
// or "". herald run and herald lock's watchdog hand it to the releaser of
// a runner that died, which deletes it once the command is gone.
func (h *Handle) RunNote() string {
	if p := h.runNote.Load(); p != nil {
		return *p
	}
	return ""
}

// DropRunNote deletes, from another session, the run note at p of a
// runner that died: herald run and herald lock's watchdog has the
// releaser call it once the dead runner's command and what it started are
// gone. Left to the dead session's expiry, the note would keep a copy that
// joins the group after a deleteall waiting for a command that is no
// more. A note already gone is no error; p must name a run note.
func DropRunNote(ctx context.Context, s *Session, p string) error {
	if !IsRunNoteName(path.Base(p)) {
		return fmt.Errorf("elect: %s is not a run note", p)
	}
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, s.Conn().Delete(p, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// unmarkRunning removes our run note, if we made one: the work it noted
// has stopped. Where the deletion fails it goes on in the background
// until it succeeds or the session ends, as a release's does.
func (h *Handle) unmarkRunning(ctx context.Context) {
	p := h.runNote.Swap(nil)
	if p == nil {
		return
	}
	del := func(ctx context.Context) error {
		_, err := call(ctx, func() (struct{}, error) { return struct{}{}, h.q.s.Conn().Delete(*p, -1) })
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	}
	if del(ctx) == nil || h.q.s.gone() != nil {
		return
	}
	h.q.s.background(func() {
		bctx, cancel := context.WithTimeout(context.Background(), h.q.s.Timeout()*3)
		defer cancel()
		for bctx.Err() == nil && h.q.s.gone() == nil && del(bctx) != nil {
			select {
			case <-bctx.Done():
			case <-time.After(h.q.s.Timeout() / 6):
			}
		}
	})
}

// runNoteBeside reports whether the session root holds another session's
// run note on our group (see the run notes above), with watch watching
// it. Such a note with no node of its session in the group is an owner
// whose node went by someone's hand, with its group, while its command
// may still run. The note's timeout counts as a session node's does
// (LongestTimeoutSeen). A root that is missing holds no note; one this
// identity may not list is warned of and taken to hold none (the notes
// cannot be read, now or later).
func (h *Handle) runNoteBeside(ctx context.Context, watch bool) (bool, <-chan zk.Event, error) {
	q := h.q
	root := q.o.sessionRoot
	if !q.o.sessionProof || root == "" {
		return false, nil, nil
	}
	c := q.s.Conn()
	names, err := call(ctx, func() ([]string, error) {
		n, _, err := c.Children(root)
		return n, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil, nil
	case errors.Is(err, zk.ErrNoAuth):
		q.s.log.Warn("cannot list the session root, to learn whether a command of this group's last owner may still run after its group was deleted (a deleteall): starting without that check; give every copy READ on the session root",
			"root", root, "group", q.parent)
		return false, nil, nil
	case err != nil:
		return false, nil, err
	}
	want := groupHash(q.parent)
	for _, n := range names {
		if sid, gh, ok := parseRunNote(n); !ok || gh != want || sid == q.s.ID() {
			continue
		}
		there, ch, err := h.readRunNote(ctx, root+"/"+n, watch)
		if there {
			// In a root open to all (an older herald's) anyone may have
			// planted it, with a timeout of weeks: say so before we wait.
			q.checkSessionRoot(ctx, root)
		}
		if err != nil || there {
			return there, ch, err
		}
	}
	return false, nil, nil
}

// readRunNote reads the run note at p for its timeout, with watch
// watching it; a note this identity may not read is only watched.
func (h *Handle) readRunNote(ctx context.Context, p string, watch bool) (bool, <-chan zk.Event, error) {
	c := h.q.s.Conn()
	r, err := readNode(ctx, c, p, watch)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil, nil
	case errors.Is(err, zk.ErrNoAuth):
		type look struct {
			there bool
			ch    <-chan zk.Event
		}
		l, err := call(ctx, func() (look, error) {
			if !watch {
				there, _, err := c.Exists(p)
				return look{there: there}, err
			}
			there, _, ch, err := c.ExistsW(p)
			return look{there, ch}, err
		})
		return l.there, l.ch, err
	case err != nil:
		return false, nil, err
	}
	if d := timeoutIn(r.data); d > 0 {
		h.q.s.noteTimeout(p, d)
	}
	return true, r.ch, nil
}

// nobodyBefore is lookAtPredecessor's answer where nobody can have owned
// before the predecessor (before our node, when there is none): released,
// vouching for every owner before, unless another session's run note on
// our group shows an owner whose node went with its group while its
// command may still run; then not released, with a watch on that note.
func (h *Handle) nobodyBefore(ctx context.Context, watch bool) (released, vouched, ended bool, held time.Duration, _ <-chan zk.Event, _ error) {
	if runs, ch, err := h.runsBeside(ctx, watch); runs || err != nil {
		return false, false, false, 0, ch, err
	}
	return true, true, false, 0, nil, nil
}

// runsBeside is runNoteBeside, remembered for RunsBeside.
func (h *Handle) runsBeside(ctx context.Context, watch bool) (bool, <-chan zk.Event, error) {
	runs, ch, err := h.runNoteBeside(ctx, watch)
	h.runBeside.Store(runs)
	return runs, ch, err
}

// RunsBeside reports whether the last PredecessorReleased (or
// PredecessorReleasedW) that answered false did so because another
// session's runner noted a command for our group that may still run,
// though none of its nodes is in the group any more (see MarkRunning).
func (h *Handle) RunsBeside() bool { return h.runBeside.Load() }
