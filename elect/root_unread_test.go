package elect_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// TestRootACLUnreadIsNotTakenForClosed: a root check whose read of the
// ACL failed (the connection lost, not a missing root) returned nil, as
// for a closed root, and the session marked the root checked: an open
// session root then went unwarned for the session's life. The failure
// is an error now (ErrRootUnchecked), and the session checks again at
// its next node.
func TestRootACLUnreadIsNotTakenForClosed(t *testing.T) {
	addrs := sharedAddrs(t)
	root := groupPath(t) + "-root"
	if err := elect.MakeSharedPath(session(t, addrs), root); err != nil { // open to all
		t.Fatal(err)
	}
	acl := zk.DigestACL(zk.PermAll, "owner", "pw")
	closed := session(t, addrs, elect.WithDigestAuth("owner:pw"))
	closed.Close() // every read now fails: the connection is gone
	if err := elect.CheckRootFor(ctxT(t, 10*time.Second), closed, root, acl); !errors.Is(err, elect.ErrRootUnchecked) {
		t.Errorf("checking a root over a closed connection: %v; want ErrRootUnchecked", err)
	}

	var log lockedBuf
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"), logsTo(&log, slog.LevelInfo))
	checkedAfterAFailedRead(t, func(ctx context.Context) { elect.CheckSessionRootFor(ctx, owner, root, acl) })
	if !strings.Contains(log.String(), "setAcl "+root+" ") {
		t.Errorf("the session root open to all went unwarned after a failed read:\n%s", log.String())
	}
}

// TestGroupACLUnreadIsNotTakenForClosed: the check of a group's ACL
// whose read failed marked the group checked all the same, and a group
// open to all went unwarned for the session's life. It checks again at
// the next node.
func TestGroupACLUnreadIsNotTakenForClosed(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	if _, err := session(t, addrs).Conn().Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var log lockedBuf
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"), logsTo(&log, slog.LevelInfo))
	acl := zk.DigestACL(zk.PermAll, "owner", "pw")
	checkedAfterAFailedRead(t, func(ctx context.Context) { elect.CheckGroupFor(ctx, owner, g, acl) })
	if !strings.Contains(log.String(), "setAcl "+g+" ") {
		t.Errorf("the group open to all went unwarned after a failed read:\n%s", log.String())
	}
}

// logsTo is a session option that writes the session's log at level and
// above to log, for a test to read what it warned of.
func logsTo(log *lockedBuf, level slog.Level) elect.SessionOption {
	return elect.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: level})))
}

// checkedAfterAFailedRead runs check twice: first with a context already
// cancelled, so that its read fails, then with time to read.
func checkedAfterAFailedRead(t *testing.T, check func(ctx context.Context)) {
	t.Helper()
	gone, cancel := context.WithCancel(context.Background())
	cancel() // the first check's read fails
	check(gone)
	check(ctxT(t, 10*time.Second))
}
