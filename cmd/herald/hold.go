package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/pflag"

	"github.com/zkherald/herald/elect"
)

// holding is what run and lock do once they own their group: run the child,
// and stop it the moment ownership is no longer safe.
type holding struct {
	h      *elect.Handle
	recipe elect.Recipe
	args   []string
	env    []string
	grace  time.Duration
	// graceSet: --grace was given; its default, cut short on a loss as
	// its help says, is not warned about.
	graceSet bool
	ann      *announcer
	// timeout is the session's: the watchdog stops the command after half
	// of it without a sign of life from herald (see watchdog_unix.go).
	timeout time.Duration
	// notBefore: the command starts no sooner, whatever the gate says.
	// Someone deleted this copy's node while it waited, or while it owned
	// before its command started (a deleteall, a cleanup): the owner it
	// was behind may have been deposed by the same hand, and its command
	// may run until then, while a group made again shows nobody before us.
	notBefore time.Time
	// startBy: lock's --timeout; a command not started by then is not
	// started at all.
	startBy time.Time
}

// errUnstartedLoss: ownership ended before the command started (our node
// deleted, or the session ended, while we waited for the owner before us
// to stop). A copy joins again, as a waiter whose node was deleted does;
// by then the owner before us is surely stopped (giveUpUnstarted waits
// for that).
var errUnstartedLoss = errors.New("lost ownership before the command started")

// errStartTimedOut: lock's --timeout ran out while the command waited for
// the owner before it to stop.
var errStartTimedOut = errors.New("--timeout ran out before the command could start")

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lossGrace is the most time a command gets between SIGTERM and SIGKILL
// once the ownership it runs under is lost or in doubt: a sixth of the
// session timeout, whatever --grace says. ZooKeeper expires a session a
// whole timeout after it last heard from the client, and the client pings
// every third of it; a client that hears nothing gives the connection up
// two thirds of the timeout after its last reply. So the session may
// expire, and the next owner start, a third of the timeout after herald
// learns the connection is gone; the SIGKILL comes halfway there, leaving
// the other half for a round trip and a busy machine. A member cut off
// from the ZooKeeper leader goes on answering pings; the session's syncs
// find it out half a timeout after the last the leader answered, which
// leaves the SIGKILL before the leader can expire the session too (see
// elect's leader_lease.go).
func lossGrace(timeout time.Duration) time.Duration { return timeout / 6 }

// watchdogKillBy is how long after herald's last heartbeat the watchdog's
// SIGKILL comes at the latest: the session cannot expire sooner than two
// thirds of the timeout after herald's last sign of life (its last ping
// may be a third of the timeout older), and the SIGKILL comes a twelfth
// before that. A runner killed outright (kill -9) so leaves its command
// up to seven twelfths of the timeout after SIGTERM, a frozen one (found
// out after half the timeout) a twelfth.
func watchdogKillBy(timeout time.Duration) time.Duration { return timeout * 7 / 12 }

// plan is how the command's process group is stopped while o is held:
// --grace, cut to lossGrace should ownership be lost meanwhile, or to
// nothing should it be lost to a client that does not wait (foreignNext).
// That is asked when the loss comes, for it may come during a stop begun
// for another reason (a signal to herald, strays of a command that
// exited): a deletion by hand then, with Curator or the classic recipe's
// client next, left a command ignoring SIGTERM the sixth of the timeout
// from the SIGTERM beside that client's ownership (found by a review).
func (o holding) plan() stopPlan {
	return stopPlan{grace: o.grace, doubt: o.h.Done(), safe: lossGrace(o.timeout), handedOver: o.foreignNext}
}

// lossPlan is plan once ownership is lost. A node deleted by hand, the
// session alive, hands over at once to a client that is not herald: it
// waits for no record that our command stopped, as a herald runner next
// in line does (predecessorGate). So where the guard last saw one in the
// group, the command gets SIGKILL at once; with lossGrace, a command that
// ignored SIGTERM ran beside Curator's next owner for up to a sixth of the
// timeout (found by an adversarial test, an operator's deleteall).
func (o holding) lossPlan() stopPlan {
	p := o.plan()
	if o.foreignNext() {
		p.safe = 0
	}
	return p
}

// foreignNext reports whether a client that waits for no record of our
// command's stop may own now (see lossPlan): our node was deleted by hand
// in a group where one was seen, or we stepped down for one that cannot
// read our node. That client owns as it joins (Kazoo's beside herald's
// default names), so with lossGrace a command ignoring SIGTERM ran the
// sixth of the timeout beside it (found by a review of this code). So
// may one that joined unseen once the group's ACL stopped our listing
// (ReasonGroupUnreadable): ZooKeeper told us of no join since, and the
// sixth of the timeout went beside a Kazoo lock that owned (found by a
// review).
func (o holding) foreignNext() bool {
	switch o.h.Reason() {
	case elect.ReasonDeleted:
		return o.h.ForeignInGroup()
	case elect.ReasonTwoOwners, elect.ReasonGroupUnreadable:
		return true
	}
	return false
}

// graceWarning warns, once per herald, that a --grace given is longer
// than herald can give a command whose ownership is in doubt. The
// default's is said at debug level only: the flag's help says it.
var graceWarning sync.Once

