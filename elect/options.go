package elect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// SessionOption configures NewSession. Options validate their argument.
type SessionOption func(*sessionOptions) error

type sessionOptions struct {
	timeout          time.Duration
	connectTimeout   time.Duration
	attemptTimeout   time.Duration
	dialTimeout      time.Duration
	acceptNegotiated bool
	maxBuffer        int
	log              *slog.Logger
	// digest is "user:password" for ZooKeeper's digest scheme, "" for none.
	digest string
	// acl is WithDefaultACL's, nil for the built-in default.
	acl []zk.ACL
	// tls, when set, wraps every connection (ZooKeeper's secureClientPort).
	tls *tls.Config
}

func defaultSessionOptions() sessionOptions {
	return sessionOptions{
		timeout:        10 * time.Second,
		connectTimeout: 15 * time.Second,
		attemptTimeout: 5 * time.Second,
		dialTimeout:    time.Second,
		maxBuffer:      4 << 20,
		log:            slog.New(slog.DiscardHandler),
	}
}

func (o sessionOptions) validate(servers []string) error {
	if len(servers) == 0 {
		return errors.New("elect: no ZooKeeper servers given; pass host:port[,host:port...]")
	}
	for _, s := range servers {
		if s == "" {
			return errors.New("elect: empty ZooKeeper server address in the list")
		}
		if i := strings.Index(s, "/"); i >= 0 {
			return fmt.Errorf("elect: ZooKeeper server %q ends in a chroot (%s), which herald's client does not take: give %q and the full paths below the chroot", s, s[i:], s[:i])
		}
	}
	return nil
}

// WithSessionTimeout asks for a session timeout. The server must grant
// exactly this value unless AcceptNegotiatedTimeout is given, because every
// loss decision herald makes is timed by it.
func WithSessionTimeout(d time.Duration) SessionOption {
	return func(o *sessionOptions) error {
		if d < 100*time.Millisecond || d > 10*time.Minute {
			return fmt.Errorf("elect: session timeout %v out of range (100ms to 10m)", d)
		}
		o.timeout = d
		if o.attemptTimeout < d {
			o.attemptTimeout = d
		}
		return nil
	}
}

// AcceptNegotiatedTimeout accepts whatever timeout the server grants.
func AcceptNegotiatedTimeout() SessionOption {
	return func(o *sessionOptions) error { o.acceptNegotiated = true; return nil }
}

// WithConnectTimeout bounds how long NewSession retries an unreachable
// ensemble before it gives up with ErrUnreachable.
func WithConnectTimeout(d time.Duration) SessionOption {
	return func(o *sessionOptions) error {
		if d <= 0 {
			return fmt.Errorf("elect: connect timeout must be positive, got %v", d)
		}
		o.connectTimeout = d
		if o.attemptTimeout > d {
			o.attemptTimeout = d
		}
		return nil
	}
}

// WithDigestAuth authenticates the session with ZooKeeper's digest scheme
// ("user:password"), again after every reconnect. The nodes herald
// creates on such a session then default to an ACL that lets this
// identity do anything and everyone read (ZooKeeper sends watch events
// only to sessions that may read a node, so other participants must).
// ZooKeeper accepts any credentials at login: a wrong password is a
// different identity, which the servers refuse only when it touches
// nodes the right one protects.
func WithDigestAuth(userPassword string) SessionOption {
	return func(o *sessionOptions) error {
		user, pw, ok := strings.Cut(userPassword, ":")
		if !ok || user == "" || pw == "" {
			return errors.New("elect: digest credentials must be user:password, both non-empty")
		}
		o.digest = userPassword
		return nil
	}
}

// WithDefaultACL sets the ACL of every node herald creates on the session
// (queue nodes, group parents, office and checkpoint nodes) where a recipe
// is given none by WithACL; see ParseACL for a textual form.
func WithDefaultACL(acl []zk.ACL) SessionOption {
	return func(o *sessionOptions) error {
		if len(acl) == 0 {
			return errors.New("elect: empty default ACL")
		}
		o.acl = acl
		return nil
	}
}

// checkACL refuses an auth-scheme ACL on a session that will have no
// identity (ZooKeeper would refuse every create with InvalidACL), and an
// ACL that does not let the session create and delete its own nodes (see
// CheckOwnAccess).
func (o *sessionOptions) checkACL() error {
	if o.acl == nil {
		return nil
	}
	cert := o.tls != nil && (len(o.tls.Certificates) > 0 || o.tls.GetClientCertificate != nil)
	return CheckOwnAccess(o.acl, o.digest, cert)
}

