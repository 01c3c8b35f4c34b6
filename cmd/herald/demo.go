package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/spawn"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

func init() { register(newDemoCmd) }

type demoOpts struct {
	candidates int
	steps      int
	stepTime   time.Duration
	timeout    time.Duration
}

func newDemoCmd(a *app) *cobra.Command {
	var o demoOpts
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch an election live: four candidates, a crash, a resignation, the history",
		Long: `demo shows herald end to end on this machine in under a minute. It uses the
ZooKeeper at --zk when one answers, else starts one; starts an embedded NATS
with JetStream and a bridge; then runs four 'herald run' candidates of a job
that counts steps and checkpoints each. It kills the first leader's runner
(SIGKILL): the next leader resumes from the checkpoint, finishes and resigns.
Events are printed live from NATS; at the end come the history table from the
audit log and the checkpoints each leader resumed from. Everything it started
is stopped and its temporary files removed; on a ZooKeeper it did not start,
it removes the group it made (/herald-demo/job-<n>, and /herald-demo when it
made that and nothing else is left in it). Ctrl-C or SIGTERM stops it the
same way, and it exits 130 or 143.`,
		Example: `  herald demo
  herald demo --zk 127.0.0.1:2181`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.demo(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.candidates, "candidates", 4, "number of herald run candidates")
	f.IntVar(&o.steps, "steps", 6, "steps of the demo job")
	f.DurationVar(&o.stepTime, "step-time", 300*time.Millisecond, "how long a step takes")
	f.DurationVar(&o.timeout, "timeout", 50*time.Second, "give up when the demo takes longer")
	return cmd
}

type demoRunner struct {
	id   string
	cmd  *exec.Cmd
	done chan struct{}
	code int
}

