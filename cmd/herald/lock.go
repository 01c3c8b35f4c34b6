package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
)

func init() { register(newLockCmd) }

type lockOpts struct {
	path     string
	id       string
	timeout  time.Duration
	grace    time.Duration
	graceSet bool // --grace given, not its default
	nats     []string
	natsAuth natsAuth
	secrets  []*secretFlag
	dialect  string
	root     string
	// rootOpt is root, checked.
	rootOpt elect.Option
	// mixed: --mixed-recipe, join an election's group without a warning.
	mixed bool
}

func newLockCmd(a *app) *cobra.Command {
	var o lockOpts
	cmd := &cobra.Command{
		Use:   "lock --lock PATH [flags] -- COMMAND [ARGS...]",
		Short: "Run a command while holding a ZooKeeper lock",
		Long: `lock takes the lock at --lock (waiting at most --timeout, 0 = forever), runs
COMMAND, releases the lock when it exits and exits with its status. When
--timeout runs out, lock exits with status 75 (EX_TEMPFAIL) and names the
holder. If the lock is lost while the command runs, its process group gets
SIGTERM, then SIGKILL after --grace (sooner, so that it is dead before the
session can expire), and lock exits with status 3. What the command left
running is stopped before the lock is released: its process group, and on
Linux what it started apart from it (a daemon's setsid). A
watchdog process does the same should lock itself freeze (no sign of life
for half the session timeout) or be killed; killed, lock's node is then
released as soon as nothing of the command is left, so that the next
waiter need not wait for the session to expire.

When the previous owner's node went without a release, the command
starts as soon as that owner's session is known to have ended (its runner
stops its command before then; each copy's session keeps a node under
--session-root to tell), or its runner records that its command stopped
(its node was deleted by hand), or after 11/12 of the session timeout, by
when a runner frozen or cut off has killed it: give every copy the same
--session-timeout and --session-root.

The command finds the lock in its environment: HERALD_LOCK, HERALD_NODE,
HERALD_TERM (the fencing token), HERALD_ID and HERALD_ZK; HERALD_RUN_ID, drawn
for each command, tells herald the command's processes wherever they go.

The lock's node is named so that the other clients already in the group
(Curator, go-zookeeper, Kazoo, the classic recipe) order it by sequence;
--dialect forces a name shape when clients that join later need another
(see the README's table). A group whose clients cannot order each other's
names is refused.`,
		Example: `  # one backup at a time across the fleet; give up after a minute
  herald lock --zk zk1:2181 --lock /locks/backup --timeout 1m -- ./backup.sh`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.graceSet = cmd.Flags().Changed("grace")
			return a.runLock(cmd.Context(), o, args)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.StringVar(&o.path, "lock", "", "lock path in ZooKeeper (required), e.g. /locks/backup")
	f.StringVar(&o.id, "id", "", "holder id stored in the lock node (default host-pid)")
	f.DurationVar(&o.timeout, "timeout", 0, "how long to wait before the command starts: for the lock, then for the command of an owner before it to be surely stopped (0: as long as it takes)")
	f.DurationVar(&o.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when the command must stop (once ownership is lost or in doubt, at most a sixth of the session timeout, so that it is dead before the session can expire)")
	f.StringSliceVar(&o.nats, "nats", nil, "NATS URL(s) to announce acquire and release on (optional)")
	o.secrets = o.natsAuth.addFlags(f)
	addSecretFiles(f, o.secrets)
	dialectFlag(f, &o.dialect)
	sessionRootFlag(f, &o.root)
	mixedRecipeFlag(f, &o.mixed)
	return cmd
}

func (a *app) runLock(ctx context.Context, o lockOpts, args []string) error {
	ctx, stop := holderContext(ctx, a.logs)
	defer stop()
	defer a.noSuspend()()
	switch {
	case o.path == "":
		return missingPathFlag("lock", "--lock", "/locks/backup", "./backup.sh", args)
	case o.timeout < 0:
		return usageErr("--timeout %v: must not be negative (0 waits forever)", o.timeout)
	case o.grace <= 0:
		return usageErr("--grace %v: must be positive: it is the time the command gets between SIGTERM and SIGKILL (for a SIGKILL at once, give a very short one, such as --grace 1ms)", o.grace)
	}
	if err := groupArg("--lock", o.path); err != nil {
		return err
	}
	dialect, err := dialectOpt(o.dialect)
	if err != nil {
		return err
	}
	if o.rootOpt, err = sessionRootOpt(o.root, "--lock", o.path); err != nil {
		return err
	}
	if len(args) == 0 {
		return usageErr("no command given: put it after --, e.g. herald lock --lock %s -- ./backup.sh", o.path)
	}
	if err := checkCommand(args); err != nil {
		return err
	}
	if o.id == "" {
		o.id = defaultID()
	}
	if err := checkID(o.id); err != nil {
		return err
	}
	w := lockWait{}
	if o.timeout > 0 {
		w.deadline = time.Now().Add(o.timeout)
	}
	for {
		err := a.lockOnce(ctx, o, dialect, args, &w)
		if !errors.Is(err, errUnstartedLoss) || ctx.Err() != nil {
			return err
		}
		a.log.Warn(err.Error()+"; joining again, at the queue's end", "lock", o.path)
		w.rejoining = true
	}
}

// lockWait is what a lock's waits share across the copy's joins: lock's
// --timeout (deadline; zero: none), whether the copy joined before, and
// until when an owner before it may still run its command though no
// listing shows it any more (notBefore; see holding).
type lockWait struct {
	deadline, notBefore time.Time
	rejoining           bool
}

// lockOnce takes the lock and runs the command under it.
func (a *app) lockOnce(ctx context.Context, o lockOpts, dialect elect.Option, args []string, w *lockWait) error {
	h, s, err := a.acquireLock(ctx, o, dialect, w)
	if s != nil {
		defer a.closeOwned(ctx, s)
	}
	if err != nil {
		return err
	}
	if term := h.Term(); term != 0 {
		a.log.Info("lock acquired", "lock", o.path, "id", o.id, "node", h.Node(), "term", term)
	}
	env := []string{
		"HERALD_LOCK=" + o.path,
		"HERALD_NODE=" + h.Node(),
		"HERALD_TERM=" + strconv.FormatInt(h.Term(), 10),
		"HERALD_ID=" + o.id,
		"HERALD_ZK=" + strings.Join(s.Servers(), ","),
	}
	env = append(env, a.connEnv()...)
	if err := readSecretFiles(o.secrets); err != nil {
		return err
	}
	ann := newAnnouncer(ctx, a.log, o.nats, o.natsAuth, "herald-lock/"+o.id)
	defer ann.close()
	return a.holdAndRun(ctx, holding{h: h, recipe: elect.RecipeLock, args: args, env: env, grace: o.grace, graceSet: o.graceSet, ann: ann,
		timeout: s.Timeout(), notBefore: w.notBefore, startBy: w.deadline})
}

// acquireLock waits for the lock within --timeout, joining the queue
// again on a new session when its session expires while it waits (a
// pause, a partition), or its node is deleted, as run does. It returns the session the lock was
// taken on (or the last one, to close, with the error).
func (a *app) acquireLock(ctx context.Context, o lockOpts, dialect elect.Option, w *lockWait) (*elect.Handle, *elect.Session, error) {
	deadline := w.deadline
	for ; ; w.rejoining = true {
		s, err := a.openAgain(ctx, o.path, w.rejoining, deadline)
		if err != nil {
			return nil, nil, err
		}
		l, err := elect.NewLock(s, o.path, elect.CreateParents(), elect.WithID(o.id), dialect, elect.WatchForHazards(), elect.ProveSessionEnd(), elect.WaitsForPredecessor(), o.rootOpt)
		if err != nil {
			return nil, s, usageErr("--lock: %v", err)
		}
		a.warnRecipeMix(ctx, s, o.path, elect.RecipeLock, o.mixed)
		var h *elect.Handle
		if deadline.IsZero() {
			h, err = l.Acquire(ctx)
		} else {
			h, err = l.AcquireTimeout(ctx, time.Until(deadline))
		}
		switch {
		case err == nil:
			return h, s, nil
		case waitLost(err) != "" && ctx.Err() == nil && (deadline.IsZero() || time.Now().Before(deadline)):
			a.log.Warn(waitLost(err)+"; joining again, at the queue's end", "lock", o.path)
			if errors.Is(err, elect.ErrNodeDeleted) {
				w.notBefore = later(w.notBefore, time.Now().Add(predecessorBound(s.LongestTimeoutSeen())))
			}
			a.closeLost(ctx, s, deadline)
			continue
		}
		return nil, s, a.lockFailed(ctx, s, o, err)
	}
}

// closeLost closes the session of a waiter presumed lost before it joins
// again, letting its lingering connection delete its node once ZooKeeper
// answers (closeSettled), but not past --timeout: a lock given 10 s used
// to exit after 13 s, waiting a whole session timeout for that.
func (a *app) closeLost(ctx context.Context, s *elect.Session, deadline time.Time) {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	a.closeSettled(ctx, s)
}

// openAgain opens the session to wait for the lock on: the first within
// --connect-timeout, a later one (the session expired while it waited)
// waiting out a ZooKeeper outage until --timeout, if given, runs out
// (exit 75). ZooKeeper unreachable at the first is exit 69, as for who:
// a script tells "try again later" from a failure.
func (a *app) openAgain(ctx context.Context, path string, rejoining bool, deadline time.Time) (*elect.Session, error) {
	if !rejoining {
		s, err := a.openSession(ctx, true)
		return s, unreachableExit(err)
	}
	if deadline.IsZero() {
		return a.reopenSession(ctx)
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	s, err := a.reopenSession(dctx)
	if err != nil && ctx.Err() == nil && dctx.Err() != nil {
		return nil, &exitError{code: exitTempFail, err: fmt.Errorf("lock %s: ZooKeeper could not be reached again before --timeout ran out, after the session expired while waiting", path)}
	}
	return s, err
}

// lockFailed explains why the lock was not taken; a timeout names the
// holder, or the node that holds the queue up, or says that nobody holds
// it now (the timeout ran out first, or the holder let go just then), and
// exits 75.
func (a *app) lockFailed(ctx context.Context, s *elect.Session, o lockOpts, err error) error {
	if ctx.Err() != nil {
		return interrupted(ctx, "interrupted while waiting for the lock %s", o.path)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("lock %s: %w", o.path, err)
	}
	hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, herr := elect.ReadGroup(hctx, s, o.path)
	var why string
	switch {
	case herr == nil && v.Owner != nil:
		why = fmt.Sprintf("is held by %s (node %s, session %s); gave up after --timeout %v", v.Owner.ID, v.Owner.Node, v.Owner.SessionHex(), o.timeout)
	case herr == nil && v.Blocked != nil:
		why = fmt.Sprintf("is held by nobody: its queue %s; gave up after --timeout %v", waitsBehind(o.path, *v.Blocked), o.timeout)
	case herr == nil || errors.Is(herr, elect.ErrNoParent):
		why = fmt.Sprintf("is free: nobody holds it now; --timeout %v ran out before the lock could be taken (too short?)", o.timeout)
	default:
		why = fmt.Sprintf("was not taken within --timeout %v; who holds it is not known (reading the lock failed: %v)", o.timeout, herr)
	}
	return &exitError{code: exitTempFail, err: fmt.Errorf("lock %s %s", o.path, why)}
}