func (a *app) warnGrace(o holding) {
	if o.grace <= lossGrace(o.timeout) {
		return
	}
	log := a.log.Warn
	if !o.graceSet {
		log = a.log.Debug
	}
	graceWarning.Do(func() {
		log("--grace is longer than the session allows once ownership is in doubt: the command gets SIGKILL sooner then, before the session can expire and another owner start. "+
			"A signal to herald, or the command's own exit (for what it left in its group), gets the whole --grace while ownership holds",
			"grace", o.grace, "session_timeout", o.timeout, "grace_on_loss", lossGrace(o.timeout), "grace_if_herald_dies", "up to "+watchdogKillBy(o.timeout).String()+" after its last heartbeat")
	})
}

// what names the ownership in messages.
func (o holding) what() string {
	if o.recipe == elect.RecipeLock {
		return "the lock " + o.h.Group()
	}
	return "leadership of " + o.h.Group()
}

// release gives ownership back with a fresh context: the command's own
// context may already be cancelled by a signal. It is called once no
// command of ours, nor of an owner before us, can still run. When
// ownership had already ended (our node deleted by hand, say), it records
// that our command is stopped, for the next owner waiting on it (see
// predecessorGate).
func (o holding) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lost := !o.h.Held()
	if o.recipe == elect.RecipeLock {
		_ = o.h.Release(ctx)
	} else {
		_ = o.h.Resign(ctx)
	}
	if lost {
		_ = o.h.RecordStopped(ctx)
	}
	o.ann.lost(o.h, o.recipe)
}

// holdAndRun runs the child while o.h is held. It selects at once on the
// child's exit, the loss of ownership and a shutdown signal, and returns the
// child's exit code (as an *exitError when not 0), or exitNotLeader when
// ownership was lost and the child had to be stopped.
func (a *app) holdAndRun(ctx context.Context, o holding) error {
	guarded := a.awaitGuard(ctx, o)
	quit := make(chan struct{})
	defer close(quit)
	safe := watchPredecessor(o, quit)
	if err := a.mayStart(ctx, o, safe, guarded); err != nil {
		return err
	}
	if safe.opened() {
		// Every owner before us has stopped: our records say so, and the
		// next runner need not wait for those owners again.
		o.h.Vouch()
	}
	o.ann.gained(o.h, o.recipe)
	c, wd, err := a.startCommand(ctx, o)
	if err != nil {
		o.release()
		return err
	}
	defer c.takeTerminalBack()
	defer c.stopReaping()
	if o.recipe == elect.RecipeElection {
		a.acknowledge(ctx, c, o)
	}
	return a.superviseCommand(ctx, c, wd, o)
}

// acknowledge records in the office that the command runs (its pid). It
// gives up as soon as ownership ends: superviseCommand, which stops the
// command on a loss, runs only after it. An acknowledgment in flight on a
// connection delayed, then cut off, waited on the client's reconnect
// after the session was suspended, and the command ran on, unstopped,
// until the session was gone and Curator's next owner had started beside
// it (found by a review, TestDelayedOwnerStepsDownBeforeForeignNext).
func (a *app) acknowledge(ctx context.Context, c *child, o holding) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-o.h.Done():
			cancel()
		case <-actx.Done():
		}
	}()
	if err := o.h.Acknowledge(actx, fmt.Sprintf("pid %d", c.Pid())); err != nil && o.h.Held() {
		a.log.Warn("could not record the leader acknowledgment", "err", err)
	}
}

// superviseCommand waits, the command running, for its exit, the loss of
// ownership or a shutdown signal, and acts on it; it starts the watchdog
// again should it die meanwhile, not by its own hand (see keepWatchdog).
func (a *app) superviseCommand(ctx context.Context, c *child, wd *watchdog, o holding) error {
	var restarted time.Time // when keepWatchdog last started one
	for {
		select {
		case <-c.done:
			p := o.plan()
			p.now = forced(ctx) // a second signal meanwhile kills them at once
			if stopWatched(c, wd, func() {
				c.sweep(p, func(left []string) {
					a.log.Warn("the command exited leaving processes behind (in its process group, or started apart from it); stopping them (SIGTERM, SIGKILL after --grace, or at once on a second signal) before giving up ownership",
						"pgid", c.Pid(), "stopping", strings.Join(left, ", "), "grace", o.grace)
				})
			}) {
				// The watchdog stopped the command while herald was frozen:
				// ownership went unvouched for, and is likely gone.
				return watchdogStopped(o)
			}
			o.release()
			a.log.Info("child exited; gave up ownership", "code", c.code, "group", o.h.Group())
			return codeErr(c.code)
		case <-o.h.Done():
			p := o.lossPlan()
			a.log.Error("lost "+o.what()+"; stopping the child", "reason", o.h.Reason(), "err", o.h.Err(), "pid", c.Pid(), "grace", min(o.grace, p.safe), "foreign_next", o.foreignNext())
			var code int
			if stopWatched(c, wd, func() { code = c.stop(p) }) {
				// Herald was frozen: the watchdog stopped the command, and
				// the loss may be what herald heard on thawing.
				return watchdogStopped(o)
			}
			o.release()
			return &exitError{code: exitNotLeader, err: fmt.Errorf("lost %s (%s) while the child ran; stopped it (its exit status %d)",
				o.what(), lostWhy(o.h), code)}
		case <-ctx.Done():
			var err error
			stopWatched(c, wd, func() { err = a.stopOnSignal(ctx, c, o) })
			return err
		case <-wd.exited():
			wd, restarted = a.keepWatchdog(ctx, c, wd, o, restarted)
		}
	}
}

