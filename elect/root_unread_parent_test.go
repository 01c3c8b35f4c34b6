package elect_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestOpenRootUnderAnUnreadableParentIsWarnedOf: the check of a root's
// parent, added beside the root's, returned ErrRootUnchecked as soon as
// the parent's ACL could not be read (ZooKeeper's getAcl wants READ or
// ADMIN, which a parent closed by another identity may not grant), and
// threw away what it had found: a root open to anyone's create. A copy
// then retried at every node and never warned. What was found is said.
func TestOpenRootUnderAnUnreadableParentIsWarnedOf(t *testing.T) {
	addrs := sharedAddrs(t)
	parent := groupPath(t) + "-herald"
	rootUnderAClosedParent(t, addrs, parent, zk.WorldACL(zk.PermAll))
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"))
	err := elect.CheckRoot(ctxT(t, 10*time.Second), owner, parent+"/sessions")
	if err == nil || !strings.Contains(err.Error(), "setAcl "+parent+"/sessions ") {
		t.Errorf("checking a root open to all under a parent it may not read: %v; want the warning with its setAcl", err)
	}
}

// TestRootParentClosedToOurReadsIsCheckedOnce: a parent whose ACL this
// identity may not read (getAcl wants READ or ADMIN) is unreadable for
// good, not for a lost connection's while: the session forgot its check
// and read both ACLs again at every node it made, for its whole life.
func TestRootParentClosedToOurReadsIsCheckedOnce(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	parent := g + "-herald"
	rootUnderAClosedParent(t, addrs, parent, append(zk.DigestACL(zk.PermAll, "owner", "pw"), zk.WorldACL(zk.PermRead)...))
	var log lockedBuf
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"), logsTo(&log, slog.LevelDebug))
	lockUnder(t, owner, g+"-a", parent+"/sessions")
	lockUnder(t, owner, g+"-b", parent+"/sessions")
	if n := strings.Count(log.String(), "reading the ACL of "+parent+":"); n != 1 {
		t.Errorf("read %s's ACL, closed to this identity, %d times; want once:\n%s", parent, n, log.String())
	}
}

// rootUnderAClosedParent has maker:pw make parent, closed to all but
// itself (READ too), and the root parent/sessions under it with rootACL.
func rootUnderAClosedParent(t *testing.T, addrs []string, parent string, rootACL []zk.ACL) {
	t.Helper()
	maker := session(t, addrs, elect.WithDigestAuth("maker:pw"))
	if _, err := maker.Conn().Create(parent, nil, 0, zk.DigestACL(zk.PermAll, "maker", "pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := maker.Conn().Create(parent+"/sessions", nil, 0, rootACL); err != nil {
		t.Fatal(err)
	}
}