func (a *app) demo(ctx context.Context, o demoOpts) (err error) {
	if o.candidates < 2 || o.steps < 3 || o.stepTime <= 0 || o.timeout <= 0 {
		return usageErr("demo needs --candidates >= 2, --steps >= 3 and positive --step-time and --timeout")
	}
	// Output closed under it (demo | head) ends the demo as a signal
	// does, after it cleaned up: the write fails (EPIPE) rather than the
	// process dying of SIGPIPE with its group left in ZooKeeper.
	ctx, closed := context.WithCancelCause(ctx)
	defer closed(nil)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	out := &demoOut{w: a.stdout, closed: func() { closed(signalCause{syscall.SIGPIPE}) }}
	// Runs last, once everything the demo started is stopped and its group
	// removed: a demo a signal cut short says so and exits 128+N.
	sig := ctx
	defer func() {
		if err != nil && sig.Err() != nil {
			err = interrupted(sig, "demo interrupted; it stopped what it started and removed what it made")
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	start := time.Now()
	dir, err := os.MkdirTemp("", "herald-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	servers, sessionTimeout, stopZK, err := a.demoZK(ctx, dir, 2*time.Second)
	if err != nil {
		return err
	}
	defer stopZK()
	natsCtx, cancelNATS := context.WithCancel(context.Background())
	defer cancelNATS()
	natsURL, stopNATS, err := demoNATS(natsCtx, dir)
	if err != nil {
		return err
	}
	defer stopNATS()
	out.line("demo: NATS with JetStream at " + natsURL)

	group := fmt.Sprintf("%s/job-%d", demoRoot, time.Now().UnixNano())
	// Registered before the bridge and the runners, so it runs after they
	// stopped: nothing of theirs writes to the group any more.
	var madeRoot, connected bool
	defer func() {
		if connected { // else nothing was made
			demoRemove(servers, group, madeRoot, out)
		}
	}()
	if madeRoot, connected, err = a.demoPrepare(ctx, servers, group); err != nil {
		return err
	}
	auditPath := filepath.Join(dir, "audit", "audit.log")
	ev, stopBr, err := a.demoStartBridge(servers, group, natsURL, auditPath, out)
	if err != nil {
		return err
	}
	defer stopBr()

	runners, err := a.startRunners(servers, sessionTimeout, group, o, out)
	defer stopRunners(runners)
	if err != nil {
		return err
	}
	if err := a.demoScenario(ctx, servers, group, runners, ev, out, sessionTimeout); err != nil {
		return err
	}
	stopBr()
	return a.demoSummary(ctx, servers, group, auditPath, runners, out, start)
}

// demoStartBridge starts the demo's bridge over group, its audit log at
// auditPath, and the subscriber that prints its events. stop stops both,
// once, saying how the bridge ended when it failed.
func (a *app) demoStartBridge(servers []string, group, natsURL, auditPath string, out *demoOut) (ev *demoEvents, stop func(), err error) {
	br, err := demoBridge(servers, group, natsURL, auditPath)
	if err != nil {
		return nil, nil, err
	}
	if ev, err = a.subscribeEvents(natsURL, out.line); err != nil {
		return nil, nil, err
	}
	brCtx, stopBridge := context.WithCancel(context.Background())
	brDone := make(chan error, 1)
	go func() { brDone <- br.Run(brCtx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			stopBridge()
			if err := <-brDone; err != nil && !errors.Is(err, context.Canceled) {
				out.line("demo: bridge: " + err.Error())
			}
			ev.close()
		})
	}
	out.line("demo: bridge watching " + group + " → NATS, JetStream, audit log")
	for range 50 { // the address is known once Run listens
		if addr := br.HTTPAddr(); addr != "" {
			out.line("demo: the live page is at http://" + addr + "/ while the demo runs")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ev, stop, nil
}

// demoRoot holds the demo's groups, one per run.
const demoRoot = "/herald-demo"

// demoPrepare creates the demo's group, and reports whether it created
// demoRoot too, and whether it reached ZooKeeper (and so may have made
// part of the group before an error).
func (a *app) demoPrepare(ctx context.Context, servers []string, group string) (madeRoot, connected bool, err error) {
	s, err := elect.NewSession(ctx, servers, elect.AcceptNegotiatedTimeout())
	if err != nil {
		return false, false, err
	}
	defer s.Close()
	_, err = s.Conn().Create(demoRoot, nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return false, true, fmt.Errorf("create %s: %w", demoRoot, err)
	}
	madeRoot = err == nil
	return madeRoot, true, ensurePath(ctx, s, group)
}

// demoRemove deletes the demo's group and everything in it, and demoRoot
// when the demo made it and no other group is left in it (another demo's,
// say). It runs whether the demo ended, failed or was interrupted, after
// the runners and the bridge stopped.
func demoRemove(servers []string, group string, madeRoot bool, out *demoOut) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := elect.NewSession(ctx, servers, elect.AcceptNegotiatedTimeout())
	if err != nil {
		out.line(fmt.Sprintf("demo: could not remove %s (%v); delete it by hand", group, err))
		return
	}
	defer s.Close()
	if err := removeTree(ctx, s.Conn(), group); err != nil {
		out.line(fmt.Sprintf("demo: could not remove %s (%v); delete it by hand", group, err))
		return
	}
	removed := group
	if madeRoot {
		// Refused while it holds anything: only an empty root goes.
		if err := s.Conn().Delete(demoRoot, -1); err == nil || errors.Is(err, zk.ErrNoNode) {
			removed += " and " + demoRoot
		}
	}
	out.line("demo: removed " + removed + " from ZooKeeper")
}

// startRunners starts the candidates: this binary's `herald run` around
// its `herald demo-job`.
func (a *app) startRunners(servers []string, st time.Duration, group string, o demoOpts, out *demoOut) ([]*demoRunner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var rs []*demoRunner
	for i := 1; i <= o.candidates; i++ {
		id := "candidate-" + strconv.Itoa(i)
		cmd := exec.Command(exe, "--zk", strings.Join(servers, ","), "--session-timeout", st.String(), "--log-level", "warn",
			"run", "--election", group, "--id", id, "--",
			exe, "demo-job", "--steps", strconv.Itoa(o.steps), "--step-time", o.stepTime.String())
		w, wait := out.pipe(fmt.Sprintf("  %-12s ", id))
		cmd.Stdout, cmd.Stderr = w, w
		cmd.SysProcAttr = childProcAttr()
		if err := spawn.Start(cmd); err != nil {
			return rs, fmt.Errorf("start %s: %w", id, err)
		}
		r := &demoRunner{id: id, cmd: cmd, done: make(chan struct{})}
		go func() {
			_ = cmd.Wait()
			w.Close()
			wait()
			r.code = exitCode(cmd.ProcessState)
			close(r.done)
		}()
		rs = append(rs, r)
		out.line(fmt.Sprintf("demo: started %s (herald run, pid %d)", id, cmd.Process.Pid))
	}
	return rs, nil
}

// stopRunners ends every runner still alive and its job.
func stopRunners(rs []*demoRunner) {
	for _, r := range rs {
		select {
		case <-r.done:
			continue
		default:
		}
		_ = terminateGroup(r.cmd.Process)
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
			_ = killGroup(r.cmd.Process)
			<-r.done
		}
	}
}

// demoScenario: wait for a leader and two checkpointed steps, kill that
// leader's runner, and let the rest finish the job.
func (a *app) demoScenario(ctx context.Context, servers []string, group string, rs []*demoRunner, ev *demoEvents, out *demoOut, st time.Duration) error {
	first, err := waitElected(ctx, ev, "")
	if err != nil {
		return fmt.Errorf("waiting for the first leader: %w", err)
	}
	if err := waitCheckpoint(ctx, servers, group, 2); err != nil {
		return fmt.Errorf("waiting for the first checkpoints: %w", err)
	}
	var victim *demoRunner
	for _, r := range rs {
		if r.id == first.ID {
			victim = r
		}
	}
	if victim == nil {
		return fmt.Errorf("leader %q is none of the demo's candidates", first.ID)
	}
	out.line(fmt.Sprintf("demo: *** SIGKILL %s's runner (pid %d): its job dies with it; its session expires within %v and the next candidate resumes from the checkpoint",
		victim.id, victim.cmd.Process.Pid, st))
	_ = victim.cmd.Process.Kill()
	<-victim.done
	next, err := waitElected(ctx, ev, first.Node)
	if err != nil {
		return fmt.Errorf("waiting for a new leader after the kill: %w", err)
	}
	out.line(fmt.Sprintf("demo: *** %s took over; when its job completes it exits 0 and the runner resigns", next.ID))
	for _, r := range rs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to finish: %w", r.id, ctx.Err())
		}
		if r != victim && r.code != 0 {
			return fmt.Errorf("%s exited with status %d, want 0", r.id, r.code)
		}
	}
	// The last runner resigned: wait until the bridge reported the group
	// empty, so the history ends with it.
	for {
		select {
		case e := <-ev.seen:
			if e.Type.Loses() && e.Owner == nil && e.Previous != nil {
				return nil
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for the bridge to report the last resignation: %w", ctx.Err())
		}
	}
}

// waitElected waits for a leader.elected event naming a node other than
// not, and returns its owner.
func waitElected(ctx context.Context, ev *demoEvents, not string) (publish.Participant, error) {
	for {
		select {
		case e := <-ev.seen:
			if e.Type == publish.LeaderElected && e.Owner != nil && e.Owner.Node != not {
				return *e.Owner, nil
			}
		case <-ctx.Done():
			return publish.Participant{}, ctx.Err()
		}
	}
}

// waitCheckpoint polls the group's checkpoint until it reports step n.
func waitCheckpoint(ctx context.Context, servers []string, group string, n int) error {
	s, err := elect.NewSession(ctx, servers, elect.AcceptNegotiatedTimeout())
	if err != nil {
		return err
	}
	defer s.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if cp, err := elect.ReadCheckpoint(ctx, s, group); err == nil {
			var k, total int
			if _, err := fmt.Sscanf(string(cp.Data), "step=%d/%d", &k, &total); err == nil && k >= n {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (a *app) demoSummary(ctx context.Context, servers []string, group, auditPath string, rs []*demoRunner, out *demoOut, start time.Time) error {
	events, err := audit.ReadAll(ctx, auditPath, nil)
	if err != nil {
		return fmt.Errorf("read the audit log: %w", err)
	}
	out.line("\nhistory (from the audit log, as 'herald history --audit FILE' prints it):")
	if err := audit.WriteTable(a.stdout, audit.History(events), time.Now()); err != nil {
		return err
	}
	out.line("\nexit status of each runner:")
	for _, r := range rs {
		out.line(fmt.Sprintf("  %-12s %d", r.id, r.code))
	}
	out.line("\ncheckpoints the leaders resumed from:")
	for _, l := range out.resumed {
		out.line("  " + strings.TrimSpace(l))
	}
	s, err := elect.NewSession(ctx, servers, elect.AcceptNegotiatedTimeout())
	if err != nil {
		return err
	}
	defer s.Close()
	cp, err := elect.ReadCheckpoint(ctx, s, group)
	if err != nil {
		return err
	}
	out.line(fmt.Sprintf("final checkpoint: %q saved by %s in term %d", cp.Data, cp.ID, cp.Term))
	out.line(fmt.Sprintf("demo: done in %v; cleaning up", time.Since(start).Round(100*time.Millisecond)))
	return nil
}