// keepWatchdog is what follows the watchdog's exit while the command
// runs. One that fired is stopping the command, which exits next: it is
// kept, to say so. One that died otherwise (someone's kill -9, an
// out-of-memory killer) left the command unguarded: a runner frozen
// after that ran its command, which ignored SIGTERM, beside the next
// owner's for 5.1 s (found by an adversarial test), and one killed then
// left its command's strays running for good. The runner is running this
// very code, so the moments without a watchdog are not a freeze: it
// starts a new one over the same process group. Should that fail, the
// command runs on as it does when no watchdog could be started at all,
// and so it does when the one started again (at restarted) dies within a
// second, which would otherwise be started again and again.
func (a *app) keepWatchdog(ctx context.Context, c *child, wd *watchdog, o holding, restarted time.Time) (*watchdog, time.Time) {
	if wd.hasFired() {
		return wd.spent(), restarted
	}
	wd.stop() // its pipe
	if !restarted.IsZero() && time.Since(restarted) < time.Second {
		// One that dies as soon as it is started again would be
		// started again and again: take it for one that cannot start.
		a.log.Warn("the watchdog started again died within a second, so it is not started again: should herald freeze, the command runs on until it thaws (fenced writes are still refused)",
			"pid", wd.pid())
		return nil, restarted
	}
	// The command runs meanwhile, and this loop hears no loss and no
	// signal: the wait ends at either, and lasts a twelfth of the timeout
	// at most, not the first watchdog's wait. A new watchdog slow to say
	// it watches (held as it started) held the loop for 10 s, and a
	// deposed command ran on beside the next owner's (found by an
	// adversarial test).
	next, err := a.startWatchdog(ctx, c, o, o.timeout/12)
	if err != nil {
		a.log.Warn("the watchdog died, and no new one could be started: should herald freeze, the command runs on until it thaws (fenced writes are still refused)",
			"pid", wd.pid(), "err", err)
		return nil, restarted
	}
	a.log.Warn("the watchdog died without stopping the command (killed?): started a new one", "pid", wd.pid(), "watchdog", next.pid(), "group", o.h.Group())
	return next, time.Now()
}

// mayStart waits until the command may start: the owner before us surely
// stopped (the gate), and our node confirmed by the servers. It returns
// what holdAndRun returns when the command must not start.
func (a *app) mayStart(ctx context.Context, o holding, safe *predecessorGate, guarded bool) error {
	awaited := errors.New("interrupted")
	if guarded {
		awaited = a.awaitPredecessor(ctx, o, safe)
	}
	if errors.Is(awaited, errStartTimedOut) {
		// Leave without a release: our node goes with the session, and
		// the next owner waits for the owners before us as we did.
		return &exitError{code: exitTempFail, err: fmt.Errorf("%s: %w (the owner before us may still be stopping its command)", o.what(), errStartTimedOut)}
	}
	if awaited != nil {
		a.giveUpUnstarted(ctx, o, safe)
		return interrupted(ctx, "interrupted before the command started; gave up %s", o.what())
	}
	// The run note is made before the look that confirms our node: a
	// deleteall that look did not see comes after the note, and so does
	// the node of any copy that joins the group made anew, which then
	// finds the note. Made after it, the note could come after such a
	// copy's look, and its command start beside ours.
	a.markRunning(o)
	if err := confirmOwned(ctx, o); err != nil {
		// Lost between winning and here (the environment holds the term,
		// which is 0 if ownership ended before it was known): never start
		// the child for an owner that is already deposed, nor announce it.
		a.giveUpUnstarted(ctx, o, safe)
		if ctx.Err() != nil {
			return interrupted(ctx, "interrupted before the command started; gave up %s", o.what())
		}
		if r := o.h.Reason(); r == elect.ReasonTwoOwners || r == elect.ReasonUnreadable || r == elect.ReasonGroupUnreadable {
			return &exitError{code: exitNotLeader, err: fmt.Errorf("lost %s (%s) before the command started", o.what(), err)}
		}
		return &exitError{code: exitNotLeader, err: fmt.Errorf("%w: %s (%s)", errUnstartedLoss, o.what(), err)}
	}
	return nil
}

// stopWatched runs stop, which stops the command, with the watchdog still
// watching where it can tell itself from the command (watchdogThroughStop):
// a runner frozen between its SIGTERM and its SIGKILL must not leave a
// command that ignores SIGTERM running beside the next owner's. Then it
// says goodbye to the watchdog, and reports whether the watchdog stopped
// the command first (herald was frozen).
func stopWatched(c *child, wd *watchdog, stop func()) bool {
	if !watchdogThroughStop {
		fired := wd.stop()
		stop()
		return fired
	}
	c.keeper = wd.pid()
	stop()
	fired := wd.stop()
	c.keeper = 0
	return fired
}

// markRunning notes, outside the group, that our command may run from
// now on (elect.Handle.MarkRunning): a copy that comes to own after a
// deleteall of the group, its first node, waits for that note to go.
// Without the note it would not.
func (a *app) markRunning(o holding) {
	ctx, cancel := context.WithTimeout(context.Background(), min(5*time.Second, o.timeout/3))
	defer cancel()
	if err := o.h.MarkRunning(ctx); err != nil {
		a.log.Warn("could not note our command under the session root: should someone delete the whole group (a deleteall) while herald is frozen, a copy that joins it afterwards will not wait for our command to stop", "group", o.h.Group(), "err", err)
	}
}

