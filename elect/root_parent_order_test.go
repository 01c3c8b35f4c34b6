package elect_test

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestSessionRootRefusedAboveItIsWarnedOf: where a bridge of another
// identity made /herald first (closed to all but its identity, as it
// makes /herald/sources), a lock's copy could not make its session root
// there, and gave up its session node with a debug line only: a waiter
// behind it waited its whole bound, unwarned. It warns, once, naming
// the node that refused and what to do, as where the root refuses it.
func TestSessionRootRefusedAboveItIsWarnedOf(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	parent := g + "-herald"
	rootMadeBy(t, addrs, "bridge", parent+"/sources")
	var log lockedBuf
	runner := session(t, addrs, elect.WithDigestAuth("runner:pw"), logsTo(&log, slog.LevelInfo))
	lockUnder(t, runner, g+"-a", parent+"/sessions")
	lockUnder(t, runner, g+"-b", parent+"/sessions")
	if n := strings.Count(log.String(), "level=WARN msg=\"no session node"); n != 1 {
		t.Errorf("warned %d times that the session root could not be made; want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), parent+" does not let this identity create there") {
		t.Errorf("the warning does not name %s:\n%s", parent, log.String())
	}
}

// TestRootParentRefusalSaysWhatToRun: a copy refused by /herald, made
// first by another identity, was told to give every copy an --zk-acl
// naming each identity (which changes no node already made) or to
// setAcl /herald to an ACL granting each CREATE, with no ACL named. It
// is told what RootRefused tells of a root: /herald's ACL and the
// entries that admit it beside the maker; done as said by the maker, the
// copy makes its root there.
func TestRootParentRefusalSaysWhatToRun(t *testing.T) {
	addrs := sharedAddrs(t)
	parent := groupPath(t) + "-herald"
	bridge := rootMadeBy(t, addrs, "bridge", parent+"/sources")
	runner := session(t, addrs, elect.WithDigestAuth("runner:pw"))
	refusal := elect.MakeRoot(runner, parent+"/sessions")
	if !errors.Is(refusal, zk.ErrNoAuth) {
		t.Fatalf("the runner making its root under the bridge's %s: %v; want ErrNoAuth", parent, refusal)
	}
	admitAsTold(t, bridge, parent, "refusal", refusal.Error())
	if err := elect.MakeRoot(runner, parent+"/sessions"); err != nil {
		t.Errorf("the runner making its root after doing what %v said: %v", refusal, err)
	}
}

// TestDeepRootClosesItsParentAlone: a root made with credentials closed
// every node it made on the way, not only the one that holds it and its
// siblings: two teams of two identities with roots /x/team-a/sessions
// and /x/team-b/sessions on a fresh ensemble found /x closed to the
// second team, which then kept no session node, though no root of
// herald's is a child of /x. Only the root's parent is closed.
func TestDeepRootClosesItsParentAlone(t *testing.T) {
	addrs := sharedAddrs(t)
	top := groupPath(t) + "-x"
	rootMadeBy(t, addrs, "team-a", top+"/team-a/sessions")
	if err := elect.MakeRoot(session(t, addrs, elect.WithDigestAuth("team-b:pw")), top+"/team-b/sessions"); err != nil {
		t.Errorf("a second team making its root under %s: %v", top, err)
	}
	anyone := session(t, addrs)
	if _, err := anyone.Conn().Create(top+"/team-a/sources", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a client without credentials making a root beside team-a's: %v; want ErrNoAuth", err)
	}
}

// TestSessionRootRefusalSaysWhatToRun: a copy the session root refused
// warned only to give every copy an --zk-acl naming each identity (which
// changes no root already made) or to setAcl the root, with no ACL
// named. It names the root's ACL and the entries that admit it beside
// the maker, as a refused bridge does; done as said by the maker, the
// copy's next session keeps its session node there.
func TestSessionRootRefusalSaysWhatToRun(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	root := g + "-sessions"
	alpha := session(t, addrs, elect.WithDigestAuth("alpha:pw"))
	lockUnder(t, alpha, g+"-alpha", root)
	var log lockedBuf
	beta := session(t, addrs, elect.WithDigestAuth("beta:pw"), logsTo(&log, slog.LevelInfo))
	lockUnder(t, beta, g+"-beta", root)
	admitAsTold(t, alpha, root, "warning", log.String())
	again := session(t, addrs, elect.WithDigestAuth("beta:pw"))
	lockUnder(t, again, g+"-beta2", root)
	if _, st, err := again.Conn().Exists(fmt.Sprintf("%s/session-%016x-live", root, uint64(again.ID()))); err != nil || st == nil {
		t.Errorf("beta's session node after doing what the warning said: %+v, %v\n%s", st, err, log.String())
	}
}

// TestGroupUnderAnotherIdentitysParentSaysWhatToRun: a bridge with --ha
// /herald/bridges, started after a runner of another identity made
// /herald (closed to that identity alone since the runner's root closes
// its parent), campaigned again and again on "create parent
// /herald/bridges: not authenticated", naming neither whose node
// refused it nor what to do. It names /herald, its ACL and the entries
// that admit it; done as said by the maker, it campaigns.
func TestGroupUnderAnotherIdentitysParentSaysWhatToRun(t *testing.T) {
	addrs := sharedAddrs(t)
	parent := groupPath(t) + "-herald"
	runner := rootMadeBy(t, addrs, "runner", parent+"/sessions")
	bridge := session(t, addrs, elect.WithDigestAuth("bridge:pw"))
	e, err := elect.NewElection(bridge, parent+"/bridges", elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	_, refusal := e.Campaign(ctxT(t, 10*time.Second), "bridge")
	if !errors.Is(refusal, zk.ErrNoAuth) {
		t.Fatalf("campaigning under the runner's %s: %v; want ErrNoAuth", parent, refusal)
	}
	admitAsTold(t, runner, parent, "refusal", refusal.Error())
	if _, err := e.Campaign(ctxT(t, 10*time.Second), "bridge"); err != nil {
		t.Errorf("campaigning after doing what %v said: %v", refusal, err)
	}
}

// admitAsTold has maker do what told, the refusal or warning (what) of
// a copy another identity's node refused, says: set node's ACL to the one
// getAcl shows the maker, with the entries it names added.
func admitAsTold(t *testing.T, maker *elect.Session, node, what, told string) {
	t.Helper()
	m := regexp.MustCompile(`add (\S+) to the ACL that getAcl ` + regexp.QuoteMeta(node) + ` shows`).FindStringSubmatch(told)
	if m == nil {
		t.Fatalf("the %s names no entries to add to %s:\n%s", what, node, told)
	}
	set, _, err := maker.Conn().GetACL(node) // as its maker sees it
	if err != nil {
		t.Fatal(err)
	}
	if _, err := maker.Conn().SetACL(node, append(set, zkCliACL(m[1])...), -1); err != nil {
		t.Fatalf("setAcl %s to the sum (%s): %v", node, told, err)
	}
}
