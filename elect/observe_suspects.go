package elect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// suspicion says why p cannot be a participant as the queue (children)
// shows it, "" when it can; the verdict is kept while the node exists. A node that is
// not ephemeral belongs to no session: no participant holds it, and it
// never goes by itself. A node below the owner that was not there before
// was not made by a sequential create (those only grow): someone created
// it under a chosen name.
func (r *reader) suspicion(p Participant, children []string) string {
	if s, ok := r.suspects[p.Node]; ok {
		return s.why
	}
	why, noSession := "", p.Session == 0
	switch {
	case noSession:
		why = "not ephemeral: no session holds it and it never goes away by itself; someone created it by hand"
	case r.lastOwner != "" && p.Node != r.lastOwner && SeqLess(p.Sequence, r.lastOwnerSeq) && contains(children, r.lastOwner) && !contains(r.lastChildren, p.Node):
		why = "appeared below the owner " + r.lastOwner + ": a sequential create never sorts below an existing node; someone created it under a chosen name"
	}
	if why != "" {
		if r.suspects == nil {
			r.suspects = map[string]suspectNode{}
		}
		r.suspects[p.Node] = suspectNode{why: why, czxid: p.Czxid, noSession: noSession}
	}
	return why
}

// noSequence says why a node whose name ends in more than ten digits is
// no queue node, "" for any other: ZooKeeper appends exactly ten
// characters to a sequential node's name, so the last ten of a longer run
// are part of a number the name was given, not a sequence. HBase names its
// region servers and backup masters "host,port,startcode" with a start
// code in milliseconds: /hbase/rs read as a queue had a region server for
// its owner. Only observers judge so; participants still queue behind
// any name ending in a sequence, whoever made it.
func noSequence(name string) string {
	n := len(name) - len(strings.TrimRight(name, "0123456789"))
	if n <= 10 {
		return ""
	}
	return fmt.Sprintf("its name ends in %d digits, more than the ten ZooKeeper appends: no sequential create made it; a registration (as HBase's host,port,startcode) or a name chosen by hand, not a queue node", n)
}

// youngerThanNext is suspicion without a last read to compare with (a
// first snapshot, a one-shot read): sequential creates give a group's
// nodes their sequences in the order of their czxids, so a node younger
// than the participant that sorts after it was created under a chosen
// name, after that one (which may have owned since). Its verdict is kept like
// suspicion's; "" when next is gone or older.
func (r *reader) youngerThanNext(ctx context.Context, p Participant, next entry) (string, error) {
	st, err := call(ctx, func() (*zk.Stat, error) {
		_, st, err := r.conn.Exists(r.group + "/" + next.name)
		return st, err
	})
	// A next node no session holds is no participant: it, not p, is the
	// odd one (a leftover, a restore's copy), and suspect itself.
	if err != nil || st == nil || st.Czxid == 0 || st.EphemeralOwner == 0 || st.Czxid >= p.Czxid {
		return "", err
	}
	why := "younger than " + next.name + ", which sorts after it: a sequential create never sorts below an existing node; someone created it under a chosen name"
	if r.suspects == nil {
		r.suspects = map[string]suspectNode{}
	}
	r.suspects[p.Node] = suspectNode{why: why, czxid: p.Czxid}
	return why, nil
}

// suspectNode is the verdict on a suspect node and its czxid, kept while
// the node exists.
type suspectNode struct {
	why       string
	czxid     int64
	noSession bool
}

// hazardOf is hazardBy over the queue's nodes that a session may hold: a
// node no session holds (made by hand) is no client, whatever its name
// says. The node a hazard names is read once to tell, and its verdict
// kept while it exists (clients, suspects); one found suspect is marked so
// in queue.
func (r *reader) hazardOf(ctx context.Context, es []entry, children []string, cversion int32, queue []Participant) (why, node string, err error) {
	if why, node = hazardBy(es); why == "" {
		return r.outsideHazard(ctx, es, children, cversion)
	}
	gone := map[string]bool{}
	for range len(es) + 1 { // each pass rules out one node
		live := slices.DeleteFunc(slices.Clone(es), func(e entry) bool { return gone[e.name] || r.suspects[e.name].noSession })
		why, node = hazardBy(live)
		if why == "" { // every misreading node ruled out: the queue is as if it held none
			return r.outsideHazard(ctx, es, children, cversion)
		}
		if r.clients[node] {
			return why, node, nil
		}
		i := slices.IndexFunc(es, func(e entry) bool { return e.name == node })
		p, _, err := r.details(ctx, es[i], false)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			gone[node] = true // left since the listing; the next one shows it
			continue
		case err != nil:
			return "", "", err
		case p.Session != 0:
			if r.clients == nil {
				r.clients = map[string]bool{}
			}
			r.clients[node] = true
			return why, node, nil
		}
		verdict := r.suspicion(p, children)
		if i := slices.IndexFunc(queue, func(q Participant) bool { return q.Node == node }); i >= 0 {
			queue[i].Suspect = verdict
		}
	}
	return why, node, nil
}