// errNoIdentity: an auth:: ACL on a session that, once connected, has no
// identity after all.
var errNoIdentity = errors.New("elect: the ACL names auth:: but the session has no identity")

// checkIdentity refuses, once connected, an auth-scheme ACL resting on a
// client certificate the servers never asked for (ssl.clientAuth=none):
// the session then has no identity and every create would fail.
func (o *sessionOptions) checkIdentity(certSent bool) error {
	if o.digest != "" || certSent {
		return nil
	}
	for _, a := range o.acl {
		if a.Scheme == "auth" {
			return fmt.Errorf("%w: the servers did not ask for the client certificate (their ssl.clientAuth is none), so it names no one; set ssl.clientAuth=need (or want) on the servers, give digest credentials, or use an ACL without the auth:: scheme", errNoIdentity)
		}
	}
	return nil
}

// WithTLS speaks TLS to the servers, as their secureClientPort expects.
// An empty ServerName is taken from each server's host as the server
// list gives it (a host name, not the address it resolves to; an IP
// address as an IP address), so one config serves a whole ensemble; set RootCAs to trust a private CA and
// Certificates when the servers ask for a client certificate.
func WithTLS(cfg *tls.Config) SessionOption {
	return func(o *sessionOptions) error {
		if cfg == nil {
			return errors.New("elect: nil TLS config")
		}
		o.tls = cfg
		return nil
	}
}

// WithLogger sets the logger for session events and retries.
func WithLogger(l *slog.Logger) SessionOption {
	return func(o *sessionOptions) error {
		if l == nil {
			return errors.New("elect: nil logger")
		}
		o.log = l
		return nil
	}
}

// LossPolicy decides when a holder is told its ownership is no longer safe.
type LossPolicy int

const (
	// LoseOnSuspend (the default): the moment the connection is lost. Safe:
	// another participant may take over once our session times out, and we
	// cannot tell when that is.
	LoseOnSuspend LossPolicy = iota
	// LoseOnExpiry: only when the session expires (or our node is deleted).
	// Keeps ownership through short blips, at the risk of two processes
	// believing they own for up to the session timeout.
	LoseOnExpiry
)

// Option configures an Election or Lock.
type Option func(*recipeOptions) error

type recipeOptions struct {
	createParents bool
	acl           []zk.ACL
	aclSet        bool // WithACL was given; else the session's default
	policy        LossPolicy
	prefix        string
	prefixSet     bool // WithPrefix was given: the classic dialect
	dialect       Dialect
	id            string
	releaseWait   time.Duration
	hazard        hazardCheck
	queued        func(node string)
	sessionProof  bool
	sessionRoot   string // where a group that may hold no office keeps session nodes; "" for nowhere
	waits         bool   // see WaitsForPredecessor
	rootSet       bool   // SessionNodesUnder was given
}

// hazardCheck is when an owner starts guarding its group against a client
// that cannot read its node (see WatchForHazards), or never.
type hazardCheck struct {
	after time.Duration // this far into a tenure; 0: at once
	off   bool
}

func defaultRecipeOptions(prefix string) recipeOptions {
	return recipeOptions{acl: zk.WorldACL(zk.PermAll), prefix: prefix, dialect: DialectAuto, releaseWait: 10 * time.Second,
		hazard: hazardCheck{after: DefaultHazardCheck}, sessionRoot: DefaultSessionRoot}
}

// CreateParents creates the group's path (persistent nodes) when missing.
// Without it a missing path is an error (ErrNoParent).
func CreateParents() Option {
	return func(o *recipeOptions) error { o.createParents = true; return nil }
}

// WithACL sets the ACL of the nodes herald creates. Every participant must
// be allowed to read them: ZooKeeper sends a watch event only to a session
// that may read the node, so a waiter that may not would never wake.
func WithACL(acl []zk.ACL) Option {
	return func(o *recipeOptions) error {
		if len(acl) == 0 {
			return errors.New("elect: empty ACL")
		}
		if !slices.ContainsFunc(acl, func(a zk.ACL) bool { return a.Perms&zk.PermRead != 0 }) {
			return errors.New("elect: the ACL lets nobody read the nodes; grant READ to every participant, or waiters are never told their turn has come (ZooKeeper sends watch events only to sessions that may read the node)")
		}
		o.acl, o.aclSet = acl, true
		return nil
	}
}

