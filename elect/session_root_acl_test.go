package elect_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// lockUnder acquires a new lock at g on s, keeping its session node
// under root.
func lockUnder(t *testing.T, s *elect.Session, g, root string) *elect.Handle {
	t.Helper()
	l, err := elect.NewLock(s, g, elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(root))
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSessionRootMadeWithCredentialsAdmitsNoOneElse: a session root made
// by a copy with digest credentials let anyone create there, and the
// names there are public (a session node's follows from its session's
// id, handed out in sequence; a run note's from it and the group). A
// client without credentials could make a copy's session node first,
// costing it the proof of its session's end, or plant run notes in a
// group's name that kept its runners waiting. The root such a copy makes
// now admits only the identities its ACL lets write.
func TestSessionRootMadeWithCredentialsAdmitsNoOneElse(t *testing.T) {
	addrs := sharedAddrs(t)
	openT(t, addrs)
	g := groupPath(t)
	root := g + "-sessions"
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"))
	lockUnder(t, owner, g, root)
	acl, _, err := owner.Conn().GetACL(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acl {
		if a.Scheme == "world" && a.Perms&zk.PermCreate != 0 {
			t.Errorf("the session root made with credentials lets anyone create: %s", elect.FormatACL(acl))
		}
	}
	anyone := session(t, addrs)
	_, err = anyone.Conn().Create(root+"/session-00000000000000ff-live", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a client without credentials creating under the session root: %v; want ErrNoAuth", err)
	}
}

// TestOpenSessionRootIsWarnedOf: a session root an older herald made (or
// anyone, before herald) lets anyone create there; a copy with
// credentials says so, once, and what to run.
func TestOpenSessionRootIsWarnedOf(t *testing.T) {
	addrs := sharedAddrs(t)
	openT(t, addrs)
	g := groupPath(t)
	root := g + "-sessions"
	if err := elect.MakeSharedPath(session(t, addrs), root); err != nil {
		t.Fatal(err)
	}
	var log lockedBuf
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"), elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	lockUnder(t, owner, g, root)
	lockUnder(t, owner, g+"-second", root)
	if n := strings.Count(log.String(), "setAcl "+root+" "); n != 1 {
		t.Errorf("warned %d times of the open session root with the setAcl to run; want once:\n%s", n, log.String())
	}
}

// TestRunNotePlantedByAnyoneHoldsNoRunnerBack: in a session root open to
// all, a client without credentials planted a run note in the name of a
// group whose ACL it could not touch, with the longest timeout a note
// may carry (2³¹−1 ms). The group's first owner, a copy with
// credentials, found a command of another session that might still run
// there, and `herald lock` would have held its command back for weeks.
// The root such a copy makes refuses the plant.
func TestRunNotePlantedByAnyoneHoldsNoRunnerBack(t *testing.T) {
	addrs := sharedAddrs(t)
	openT(t, addrs)
	g := groupPath(t)
	root := g + "-sessions"
	lockUnder(t, session(t, addrs, elect.WithDigestAuth("owner:pw")), g+"-first", root) // makes the root
	victim := g + "-victim"
	h := fnv.New64a()
	h.Write([]byte(victim))
	note := fmt.Sprintf("%s/run-%016x-%016x-cmd", root, uint64(0x1234), h.Sum64())
	data := fmt.Sprintf(`{"herald":1,"group":%q,"timeout_ms":2147483647}`, victim)
	anyone := session(t, addrs)
	_, _ = anyone.Conn().Create(note, []byte(data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	s := session(t, addrs, elect.WithDigestAuth("owner:pw"))
	held := lockUnder(t, s, victim, root)
	released, err := held.PredecessorReleased(ctxT(t, 10*time.Second))
	if err != nil || !released || held.RunsBeside() {
		t.Errorf("the group's first owner: PredecessorReleased = %v, %v, RunsBeside = %v; want true, nil, false", released, err, held.RunsBeside())
	}
	if d := s.LongestTimeoutSeen(); d > time.Minute {
		t.Errorf("LongestTimeoutSeen = %v, from a note another client planted", d)
	}
}

// TestSessionRootOfAnotherIdentity: a session root made with credentials
// admits only the identities its ACL lets write. A copy of another
// identity is told, once, why it keeps no session node there and what to
// do, and so is a runner whose run note the root refuses; an ACL naming
// both identities, given to both, lets each keep its nodes there.
func TestSessionRootOfAnotherIdentity(t *testing.T) {
	addrs := sharedAddrs(t)
	openT(t, addrs)
	g := groupPath(t)
	root := g + "-sessions"
	lockUnder(t, session(t, addrs, elect.WithDigestAuth("alpha:pw")), g+"-alpha", root)
	var log lockedBuf
	beta := session(t, addrs, elect.WithDigestAuth("beta:pw"), elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	held := lockUnder(t, beta, g+"-beta", root)
	lockUnder(t, beta, g+"-beta2", root)
	hint := root + " does not let this identity create there"
	if n := strings.Count(log.String(), hint); n != 1 {
		t.Errorf("told %d times why the session root refuses beta's session node; want once:\n%s", n, log.String())
	}
	if err := held.MarkRunning(ctxT(t, 10*time.Second)); err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("MarkRunning under a root of another identity: %v; want the hint", err)
	}

	both := []zk.ACL{zk.DigestACL(zk.PermAll, "alpha", "pw")[0], zk.DigestACL(zk.PermAll, "beta", "pw")[0], {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
	shared := g + "-shared-sessions"
	lockUnder(t, session(t, addrs, elect.WithDigestAuth("alpha:pw"), elect.WithDefaultACL(both)), g+"-alpha3", shared)
	beta2 := session(t, addrs, elect.WithDigestAuth("beta:pw"), elect.WithDefaultACL(both))
	lockUnder(t, beta2, g+"-beta3", shared)
	_, st, err := beta2.Conn().Exists(fmt.Sprintf("%s/session-%016x-live", shared, uint64(beta2.ID())))
	if err != nil || st == nil || st.EphemeralOwner != beta2.ID() {
		t.Errorf("beta's session node under a root whose ACL names both identities: %+v, %v", st, err)
	}
}

// TestPlantedRunNoteInAnOpenRootIsWarnedOf: in a session root an older
// herald made open to all, a client without credentials may plant a run
// note in any group's name with the longest timeout a note may carry,
// and the group's first owner waits for it. A `run` copy with
// credentials keeps its session node in the office, not the root, so it
// said nothing of the open root before it waited, perhaps for weeks; it
// now warns, naming the setAcl, as soon as it finds a note there.
func TestPlantedRunNoteInAnOpenRootIsWarnedOf(t *testing.T) {
	addrs := sharedAddrs(t)
	openT(t, addrs)
	g := groupPath(t)
	root := g + "-sessions"
	anyone := session(t, addrs)
	if err := elect.MakeSharedPath(anyone, root); err != nil { // open, as an older herald made it
		t.Fatal(err)
	}
	victim := g + "-victim"
	h := fnv.New64a()
	h.Write([]byte(victim))
	note := fmt.Sprintf("%s/run-%016x-%016x-cmd", root, uint64(0x1234), h.Sum64())
	data := fmt.Sprintf(`{"herald":1,"group":%q,"timeout_ms":2147483647}`, victim)
	if _, err := anyone.Conn().Create(note, []byte(data), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var log lockedBuf
	s := session(t, addrs, elect.WithDigestAuth("owner:pw"), elect.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	e, err := elect.NewElection(s, victim, elect.CreateParents(), elect.ProveSessionEnd(), elect.SessionNodesUnder(root))
	if err != nil {
		t.Fatal(err)
	}
	held, err := e.Campaign(ctxT(t, 20*time.Second), "a")
	if err != nil {
		t.Fatal(err)
	}
	released, err := held.PredecessorReleased(ctxT(t, 10*time.Second))
	if err != nil || released || !held.RunsBeside() {
		t.Fatalf("the group's first owner beside a planted note: PredecessorReleased = %v, %v, RunsBeside = %v; want false, nil, true", released, err, held.RunsBeside())
	}
	if !strings.Contains(log.String(), "setAcl "+root+" ") {
		t.Errorf("waiting for a note in a root open to all, a copy with credentials did not warn of the root:\n%s", log.String())
	}
}