// outsideHazard says why a semaphore that holds outside the queue
// (outsideQueue: a Kazoo lease a session holds, Curator's leases parent)
// and a herald node of the queue may both believe they own: herald
// refuses to wait beside it, but a herald owner keeps owning until its
// guard lists the group. No name of the queue is read, so hazardBy does
// not see it; the child is read once, as hazardOf reads a client's node,
// and again once the group's child version (cversion, the listing's)
// moved since the last read.
func (r *reader) outsideHazard(ctx context.Context, es []entry, children []string, cversion int32) (why, node string, err error) {
	if len(children) == len(es) || !slices.ContainsFunc(children, outsideQueue) {
		return "", "", nil // the usual case: every child a queue node, nothing to read
	}
	h := slices.IndexFunc(es, func(e entry) bool { info, _ := ParseName(e.name); return info.Convention == "herald" })
	if h < 0 {
		return "", "", nil
	}
	if cversion != r.rel.cversion {
		// A child deleted and made again under the same name between two
		// listings shows only in the child version: kept by name, a
		// persistent node read as no client's hid the ephemeral one made
		// in its place (in one multi, or between two watches) for as long
		// as the name stayed listed. r.rel is the last read's; the same
		// child version is the same children.
		clear(r.outside)
	}
	for _, c := range children {
		client, known := r.outside[c]
		if !known && outsideQueue(c) {
			var exists bool
			if exists, client, err = clientHolds(ctx, r.conn, r.group+"/"+c); err != nil {
				return "", "", err
			}
			if r.outside == nil {
				r.outside = map[string]bool{}
			}
			// A name gone may come back, a client's: read it then. A
			// Kazoo lease runs out by the clock, not by a change of the
			// group: read at each listing.
			if exists && c != kazooLeaseHolder {
				r.outside[c] = client // kept while the node is listed
			}
		}
		if client {
			n, _, _ := needOf(c)
			return fmt.Sprintf("%s holds outside the queue beside herald's node %s, so both may believe they own; no name of herald's can be read by it: give these clients groups of their own", n.client, es[h].name), c, nil
		}
	}
	return "", "", nil
}

// olderSuspect returns the index in below (the nodes that sort below p) of
// the first suspect node created before p, or -1. Every recipe lists its
// group after creating its node, so p's listing showed that node below it:
// p waits for its deletion, whatever the node's name claims. A suspect
// created after p (a name chosen to sort below it) may have come after p
// already owned, and is not taken to hold p up.
func olderSuspect(below []Participant, p Participant) int {
	for i, s := range below {
		if s.Suspect != "" && s.Czxid != 0 && p.Czxid != 0 && s.Czxid < p.Czxid {
			return i
		}
	}
	return -1
}

// forget drops the verdicts on nodes that are gone, and remembers the
// listing for the next read's "was it there before".
// sameGroup forgets what the reader keeps by node name (the owner's
// details and watch, the last owner and children, suspicions, the mark's
// last state) when the group node is not the one it was kept for: the
// group was deleted, and perhaps made again with the same names.
func (r *reader) sameGroup(got listing) {
	var czxid int64
	if !got.missing && got.stat != nil {
		czxid = got.stat.Czxid
	}
	if czxid == r.groupCzxid {
		return
	}
	if r.groupCzxid != 0 {
		r.owner, r.ownerW, r.lastOwner, r.lastChildren, r.suspects, r.clients, r.outside = nil, nil, "", nil, nil, nil, nil
		r.lastMzxid, r.lastVersion, r.lastOwnerSeq, r.rel = 0, 0, 0, releaseBase{}
	}
	r.groupCzxid = czxid
}

// remadeUnseen reads the suspect nodes again when the group's children
// changed more often since the last read than the names listed show (each
// create or delete moves the child version by one): a name may have been
// deleted and made again in between, and a persistent node made by hand,
// read as no participant's, replaced by a session's ephemeral node in one
// multi would stay suspect, its holder unreported, for as long as the name
// stayed listed. Only a verdict whose node was made again (another czxid)
// is dropped: a node that appeared below the owner is suspect only as it
// appears, and dropping every verdict at any unseen change (a waiter that
// came and went between two reads) made it the owner when judged again.
// Only groups with suspects pay, one read a suspect, after such a change.
func (r *reader) remadeUnseen(ctx context.Context, v *View) error {
	if len(r.suspects) == 0 || r.rel.children == nil {
		return nil
	}
	seen := setDiff(r.rel.children, v.children) + setDiff(v.children, r.rel.children) // as snapshotAfter counts
	if int64(v.Cversion-r.rel.cversion) == int64(seen) {
		return nil
	}
	for name, s := range r.suspects {
		if !contains(v.children, name) {
			continue // gone: forget drops it
		}
		st, err := call(ctx, func() (*zk.Stat, error) {
			_, st, err := r.conn.Exists(r.group + "/" + name)
			return st, err
		})
		if err != nil {
			return err
		}
		if st == nil || s.czxid == 0 || st.Czxid != s.czxid {
			delete(r.suspects, name) // made again, or gone since the listing
		}
	}
	return nil
}

func (r *reader) forget(es []entry) {
	r.lastChildren = r.lastChildren[:0]
	for _, e := range es {
		r.lastChildren = append(r.lastChildren, e.name)
	}
	for n := range r.suspects {
		if !contains(r.lastChildren, n) {
			delete(r.suspects, n)
		}
	}
	for n := range r.clients {
		if !contains(r.lastChildren, n) {
			delete(r.clients, n)
		}
	}
}