// OnQueued has fn called with the name of the participant's node each
// time Campaign or Acquire has joined the queue, before it waits there:
// the join, which an ACL or a missing parent can refuse, is behind it.
func OnQueued(fn func(node string)) Option {
	return func(o *recipeOptions) error {
		if fn == nil {
			return errors.New("elect: OnQueued with a nil func")
		}
		o.queued = fn
		return nil
	}
}

// ProveSessionEnd keeps a session node for the participant's session: an
// ephemeral node made with its first queue node in the group, in the
// election's office (and the office with it, when there is none yet), or
// for a group that may hold no office (a lock's, an election named for
// Curator's mutex) under a session root outside every group
// (DefaultSessionRoot, or the one SessionNodesUnder names). And each
// wait looks, once it knows which node owns ahead of it, for that owner's
// session node: seen then and gone in the transaction that took that
// owner's node (the pzxids of both parents tell; two deletions by hand
// prove nothing), it proves the owner's session ended, and
// Handle.PredecessorReleased counts that as a release. That is sound only where every participant's work stops
// before its session can expire: `herald run` and `herald lock` stop
// their command within five sixths of the session timeout of their last
// reply, and within two thirds of it of their last sync the leader
// answered (see leader_lease.go) (LoseOnSuspend, the default, and a bound
// on the command's stop),
// so the next runner may start at once rather than wait for the longest
// a runner that cannot hear takes to stop. Under LoseOnExpiry work runs
// on past the session's end, and this option proves nothing. It costs
// one request each time the owner a wait sees changes, and a read of
// the session node of each other session a wait finds ahead of it, once
// per session, for the timeout it carries (Session.LongestTimeoutSeen).
// It changes nothing behind an owner whose session keeps no such node
// (one without this option, a foreign client, an older herald, one whose
// session root is elsewhere or refused it).
func ProveSessionEnd() Option {
	return func(o *recipeOptions) error { o.sessionProof = true; return nil }
}

// WaitsForPredecessor is a participant's word that its work starts only
// once the owner before it is shown stopped (PredecessorReleased, or the
// longest an owner that cannot hear takes to stop), as `herald run` and
// `herald lock` wait. It is written on the session's session node, so it
// needs ProveSessionEnd and a session node where the group keeps them. An
// owner given it also reads that word of every other herald session with
// a node in its group (one read per session and tenure): a session that
// does not give it (a program that works as Acquire returns, an older
// herald, one without a session node) owns as soon as our node goes, so
// ForeignInGroup counts it as it counts a foreign client's node. The word
// is the session's, for all of its nodes: NewLock and NewElection refuse
// a recipe that says otherwise than the session's first recipe did.
func WaitsForPredecessor() Option {
	return func(o *recipeOptions) error { o.waits = true; return nil }
}

// DefaultSessionRoot is where, under ProveSessionEnd, the sessions of a
// group that may hold no office keep their session nodes.
const DefaultSessionRoot = "/herald/sessions"

// SessionNodesUnder sets the session root (see ProveSessionEnd): a path
// outside the group, made (persistent, with CREATE for anyone, so that
// every identity may keep its node there) when missing. Every participant
// must name the same root: a waiter looks for its owner's session node
// under its own. "" keeps no session node where the group may hold no
// office.
func SessionNodesUnder(root string) Option {
	return func(o *recipeOptions) error {
		if root == "/" {
			return fmt.Errorf("elect: session root /: the top of the tree holds the groups; give a path below it, outside every group (default %s)", DefaultSessionRoot)
		}
		if root != "" {
			if err := ValidatePath(root); err != nil {
				return fmt.Errorf("elect: session root: %w", err)
			}
		}
		o.sessionRoot, o.rootSet = root, true
		return nil
	}
}

// WithLossPolicy chooses when ownership ends on connection trouble.
func WithLossPolicy(p LossPolicy) Option {
	return func(o *recipeOptions) error {
		if p != LoseOnSuspend && p != LoseOnExpiry {
			return fmt.Errorf("elect: unknown loss policy %d", p)
		}
		o.policy = p
		return nil
	}
}

// WithDialect forces the shape of herald's node names instead of matching
// the group (DialectAuto, the default). Force one when the clients that will
// join later are known and the default does not serve them: DialectKazoo
// before Kazoo clients join, DialectCuratorLatch for a lock that Curator
// LeaderLatch clients share, DialectCuratorLock for an election shared with
// Curator LeaderSelector or go-zookeeper. A forced dialect is written even
// into a group whose foreign nodes want another, so herald refuses nothing
// then: that is for clients configured to read it (Kazoo's
// extra_lock_patterns).
func WithDialect(d Dialect) Option {
	return func(o *recipeOptions) error {
		if _, err := ParseDialect(string(d)); err != nil {
			return err
		}
		if o.prefixSet && d != DialectClassic && d != DialectAuto {
			return fmt.Errorf("elect: WithDialect(%s) with WithPrefix(%q): a prefix names classic nodes; give one or the other", d, o.prefix)
		}
		if o.prefixSet {
			return nil // the prefix forces the classic dialect already
		}
		o.dialect = d
		return nil
	}
}