// watchdogSpec is how a watchdog watches a command (see startWatchdog):
// it stops the command after "after" without a beat, with grace between
// SIGTERM and SIGKILL, but kills it no later than killBy after the last
// beat. release, when not nil, is how to start the releaser (herald's
// arguments before --pgid and --strays, see release_abandoned.go) should
// the runner die while it owns: the watchdog starts it as it kills what is
// left of the command, and it releases the dead runner's node once all of
// it is gone. env is added to the watchdog's environment (the connection
// settings the releaser needs). The runner waits up to ready for it to say
// it watches, and not past abort (ownership ended) or cancel (a signal).
type watchdogSpec struct {
	after, grace, killBy, ready time.Duration
	release, env                []string
	stderr                      io.Writer
	log                         *slog.Logger
	abort, cancel               <-chan struct{}
}

// startWatchdog starts a watchdog over c for o, waiting up to ready for it
// to say it watches.
func (a *app) startWatchdog(ctx context.Context, c *child, o holding, ready time.Duration) (*watchdog, error) {
	return startWatchdog(c, watchdogSpec{after: o.timeout / 2, grace: o.grace, killBy: watchdogKillBy(o.timeout), ready: ready,
		release: a.releaseSpec(o), env: a.connEnv(), stderr: a.stderr, log: a.log, abort: o.h.Done(), cancel: ctx.Done()})
}

// startCommand starts the command, held (see gateArg) until its watchdog
// runs, and the watchdog.
func (a *app) startCommand(ctx context.Context, o holding) (*child, *watchdog, error) {
	in, closeIn := commandStdin(a.stdin)
	c, err := startChild(o.args, o.env, in, a.stdout, a.stderr)
	closeIn() // the command has its own copy
	if err != nil {
		return nil, nil, err
	}
	c.stuck = func(left []string) {
		a.log.Error("the command's processes outlived their SIGKILL (stuck in the kernel: I/O on a hung mount, a frozen cgroup?); they still hold what the command held, so herald hands over only once they are gone. To give up now, kill herald itself: the next owner then waits for its session to expire",
			"left", strings.Join(left, ", "), "group", o.h.Group())
	}
	go a.watchStopped(c, o)
	a.warnGrace(o)
	wd, err := a.startWatchdog(ctx, c, o, watchdogReadyWait)
	// Ownership asked for again, now that the watchdog watches (a freeze
	// from here on is its to stop): confirmOwned was answered before the
	// gain was announced (up to announceTimeout on a NATS server that does
	// not answer) and before the child and the watchdog were started, and
	// ownership could end meanwhile (a deletion by hand, a freeze past
	// the session). The command then started all the same, beside the next
	// owner's, which had waited its bound or found the session ended
	// (found by an adversarial test). Held, the command never runs.
	if lerr := confirmOwned(ctx, o); lerr != nil {
		c.abandon()
		stopWatched(c, wd, func() { c.stop(o.plan()) })
		if ctx.Err() != nil {
			return nil, nil, interrupted(ctx, "interrupted before the command started; gave up %s", o.what())
		}
		return nil, nil, &exitError{code: exitNotLeader, err: fmt.Errorf("%w: %s (%s)", errUnstartedLoss, o.what(), lerr)}
	}
	c.begin() // only now, with the watchdog watching its group
	a.log.Info("child started", "pid", c.Pid(), "watchdog", wd.pid(), "group", o.h.Group(), "node", o.h.Node(), "term", o.h.Term(), "cgroup", c.cgroupForLog())
	if err != nil && !c.exited() {
		a.log.Warn("no watchdog: should herald freeze, the command runs on until it thaws (fenced writes are still refused)", "err", err)
	}
	return c, wd, nil
}

// stopOnSignal stops the command when herald was told to stop: SIGTERM,
// SIGKILL after --grace, or at once on a second signal; then it gives up
// ownership and returns the command's status.
func (a *app) stopOnSignal(ctx context.Context, c *child, o holding) error {
	a.log.Info("signal received; stopping the child (a second signal kills it at once)", "signal", context.Cause(ctx), "pid", c.Pid(), "grace", o.grace)
	p := o.plan()
	p.now = forced(ctx)
	go func() {
		select {
		case <-p.now:
			a.log.Warn("second signal: killing the command now (SIGKILL)", "pid", c.Pid())
		case <-c.done:
		}
	}()
	code := c.stop(p)
	select {
	case <-p.now: // said above
	default:
		if c.killed {
			a.log.Warn("the command did not end within --grace after SIGTERM: killed it (SIGKILL)", "pid", c.Pid(), "grace", o.grace)
		}
	}
	o.release()
	return codeErr(code)
}

