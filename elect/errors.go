package elect

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/go-zookeeper/zk"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotLeader: a fenced write by a participant that no longer owns its
	// group (deposed, resigned, or its node is gone).
	ErrNotLeader = errors.New("elect: not leader")
	// ErrLocked: TryAcquire found the lock held by someone else.
	ErrLocked = errors.New("elect: lock is held by another participant")
	// ErrNoLeader: the group has no owner right now.
	ErrNoLeader = errors.New("elect: no leader")
	// ErrSessionLost: the ZooKeeper session expired; every ephemeral node it
	// owned is gone. Create a new Session.
	ErrSessionLost = errors.New("elect: ZooKeeper session expired")
	// ErrSessionClosed: the Session was closed by its owner.
	ErrSessionClosed = errors.New("elect: session closed")
	// ErrNodeDeleted: our own queue node vanished while we waited or held.
	ErrNodeDeleted = errors.New("elect: own queue node was deleted")
	// ErrNoParent: the group's parent znode does not exist.
	ErrNoParent = errors.New("elect: group path does not exist")
	// ErrBadPath: a path that ZooKeeper would reject.
	ErrBadPath = errors.New("elect: invalid ZooKeeper path")
	// ErrRootUnchecked: CheckRoot could not read a root's ACL (the
	// connection lost, say), so it cannot tell whether anyone may create
	// there: check again later, rather than take the root for closed.
	ErrRootUnchecked = errors.New("elect: root ACL unchecked")
	// ErrUnreachable: no server of the ensemble granted a session in time.
	ErrUnreachable = errors.New("elect: ZooKeeper unreachable")
	// ErrTLS: the TLS handshake failed in a way retrying cannot mend (a
	// certificate the config does not trust, a server that speaks plain
	// text). NewSession returns it at once.
	ErrTLS = errors.New("elect: TLS to ZooKeeper failed")
	// ErrSessionTimeout: the server would not grant the session timeout asked.
	ErrSessionTimeout = errors.New("elect: session timeout not granted")
	// ErrNoCheckpoint: the group has no checkpoint yet.
	ErrNoCheckpoint = errors.New("elect: no checkpoint")
	// ErrBadCheckpoint: the group's checkpoint node holds data that is not
	// a herald checkpoint (someone else wrote it).
	ErrBadCheckpoint = errors.New("elect: not a herald checkpoint")
	// ErrTooBig: the servers closed the connection each time a checkpoint
	// was sent, though reads went through: a request over their
	// jute.maxbuffer. It was not saved, and sending it again will not help.
	ErrTooBig = errors.New("elect: checkpoint refused as too big")
	// ErrUnsafeGroup: the group holds nodes of clients that cannot order
	// each other's names (Kazoo beside Curator or go-zookeeper, Curator's
	// LeaderLatch beside its mutex), or of a recipe herald cannot queue
	// beside; whatever herald wrote, one of them could take ownership
	// while another holds it.
	ErrUnsafeGroup = errors.New("elect: group cannot be shared safely")
)

// ValidatePath checks a znode path the way ZooKeeper's server does, and says
// what is wrong in terms a user can act on.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path; use an absolute path such as /herald/jobs", ErrBadPath)
	case p[0] != '/':
		return fmt.Errorf("%w: %q must start with '/'", ErrBadPath, p)
	case p == "/":
		return fmt.Errorf("%w: the root \"/\" cannot be a group; use a path below it", ErrBadPath)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%w: %q must not end with '/'", ErrBadPath, p)
	}
	for i, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty segment (\"//\")", ErrBadPath, p)
		case ".", "..":
			return fmt.Errorf("%w: %q has a relative segment %q at position %d", ErrBadPath, p, seg, i+1)
		case "zookeeper":
			if i == 0 {
				return fmt.Errorf("%w: %q is inside /zookeeper, which the server reserves", ErrBadPath, p)
			}
		}
		for _, r := range seg {
			// The server checks UTF-16 chars: a character above U+FFFF
			// is a surrogate pair there, in the forbidden 0xd800-0xf8ff.
			if r == 0 || r > 0 && r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
				return fmt.Errorf("%w: %q holds character %U, which ZooKeeper does not allow", ErrBadPath, p, r)
			}
		}
	}
	return nil
}

// connLoss reports whether err means the request's outcome is unknown
// because the connection went away (the session may still be alive).
func connLoss(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrClosing) ||
		// The client hands socket errors of a dying connection straight
		// to the request that was being written.
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// expired reports whether err means the session is gone.
func expired(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, ErrSessionLost)
}

// ErrNotAGroup: the path observed as a group is an ephemeral node, which
// can have no children: a single-node leader or a queue node.
var ErrNotAGroup = errors.New("elect: not a group")

// ErrNotALeader: the path observed as a single-node leader is a node with
// children, a group: its owner is the first of its queue, not the node's
// creator.
var ErrNotALeader = errors.New("elect: not a leader node")

// errNilOption and errNilSession: a nil option or session given to a
// constructor or read, refused rather than left to panic.
var (
	errNilOption  = errors.New("elect: nil option")
	errNilSession = errors.New("elect: nil session")
)