// WithPrefix names herald's nodes in the classic dialect with prefix p
// ("job-<herald id>_<seq>"); it forces DialectClassic.
func WithPrefix(p string) Option {
	return func(o *recipeOptions) error {
		if p == "" || len(p) > 64 {
			return fmt.Errorf("elect: node prefix %q must be 1 to 64 bytes", p)
		}
		if strings.Contains(p, "/") {
			return fmt.Errorf("elect: node prefix %q must not contain '/': it names nodes directly under the group", p)
		}
		if err := ValidatePath("/" + p); err != nil {
			return fmt.Errorf("elect: node prefix %q: %w", p, err)
		}
		if o.dialect != DialectAuto && o.dialect != DialectClassic {
			return fmt.Errorf("elect: WithPrefix(%q) with WithDialect(%s): a prefix names classic nodes; give one or the other", p, o.dialect)
		}
		o.prefix, o.dialect, o.prefixSet = p, DialectClassic, true
		return nil
	}
}

// DefaultHazardCheck is how far into a tenure an owner starts guarding its
// group, unless told otherwise.
//
// An owner steps down when a client joins its group that cannot read its
// node and so may believe it owns too: a Kazoo client beside herald's
// default names, a Curator LeaderLatch beside a lock's, a client of a
// recipe herald never shares a group with. The two would otherwise own
// together until one releases; herald cannot stop the other client, so it
// ends its own tenure: Done closes with ReasonTwoOwners and an error
// wrapping ErrUnsafeGroup that names the client, and our node is deleted.
// A Campaign or Acquire after that queues in the dialect the newcomer reads
// (or is refused, when the group's clients cannot all read one).
// go-zookeeper's Lock, which fails on such a name rather than owning, does
// not count.
//
// To see such a client the owner guards its group: it lists it and keeps a
// children watch on it, listing again at every change, for the rest of its
// tenure. By default it starts DefaultHazardCheck into the tenure, so a
// shorter tenure (a busy lock's) costs nothing, a longer one a listing for
// every node that joins or leaves, and a newcomer is found within that
// second or at once after it. WatchForHazards guards from the first
// moment, HazardCheckAfter chooses when to start, NoHazardCheck never
// guards.
const DefaultHazardCheck = time.Second

// WatchForHazards makes an owner guard its group from the moment it owns,
// so that it steps down within one listing of such a newcomer's join.
// herald run and herald lock use it.
func WatchForHazards() Option {
	return func(o *recipeOptions) error { o.hazard = hazardCheck{}; return nil }
}

// HazardCheckAfter makes an owner start guarding its group d into its
// tenure (d from 0 to 1h).
func HazardCheckAfter(d time.Duration) Option {
	return func(o *recipeOptions) error {
		if d < 0 || d > time.Hour {
			return fmt.Errorf("elect: hazard check delay %v out of range (0 to 1h)", d)
		}
		o.hazard = hazardCheck{after: d}
		return nil
	}
}

// NoHazardCheck makes an owner keep owning whoever joins its group.
func NoHazardCheck() Option {
	return func(o *recipeOptions) error { o.hazard = hazardCheck{off: true}; return nil }
}

// WithID sets the participant id stored as the node's data (a Lock's holder
// id; Campaign takes the id as an argument).
func WithID(id string) Option {
	return func(o *recipeOptions) error {
		if len(id) > 1024 {
			return errors.New("elect: participant id longer than 1024 bytes")
		}
		o.id = id
		return nil
	}
}

// call runs a blocking ZooKeeper request so that the caller returns when
// ctx ends even if the request is still queued (the client queues requests
// while disconnected).
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// zkLogger sends the client's own messages to slog at debug level.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf("zk: "+format, args...))
}

// call2 is call for requests that return two values.
func call2[A, B any](ctx context.Context, f func() (A, B, error)) (A, B, error) {
	type pair struct {
		a A
		b B
	}
	p, err := call(ctx, func() (pair, error) {
		a, b, err := f()
		return pair{a, b}, err
	})
	return p.a, p.b, err
}