// watchdogStopped gives up ownership after the watchdog stopped the
// command while herald was frozen, and says so. Thawed, herald hears of
// its loss within moments when the freeze outlived the session: it waits
// a quarter of the session timeout to give the reason, rather than say
// only that it gave up what it had already lost.
func watchdogStopped(o holding) error {
	t := time.NewTimer(o.timeout / 4)
	defer t.Stop()
	select {
	case <-o.h.Done():
	case <-t.C:
	}
	why := "gave it up"
	if !o.h.Held() {
		why = fmt.Sprintf("on waking it found %s lost (%s)", o.what(), lostWhy(o.h))
	}
	o.release()
	return &exitError{code: exitNotLeader, err: fmt.Errorf("the watchdog stopped the command: herald gave no sign of life for half the session timeout (%v), so it could not vouch for %s; %s",
		o.timeout/2, o.what(), why)}
}

// releaseSpec is how the watchdog starts the releaser should this runner
// die while it owns (see release_abandoned.go): herald with the
// connection this runner has (the rest of it, credentials and TLS, comes
// in connEnv), naming our node. Every step of it is bounded by the
// session timeout, so that it never lingers.
func (a *app) releaseSpec(o holding) []string {
	return []string{"--zk", strings.Join(o.h.Session().Servers(), ","), "--session-timeout", o.timeout.String(), "--connect-timeout", o.timeout.String(),
		releaseArg, "--node", o.h.NodePath(), "--id", o.h.ID(), "--term", strconv.FormatInt(o.h.Term(), 10),
		"--recipe", string(o.recipe), "--within", o.timeout.String(), "--note", o.h.RunNote()}
}

// lostWhy says why ownership ended: the reason, or for a step-down the
// whole story (who joined, and the dialect that would share the group),
// and for a node the owner may not read, what to grant.
func lostWhy(h *elect.Handle) string {
	if r := h.Reason(); errors.Is(h.Err(), elect.ErrUnsafeGroup) || r == elect.ReasonUnreadable || r == elect.ReasonGroupUnreadable {
		return h.Err().Error()
	}
	return string(h.Reason())
}

// guardWait bounds how long run and lock wait for the owner's first look
// at its group before they start the command anyway.
const guardWait = 5 * time.Second

// awaitGuard waits until the owner has listed its group and found no
// client that cannot read its node (elect.Handle.Guarded), or ownership
// ended, before the command starts: a client that came to own while we
// waited (one that cannot see our node owns at once) then never has our
// command run beside it. It is one round trip; should the listing not come
// within guardWait, the command starts and the guard goes on watching.
// It returns false when a signal came first.
func (a *app) awaitGuard(ctx context.Context, o holding) bool {
	t := time.NewTimer(guardWait)
	defer t.Stop()
	select {
	case <-o.h.Guarded():
	case <-o.h.Done():
	case <-ctx.Done():
		return false
	case <-t.C:
		a.log.Warn("no listing of the group yet; starting the command, the guard goes on watching", "group", o.h.Group(), "waited", guardWait)
	}
	return true
}

// predecessorBound is how long after the node of the herald owner before
// us went without a release its command may still run: its runner may
// not have heard (cut off from the servers, or frozen). Cut off, its
// client gives the silent connection up two thirds of the timeout after
// it last heard, before the deletion, and the command is killed within
// lossGrace of that; frozen, the watchdog kills it within watchdogKillBy
// (less) of the last heartbeat. A twelfth more is for a busy machine.
// timeout is the owner's: see holding.bound.
func predecessorBound(timeout time.Duration) time.Duration {
	return timeout*2/3 + lossGrace(timeout) + timeout/12
}

// bound is predecessorBound for the owners before ours: taken from the
// longest session timeout of ours and of the copies our wait found ahead
// of ours (elect.Session.LongestTimeoutSeen), so that a copy given a
// shorter --session-timeout waits as long as they may take to stop.
func (o holding) bound() time.Duration {
	return predecessorBound(o.h.Session().LongestTimeoutSeen())
}

// predecessorGate watches for the moment the command of the herald owner
// before us is sure to be stopped.
type predecessorGate struct {
	// open is closed at that moment: at once when its release is on
	// record (its command had ended, or its owner waited as we do) or the
	// predecessor was a foreign client's; when its runner records that
	// its command stopped (elect.Handle.RecordStopped: its node went by
	// someone's hand, and it heard); or predecessorBound after our first
	// look, since nothing tells a deletion by hand to a runner that could
	// not hear from a session's end.
	open chan struct{}
	// until is when the bound ends, in Unix nanoseconds: set by the first
	// look, and moved later by a later look that learned a longer session
	// timeout (one whose read had failed before). first is why it is
	// being waited for: the first look's error, nil when it simply found
	// no record.
	until atomic.Int64
	first error
	// recorded is set before open closes when a record, not the bound,
	// opened it.
	recorded atomic.Bool
	// earlier is set when the predecessor's release (or session end) came
	// too soon, and did not vouch for the owners before it (see after).
	earlier atomic.Bool
}

// after is when a look that answered yes lets the gate open: at once for
// a record of a runner, which waited as we do (elect.Handle.Vouch), and
// where nobody can have owned before the predecessor
// (elect.Handle.PredecessorVouched). A session end, a foreign client's
// release and a library owner's vouch only for the predecessor's own
// work: an owner before it, whose node went (by hand) without a release,
// is vouched for predecessorBound after its node went, which was before
// the predecessor was first seen lowest
// (elect.Handle.PredecessorLowestSince), and only by the whole bound when
// it never was (a group's first node has nobody before it).
// TestChaosRunners found a dead waiter's node, lowest for 0.2 s as its
// session expired, opening the gate while the owner before it, deleted by
// hand, was still stopping its command; TestRunnerAfterALibraryOwner a
// library owner's release doing the same.
func (g *predecessorGate) after(o holding) time.Time {
	return later(g.afterLook(o), o.notBefore)
}

