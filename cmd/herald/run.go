package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
)

func init() { register(newRunCmd) }

type runOpts struct {
	election string
	id       string
	grace    time.Duration
	graceSet bool // --grace given, not its default
	nats     []string
	natsAuth natsAuth
	secrets  []*secretFlag
	rejoin   bool
	dialect  string
	// dialectOpt is dialect, checked.
	dialectOpt elect.Option
	root       string
	// rootOpt is root, checked.
	rootOpt elect.Option
	// mixed: --mixed-recipe, join a lock's group without a warning.
	mixed bool
}

func newRunCmd(a *app) *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "run --election PATH [flags] -- COMMAND [ARGS...]",
		Short: "Run a command on one candidate at a time: the elected leader",
		Long: `run joins the election at --election and, once elected, runs COMMAND. If the
leadership is lost (session expired, connection lost, node deleted), the
command's process group gets SIGTERM, then SIGKILL after --grace (sooner,
so that it is dead before the session can expire), and run exits with
status 3. When the command exits, run stops what it left running (its
process group, and on Linux what it started apart from it, a daemon's
setsid), resigns and exits with the command's status (128+N when signal N
killed it), and the next candidate takes over. SIGINT, SIGTERM, SIGHUP and
SIGQUIT stop the command and resign. With --rejoin, a runner that lost leadership stops the command
the same way and then campaigns again (on a new session if its session
expired), so it stays a hot standby instead of exiting. A watchdog process
stops the command the same way should run itself freeze (no sign of life
for half the session timeout) or be killed; killed, run's node is then
released as soon as nothing of the command is left, so that the next
candidate need not wait for the session to expire.

When the previous owner's node went without a release, the command
starts as soon as that owner's session is known to have ended (its runner
stops its command before then; each copy's session keeps a node in the
election's herald-office, or under --session-root for an election named
for Curator's mutex, to tell), or its runner records that its command
stopped (its node was deleted by hand), or after 11/12 of the session
timeout, by when a runner frozen or cut off has killed it: give every
copy the same --session-timeout.

The command finds its leadership in its environment: HERALD_ELECTION,
HERALD_NODE, HERALD_TERM (the fencing token), HERALD_ID, HERALD_ZK,
HERALD_RUN_ID (drawn for each command: it tells herald the command's
processes wherever they go), and the
last checkpoint any leader saved (HERALD_CHECKPOINT, HERALD_CHECKPOINT_TERM;
empty when there is none; HERALD_CHECKPOINT_ERROR says why when the node
holds something that is not a checkpoint, or one too big for an environment
variable, to be read with 'herald checkpoint get'). It saves progress with 'herald
checkpoint put', which ZooKeeper rejects once its leader is gone.`,
		Example: `  # three hosts run the same line; one at a time runs the job
  herald run --zk zk1:2181,zk2:2181 --election /jobs/nightly --id "$(hostname)" -- ./nightly.sh

  # inside nightly.sh: resume, then checkpoint each step
  step=${HERALD_CHECKPOINT:-0}
  herald checkpoint put "$((step+1))"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.graceSet = cmd.Flags().Changed("grace")
			return a.runElection(cmd.Context(), o, args)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.StringVar(&o.election, "election", "", "election path in ZooKeeper (required), e.g. /jobs/nightly")
	f.StringVar(&o.id, "id", "", "participant id stored in the candidate's node (default host-pid)")
	f.DurationVar(&o.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when the command must stop (once ownership is lost or in doubt, at most a sixth of the session timeout, so that it is dead before the session can expire)")
	f.StringSliceVar(&o.nats, "nats", nil, "NATS URL(s) to announce this runner's own transitions on (optional)")
	o.secrets = o.natsAuth.addFlags(f)
	addSecretFiles(f, o.secrets)
	f.BoolVar(&o.rejoin, "rejoin", false, "after losing leadership, stop the command and campaign again instead of exiting 3")
	dialectFlag(f, &o.dialect)
	sessionRootFlag(f, &o.root)
	mixedRecipeFlag(f, &o.mixed)
	return cmd
}

// checkID refuses an --id ZooKeeper would not take as the node's data,
// before any campaign, naming the flag (the library's error, given at
// the campaign, was taken for a bad --election or --lock).
func checkID(id string) error {
	if len(id) > maxID {
		return usageErr("--id is %d bytes long: give at most %d (it is the data of the node herald creates)", len(id), maxID)
	}
	if !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return usageErr("--id %q holds a character that does not print (a control character such as a newline or a tab, a line separator, a direction override) or bytes that are not UTF-8: give a printable id; it is shown on one line in logs, events and who's tables", id)
	}
	return nil
}

// maxID is the longest participant id the elect package takes.
const maxID = 1024

func defaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "herald"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

func (a *app) runElection(ctx context.Context, o runOpts, args []string) error {
	ctx, stop := holderContext(ctx, a.logs)
	defer stop()
	defer a.noSuspend()()
	if o.election == "" {
		return missingPathFlag("run", "--election", "/jobs/nightly", "./job.sh", args)
	}
	if err := groupArg("--election", o.election); err != nil {
		return err
	}
	var err error
	if o.dialectOpt, err = dialectOpt(o.dialect); err != nil {
		return err
	}
	if o.rootOpt, err = sessionRootOpt(o.root, "--election", o.election); err != nil {
		return err
	}
	if o.grace <= 0 {
		return usageErr("--grace %v: must be positive: it is the time the command gets between SIGTERM and SIGKILL (for a SIGKILL at once, give a very short one, such as --grace 1ms)", o.grace)
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
	if err := readSecretFiles(o.secrets); err != nil {
		return err
	}
	ann := newAnnouncer(ctx, a.log, o.nats, o.natsAuth, "herald-run/"+o.id)
	defer ann.close()
	var lost error          // the leadership lost last, when campaigning again
	var notBefore time.Time // see holding
	for {
		err := a.leadOnce(ctx, o, args, ann, lost != nil, &notBefore)
		if errors.Is(err, errUnstartedLoss) && ctx.Err() == nil {
			a.log.Warn(err.Error()+"; joining again, at the queue's end", "election", o.election)
			lost = err
			continue
		}
		var ee *exitError
		if lost != nil && (errors.As(err, &ee) && ee.code == exitUsage || refusedIdentity(err)) {
			// Flags that held at start no longer do (a client
			// certificate expired, an auth file gone, or holding other
			// credentials that ZooKeeper refuses): the runner cannot
			// campaign again, and what it ends with is the leadership
			// it lost.
			return &exitError{code: exitNotLeader, err: fmt.Errorf("%v; could not campaign again: %w", lost, err)}
		}
		if !o.rejoin || ctx.Err() != nil || !errors.As(err, &ee) || ee.code != exitNotLeader {
			return err
		}
		lost = err
		a.log.Warn("lost leadership; campaigning again (--rejoin)", "election", o.election, "err", err)
	}
}

// refusedIdentity reports whether ZooKeeper refused the session's
// identity: not allowed on the group (its ACL), no usable identity for
// the ACL herald asked for, or credentials it rejected.
func refusedIdentity(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) || errors.Is(err, zk.ErrInvalidACL)
}

// leadOnce campaigns, runs the command while elected, and returns what run
// would exit with.
func (a *app) leadOnce(ctx context.Context, o runOpts, args []string, ann *announcer, rejoining bool, notBefore *time.Time) error {
	h, s, err := a.campaign(ctx, o, rejoining, notBefore)
	if err != nil {
		return err
	}
	defer a.closeOwned(ctx, s)
	a.log.Info("elected", "election", o.election, "id", o.id, "node", h.Node(), "term", h.Term())
	env := []string{
		"HERALD_ELECTION=" + o.election,
		"HERALD_NODE=" + h.Node(),
		"HERALD_TERM=" + strconv.FormatInt(h.Term(), 10),
		"HERALD_ID=" + o.id,
		"HERALD_ZK=" + strings.Join(s.Servers(), ","),
	}
	env = append(env, a.connEnv()...)
	cp, err := a.checkpointEnv(ctx, h, s, o.election)
	if err != nil {
		// Nothing started: given up as an owner interrupted before its
		// command is, not before the command of the owner before it is
		// sure to be stopped.
		ho := holding{h: h, recipe: elect.RecipeElection, timeout: s.Timeout(), notBefore: *notBefore}
		quit := make(chan struct{})
		defer close(quit)
		a.giveUpUnstarted(ctx, ho, watchPredecessor(ho, quit))
		return err
	}
	env = append(env, cp...)
	return a.holdAndRun(ctx, holding{h: h, recipe: elect.RecipeElection, args: args, env: env, grace: o.grace, graceSet: o.graceSet, ann: ann,
		timeout: s.Timeout(), notBefore: *notBefore})
}

// campaign joins the election and waits to be elected. A session that
// expires while waiting is replaced and the candidate joins again (so does
// one whose node someone deleted while it waited), waiting
// out a ZooKeeper outage (reopenSession), as does a runner that rejoins
// after it lost leadership; only the first session gives up after
// --connect-timeout.
func (a *app) campaign(ctx context.Context, o runOpts, rejoining bool, notBefore *time.Time) (*elect.Handle, *elect.Session, error) {
	for {
		open := a.openSession
		if rejoining {
			open = func(ctx context.Context, _ bool) (*elect.Session, error) { return a.reopenSession(ctx) }
		}
		s, err := open(ctx, true)
		if err != nil {
			return nil, nil, unreachableExit(err) // 69 at the first, as for who
		}
		e, err := elect.NewElection(s, o.election, elect.CreateParents(), elect.WithID(o.id), o.dialectOpt, elect.WatchForHazards(), elect.ProveSessionEnd(), elect.WaitsForPredecessor(), o.rootOpt)
		if err != nil {
			s.Close()
			return nil, nil, usageErr("--election: %v", err)
		}
		a.warnRecipeMix(ctx, s, o.election, elect.RecipeElection, o.mixed)
		if l, err := e.Leader(ctx); err == nil {
			a.log.Info("waiting for leadership", "election", o.election, "leader", l.ID, "node", l.Node)
		}
		h, err := e.Campaign(ctx, o.id)
		if err == nil {
			return h, s, nil
		}
		a.closeSettled(ctx, s)
		switch {
		case ctx.Err() != nil:
			return nil, nil, interrupted(ctx, "interrupted while waiting for leadership of %s", o.election)
		case waitLost(err) != "":
			a.log.Warn(waitLost(err)+"; joining again, at the queue's end", "election", o.election)
			if errors.Is(err, elect.ErrNodeDeleted) {
				*notBefore = later(*notBefore, time.Now().Add(predecessorBound(s.LongestTimeoutSeen())))
			}
			rejoining = true
			continue
		}
		return nil, nil, fmt.Errorf("campaign for %s: %w", o.election, err)
	}
}

// waitLost says why a wait in line ended that joining again mends: the
// session expired, or someone deleted our node (a cleanup, or a hand that
// meant the owner's); "" for any other end.
func waitLost(err error) string {
	switch {
	case errors.Is(err, elect.ErrSessionLost):
		return "session expired while waiting"
	case errors.Is(err, elect.ErrNodeDeleted):
		return "our node was deleted while we waited"
	}
	return ""
}

// nodeThere reports whether group holds the node name (false when it
// cannot tell).
func nodeThere(s *elect.Session, group, name string) bool {
	if name == "" {
		return false
	}
	there, _, err := s.Conn().Exists(group + "/" + name)
	return err == nil && there
}

// checkpointEnv hands the last checkpoint to the child: its data and the
// term of the leader that saved it. Both are empty when there is none. A
// read that fails for want of a server is tried again while h leads: a
// child started without a checkpoint that exists would redo finished work.
// When h stops leading, or ctx ends, holdAndRun says so and starts
// nothing. A checkpoint node holding something else is named in
// HERALD_CHECKPOINT_ERROR, and the child starts without it; one that
// cannot be read at all (its ACL) is an error, and nothing starts. A
// checkpoint too big for an environment variable, or holding NUL bytes,
// which one cannot carry, is not passed: the child starts with
// HERALD_CHECKPOINT empty, its term, and HERALD_CHECKPOINT_ERROR telling
// it to read it with herald checkpoint get.
func (a *app) checkpointEnv(ctx context.Context, h *elect.Handle, s *elect.Session, group string) ([]string, error) {
	none := []string{"HERALD_CHECKPOINT=", "HERALD_CHECKPOINT_TERM=", "HERALD_CHECKPOINT_ERROR="}
	bo := backoff.NewExponentialBackOff(backoff.WithInitialInterval(100*time.Millisecond), backoff.WithMaxInterval(2*time.Second), backoff.WithMaxElapsedTime(0))
	for attempt := 1; ; attempt++ {
		cp, err := readWhileHeld(ctx, h, s, group)
		switch {
		case err == nil && h.Term() > 0 && cp.Term > h.Term() && nodeThere(s, group, cp.Node):
			// Written by a node after ours that is still in the group: as
			// the fence reads it, a second owner's (a client that cannot
			// see our node), which deposes us.
			msg := fmt.Sprintf("the checkpoint names term %d, later than this leader's %d, written by %s, a node after ours still in the group: a second owner's (a client that cannot see herald's node); the child starts without it, and its checkpoint puts are refused while that node is there", cp.Term, h.Term(), cp.Node)
			a.log.Warn("two owners possible: a node after ours wrote the last checkpoint as owner; the child starts without it (HERALD_CHECKPOINT_ERROR)", "term", cp.Term, "by", cp.Node, "leader_term", h.Term())
			return append(none[:2:2], "HERALD_CHECKPOINT_ERROR="+msg), nil
		case err == nil && h.Term() > 0 && cp.Term > h.Term():
			// A leader before us has an older term: no leader of this
			// group wrote it.
			msg := fmt.Sprintf("the checkpoint names term %d, later than this leader's %d, so no leader of this group wrote it (copied from another group, or written by hand); the child starts without it, and its first checkpoint put replaces it", cp.Term, h.Term())
			a.log.Warn("the last checkpoint is not this group's; the child starts without it (HERALD_CHECKPOINT_ERROR)", "term", cp.Term, "by", cp.Node, "leader_term", h.Term())
			return append(none[:2:2], "HERALD_CHECKPOINT_ERROR="+msg), nil
		case err == nil && bytes.IndexByte(cp.Data, 0) >= 0:
			// An environment variable ends at its first NUL: passing the
			// rest, or the data without its NULs, would pass other data.
			msg := fmt.Sprintf("the last checkpoint (%d bytes, term %d) holds NUL bytes, which an environment variable cannot carry; read it with: herald checkpoint get --raw", len(cp.Data), cp.Term)
			a.log.Warn("resuming from a checkpoint the environment cannot carry (NUL bytes); the child reads it with herald checkpoint get --raw (HERALD_CHECKPOINT_ERROR)", "term", cp.Term, "by", cp.ID, "bytes", len(cp.Data))
			return []string{"HERALD_CHECKPOINT=", "HERALD_CHECKPOINT_TERM=" + strconv.FormatInt(cp.Term, 10), "HERALD_CHECKPOINT_ERROR=" + msg}, nil
		case err == nil && len(cp.Data) > maxEnvCheckpoint:
			// An environment string that long would keep the command
			// from starting at all: it reads the checkpoint itself.
			msg := fmt.Sprintf("the last checkpoint (%d bytes, term %d) is too big to pass in HERALD_CHECKPOINT (at most %d bytes); read it with: herald checkpoint get", len(cp.Data), cp.Term, maxEnvCheckpoint)
			a.log.Warn("resuming from a checkpoint too big for the environment; the child reads it with herald checkpoint get (HERALD_CHECKPOINT_ERROR)", "term", cp.Term, "by", cp.ID, "bytes", len(cp.Data))
			return []string{"HERALD_CHECKPOINT=", "HERALD_CHECKPOINT_TERM=" + strconv.FormatInt(cp.Term, 10), "HERALD_CHECKPOINT_ERROR=" + msg}, nil
		case err == nil:
			a.log.Info("resuming from checkpoint", "term", cp.Term, "by", cp.ID, "bytes", len(cp.Data))
			return []string{"HERALD_CHECKPOINT=" + string(cp.Data), "HERALD_CHECKPOINT_TERM=" + strconv.FormatInt(cp.Term, 10), "HERALD_CHECKPOINT_ERROR="}, nil
		case errors.Is(err, elect.ErrNoCheckpoint):
			return none, nil
		case errors.Is(err, elect.ErrBadCheckpoint):
			a.log.Warn("the last checkpoint is unreadable; the child starts without it (HERALD_CHECKPOINT_ERROR)", "err", err)
			return append(none[:2:2], "HERALD_CHECKPOINT_ERROR="+envSafe([]byte(err.Error()))), nil
		case !transient(err):
			return nil, fmt.Errorf("cannot read the last checkpoint of %s, so the command was not started: %w", group, err)
		}
		a.log.Warn("could not read the last checkpoint; trying again before the child starts", "attempt", attempt, "err", err)
		select {
		case <-h.Done():
			return none, nil
		case <-ctx.Done():
			return none, nil
		case <-time.After(bo.NextBackOff()):
		}
	}
}

// transient reports whether a read failed for want of a server's answer
// in time, which trying again may mend.
func transient(err error) bool {
	return errors.Is(err, elect.ErrUnreachable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrClosing)
}

// readWhileHeld reads the group's checkpoint, giving up after a session
// timeout or as soon as h stops leading.
func readWhileHeld(ctx context.Context, h *elect.Handle, s *elect.Session, group string) (elect.Checkpoint, error) {
	rctx, cancel := context.WithTimeout(ctx, s.Timeout())
	defer cancel()
	go func() {
		select {
		case <-h.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	return elect.ReadCheckpoint(rctx, s, group)
}

// envSafe drops NUL bytes, which an environment variable cannot hold.
func envSafe(b []byte) string { return strings.ReplaceAll(string(b), "\x00", "") }