// afterLook is after, from what the looks told alone.
func (g *predecessorGate) afterLook(o holding) time.Time {
	if o.h.PredecessorVouched() {
		return time.Time{}
	}
	if o.h.PredecessorFirst() {
		return time.Time{} // the group's first node: nobody owned before it
	}
	since := o.h.PredecessorLowestSince()
	if since.IsZero() {
		return g.untilTime()
	}
	if at := since.Add(o.bound()); at.Before(g.untilTime()) {
		return at
	}
	return g.untilTime()
}

// untilTime is when the bound ends.
func (g *predecessorGate) untilTime() time.Time { return time.Unix(0, g.until.Load()) }

// lengthen moves the bound's end to the one the looks now give, should
// that be later.
func (g *predecessorGate) lengthen(o holding, start time.Time) {
	if u := later(start.Add(o.bound()), o.notBefore); u.After(g.untilTime()) {
		g.until.Store(u.UnixNano())
	}
}

// watchPredecessor starts the gate. The looks are made even once ctx has
// ended: an owner told to stop needs the answer too (giveUpUnstarted).
// They end with the gate, or when quit closes.
func watchPredecessor(o holding, quit <-chan struct{}) *predecessorGate {
	g := &predecessorGate{open: make(chan struct{})}
	look := func() (bool, <-chan zk.Event, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return o.h.PredecessorReleasedW(ctx)
	}
	start := time.Now()
	released, ch, err := look()
	// The bound after the first look, which reads the predecessor's
	// session node when no record is found: its timeout counts even when
	// the wait could not read it.
	g.until.Store(later(start.Add(o.bound()), o.notBefore).UnixNano())
	if released && !o.h.TimeoutsUnread() && !time.Now().Before(g.after(o)) {
		close(g.open)
		return g
	}
	g.first = err
	g.earlier.Store(released && time.Now().Before(g.after(o)))
	go func() {
		defer close(g.open)
		g.watch(o, quit, look, start, released, ch)
	}()
	return g
}

// watch waits, looking again as the predecessor's watch fires, until the
// gate may open: the predecessor released and the owners before it are
// vouched for (after), or, with no release, the bound ran out. Neither
// is trusted while a timeout that may be a deposed owner's is unread
// (elect.Handle.TimeoutsUnread): the bound may be short of that owner's.
// The gate then looks again every twelfth of the timeout, each look
// lengthening the bound by what it learned, and stays shut until every
// such timeout is read. A gate that opened on a bound taken with a
// timeout unread started a 9 s copy's command 8 s after a 40 s owner
// was deposed (TestGateLooksAgainAfterASlowTimeoutRead), and one behind
// a library owner's release after 6 s
// (TestGateAfterAReleaseLooksAgainAfterASlowTimeoutRead).
func (g *predecessorGate) watch(o holding, quit <-chan struct{}, look func() (bool, <-chan zk.Event, error), start time.Time, released bool, ch <-chan zk.Event) {
	bound := time.NewTimer(time.Until(g.untilTime()))
	defer bound.Stop()
	retry := time.NewTicker(o.timeout / 12)
	defer retry.Stop()
	for {
		at := g.untilTime()
		if released {
			at = g.after(o)
		}
		unread := g.unread(o, released)
		if released {
			if time.Now().Before(at) {
				// The release came too soon to vouch for the owners
				// before it.
				g.earlier.Store(true)
			}
		}
		if !unread && !time.Now().Before(at) {
			g.recorded.Store(released && !g.earlier.Load())
			return
		}
		var boundC <-chan time.Time
		if d := time.Until(at); d > 0 {
			bound.Reset(d)
			boundC = bound.C
		}
		var again <-chan time.Time
		if unread || ch == nil && !released {
			// A timeout that may be the deposed owner's is unread, or
			// the look failed: look again a little later.
			again = retry.C
		}
		select {
		case <-quit:
			return
		case <-o.h.Session().Done():
			// No command of ours starts on a session that is gone
			// (confirmOwned), so there is nothing left to wait for: a
			// copy frozen past its session waited out its whole bound
			// before it joined again (found by an adversarial test).
			return
		case <-boundC:
			if !unread {
				continue
			}
		case <-ch:
		case <-again:
		}
		r, c, _ := look()
		if !released {
			released, ch = r, c
		}
		g.lengthen(o, start)
	}
}

// unread reports whether the gate waits for a session timeout it could
// not read (elect.Handle.TimeoutsUnread). Such a timeout counts only while
// the wait is the bound's: not behind a release that vouches for every
// owner before it (nor behind a group's first node), whose later looks
// read no timeouts. The gate waited for the read there, and `run` held
// ownership without ever starting its command
// (TestGateOpensOnAVouchedRecordWithTimeoutsUnread). Once our session is
// gone the gate waits for nothing (see watch).
func (g *predecessorGate) unread(o holding, released bool) bool {
	return o.h.TimeoutsUnread() && !(released && g.afterLook(o).IsZero())
}

// awaitPredecessor waits, before our command starts, until the command of
// the owner before us is stopped (the gate opens). Before, a command that
// ignored SIGTERM ran beside ours. It fails when ctx ends first
// (interrupted), or lock's --timeout does (errStartTimedOut).
func (a *app) awaitPredecessor(ctx context.Context, o holding, g *predecessorGate) error {
	select {
	case <-g.open:
		if o.h.PredecessorSessionEnded() && !g.earlier.Load() {
			a.log.Info("the previous owner's node went with its session, so its command is stopped: starting ours", "group", o.h.Group(), "previous", o.h.Predecessor())
		}
		return ctx.Err()
	default:
	}
	floored := time.Now().Before(o.notBefore) // the wait is ours, not only the gate's
	noted := o.h.RunsBeside()                 // we wait for another session's run note
	a.sayWhyWeWait(o, g, floored)
	var startBy <-chan time.Time
	if !o.startBy.IsZero() {
		t := time.NewTimer(time.Until(o.startBy))
		defer t.Stop()
		startBy = t.C
	}
	select {
	case <-g.open:
		switch {
		case floored && !g.recorded.Load():
			a.log.Info("the owner we waited behind before our node was deleted is now surely stopped", "group", o.h.Group())
		case g.earlier.Load():
			a.log.Info("the owner before the previous one is now surely stopped too", "group", o.h.Group())
		case g.recorded.Load() && noted && !o.h.RunsBeside():
			a.log.Info("the command another runner noted for this group is stopped (its run note went)", "group", o.h.Group())
		case g.recorded.Load() && o.h.PredecessorSessionEnded():
			a.log.Info("the previous owner's session ended, so its command is stopped", "group", o.h.Group())
		case g.recorded.Load():
			a.log.Info("the previous owner's runner recorded that its command stopped", "group", o.h.Group())
		}
	case <-o.h.Done():
	case <-startBy:
		return errStartTimedOut
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// sayWhyWeWait logs why the command waits for the gate; floored, that
// the copy's own notBefore holds it.
func (a *app) sayWhyWeWait(o holding, g *predecessorGate, floored bool) {
	d := time.Until(g.untilTime()).Round(time.Millisecond)
	if !o.h.ReleasesRecorded() {
		a.log.Warn("the group's node holds data herald did not write, or herald may not write it, and a lock's group holds no other place for a record: no owner's release can be recorded, so each handoff waits as for a node gone without one, until the previous owner's session ends (a herald lock's as it exits) or at most the wait; keep a lock group's node empty and writable by its clients",
			"group", o.h.Group(), "wait", d)
	}
	switch prev := o.h.Predecessor(); {
	case floored:
		a.log.Info("someone deleted our node while we waited (a deleteall, a cleanup), and may have deposed the owner we waited behind the same way, whose command may still be stopping: waiting until it surely is",
			"group", o.h.Group(), "wait", time.Until(o.notBefore).Round(time.Millisecond))
	case o.h.RunsBeside():
		a.log.Info("every owner this group shows before ours is accounted for, but a herald copy in another session noted a command for the group that may still run: the group was deleted with its owner's node (a deleteall) while that owner could not hear; waiting until its command is surely stopped, until its note goes or at most the wait",
			"group", o.h.Group(), "wait", d)
	case o.h.TimeoutsUnread():
		a.log.Info("the session timeouts of the herald copies that may have owned before us could not all be read yet (ZooKeeper slow, or the connection troubled): an owner deposed by hand may run its command as long as its timeout allows, so ours waits until they are read and that long has passed",
			"group", o.h.Group(), "previous", prev, "wait_at_least", d)
	case g.earlier.Load() && o.h.PredecessorSessionEnded():
		a.log.Info("the previous owner's node went with its session, so its command is stopped, but it was lowest too briefly to vouch for an owner before it, whose node may have gone without a release: waiting until that one's command is surely stopped",
			"group", o.h.Group(), "previous", prev, "wait", time.Until(g.after(o)).Round(time.Millisecond))
	case g.earlier.Load():
		a.log.Info("the previous owner released, but it was not a herald run or herald lock that waited for the owners before it (a library's or another client's), and it was lowest too briefly to vouch for an owner before it, whose node may have gone without a release: waiting until that one's command is surely stopped",
			"group", o.h.Group(), "previous", prev, "wait", time.Until(g.after(o)).Round(time.Millisecond))
	case prev != "":
		a.log.Info("the previous owner's node went without a release (deleted by hand, or its session ended): waiting for its command to be stopped before starting ours, until its runner says so or at most the wait",
			"group", o.h.Group(), "previous", prev, "wait", d, "err", g.first, "session_end_unproven", o.h.SessionEndUnproven())
	default:
		a.log.Info("no owner was seen before ours, but the group's history cannot show that none went without a release just before (deleted by hand): waiting for such a command to be stopped before starting ours, until its runner says so or at most the wait",
			"group", o.h.Group(), "wait", d, "err", g.first)
	}
}

// giveUpUnstarted gives ownership back when our command never started.
// The next owner takes a release herald recorded to mean that no command
// before its own still runs, and starts at once; so ours is not recorded
// before the gate opens, when the command of the owner before us is sure
// to be stopped. Before, an owner told to stop while it waited for that
// released at once, and the next owner's command ran beside the deposed
// one. A second signal leaves without a release: our node then goes with
// the session, with no record, and the next owner waits itself.
func (a *app) giveUpUnstarted(ctx context.Context, o holding, g *predecessorGate) {
	o.ann = nil
	select {
	case <-g.open:
		o.h.Vouch()
		o.release()
	case <-forced(ctx):
	}
}

// opened reports whether the gate is open: the command of every owner
// before us is stopped.
func (g *predecessorGate) opened() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// confirmOwned asks the servers, just before the command starts, whether
// our node is still there, and so our session alive. An owner frozen while
// it waited (SIGSTOP, a paused VM) may run again after its session expired
// and the next owner's command started, and would start its command beside
// that one before its client has heard of the expiry: the look cannot
// succeed then, the servers having closed the session and its node. It
// returns why ownership is not confirmed: ended (or ctx did) meanwhile, the
// node gone, or the look failed.
//
// The look is a sync, then the read: a member answers a read from its own
// copy, and a follower cut off from the rest of the ensemble answers from
// a copy as old as the cut until it gives the leader up (syncLimit ticks)
// or the session's lease gives it up (half a timeout after the last sync
// the leader answered, see elect's leader_lease.go). It confirmed a node
// deleted meanwhile on the rest of the ensemble, and the command started
// (found by an adversarial test). A follower answers a sync only once it
// has what the leader had when the sync reached it, and the read after it
// on the same connection sees that. (A sync names a path but does not
// need it: one on a group deleted meanwhile is answered all the same.)
func confirmOwned(ctx context.Context, o holding) error {
	s := o.h.Session()
	look := make(chan error, 1)
	go func() {
		if _, err := s.Conn().Sync(o.h.Group()); err != nil {
			look <- fmt.Errorf("catching up with the ZooKeeper leader: %w", err)
			return
		}
		ok, _, err := s.Conn().Exists(o.h.NodePath())
		if err == nil && !ok {
			err = errors.New("our node is gone")
		}
		look <- err
	}()
	t := time.NewTimer(s.Timeout())
	defer t.Stop()
	var err error
	select {
	case err = <-look:
	case <-o.h.Done():
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		err = errors.New("no answer within the session timeout")
	}
	if !o.h.Held() {
		return errors.New(lostWhy(o.h))
	}
	if err != nil {
		return fmt.Errorf("the servers did not confirm our node: %w", err)
	}
	return nil
}

// stoppedLook is how often the runner looks whether its command is
// stopped.
const stoppedLook = time.Second

// watchStopped says when the command is stopped (SIGSTOP, a debugger,
// kill -STOP by someone): it then holds the leadership or lock and does
// nothing, and nothing else would tell, as herald stays healthy. A WARN
// once it has been stopped for a look, an INFO when it runs again. It
// ends with the command. (Linux: from /proc.)
func (a *app) watchStopped(c *child, o holding) {
	t := time.NewTicker(stoppedLook)
	defer t.Stop()
	looks := 0
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		p, ok := readProc(c.Pid())
		switch {
		case ok && p.stopped:
			looks++
			if looks == 2 {
				a.log.Warn("the command is stopped (SIGSTOP, or a debugger): it holds "+o.what()+" and does nothing; send it SIGCONT, or stop herald to hand over",
					"pid", c.Pid(), "group", o.h.Group())
			}
		case looks >= 2:
			a.log.Info("the command runs again", "pid", c.Pid(), "group", o.h.Group())
			looks = 0
		default:
			looks = 0
		}
	}
}

// codeErr turns a child's exit code into run's result.
func codeErr(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

// dialectFlag adds --dialect to run and lock.
func dialectFlag(f *pflag.FlagSet, v *string) {
	names := make([]string, len(elect.Dialects))
	for i, d := range elect.Dialects {
		names[i] = string(d)
	}
	f.StringVar(v, "dialect", string(elect.DialectAuto), "shape of our node's name: "+strings.Join(names, "|")+
		" (auto: what the group's other clients read; force one when clients that join later need it)")
}

// sessionRootFlag adds --session-root.
func sessionRootFlag(f *pflag.FlagSet, v *string) {
	f.StringVar(v, "session-root", elect.DefaultSessionRoot, "where the copies of a lock (or of an election named for Curator's mutex, which like a lock's group may hold no other node) keep a node per session, so that the next copy starts as soon as the owner's session ended, not 11/12 of the session timeout later, and where every copy notes its running command, so that a copy joining a group deleted whole (a deleteall) waits for it; give every copy the same, outside every group (\"\": none)")
}

// sessionRootOpt checks --session-root against the group (given by flag).
func sessionRootOpt(root, flag, group string) (elect.Option, error) {
	switch {
	case root == "":
	case root == "/" || elect.ValidatePath(root) != nil:
		return nil, usageErr("--session-root %q: give an absolute path below /, outside every group, e.g. %s (\"\" keeps no session node)", root, elect.DefaultSessionRoot)
	case root == group || strings.HasPrefix(root, group+"/"):
		return nil, usageErr("--session-root %s is inside %s %s, which may hold only queue nodes: give a path outside every group, e.g. %s", root, flag, group, elect.DefaultSessionRoot)
	}
	return elect.SessionNodesUnder(root), nil
}

// dialectOpt checks --dialect.
func dialectOpt(v string) (elect.Option, error) {
	d, err := elect.ParseDialect(v)
	if err != nil {
		return nil, usageErr("--dialect: %v", err)
	}
	return elect.WithDialect(d), nil
}
