package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
	"github.com/zkherald/herald/publish"
)

func zkFlags(t *testing.T) []string {
	t.Helper()
	zk := zktest.Shared(t)
	return []string{"--zk", zk.ConnectString(), "--session-timeout", "1s", "--connect-timeout", "10s"}
}

func TestRunPassesExitCodeAndEnvironment(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	script := `test "$HERALD_ELECTION" = "` + g + `" && test -n "$HERALD_NODE" && test "$HERALD_TERM" -gt 0 &&
		test "$HERALD_ID" = job-1 && test -n "$HERALD_ZK" && test -z "$HERALD_CHECKPOINT" && echo env-ok; exit 7`
	stdout, stderr, code := heraldRun(t, nil, append(zk, "run", "--election", g, "--id", "job-1", "--", "sh", "-c", script)...)
	if code != 7 || !strings.Contains(stdout, "env-ok") {
		t.Fatalf("exit %d (want 7), stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	// The runner resigned: the group has no owner any more.
	out, stderr, code := heraldRun(t, nil, append(zk, "who", g)...)
	if code != exitNoOwner || !strings.Contains(out, "no owner") {
		t.Fatalf("who after the run: exit %d, %q %s", code, out, stderr)
	}
}

var pidRe = regexp.MustCompile(`(\S+) pid=(\d+) cp=\[([^\]]*)\] cpterm=\[(\d*)\]`)

// started finds the line the child of runner id printed when it started.
func started(p *proc) (pid int, cp, cpTerm string, ok bool) {
	m := pidRe.FindStringSubmatch(p.out.String())
	if m == nil {
		return 0, "", "", false
	}
	pid, _ = strconv.Atoi(m[2])
	return pid, m[3], m[4], true
}

// TestRunFailover: three runners; the leader's runner is killed, the next
// one's child resumes from its checkpoint; then that child is killed, its
// runner exits 137 and the third takes over.
func TestRunFailover(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	g := uniq(t)
	child := `echo "$HERALD_ID pid=$$ cp=[$HERALD_CHECKPOINT] cpterm=[$HERALD_CHECKPOINT_TERM]"
		"$HERALD_BIN" checkpoint put "by-$HERALD_ID" && echo "$HERALD_ID saved"; exec sleep 60`
	var ps []*proc
	for i := 1; i <= 3; i++ {
		id := "r" + strconv.Itoa(i)
		ps = append(ps, start(t, nil, append(zk, "run", "--election", g, "--id", id, "--grace", "1s", "--", "sh", "-c", child)...))
	}
	leader := func(exclude ...*proc) *proc {
		t.Helper()
		var found *proc
		err := waitFor(20*time.Second, func() bool {
			for _, p := range ps {
				skip := false
				for _, x := range exclude {
					skip = skip || x == p
				}
				if _, _, _, ok := started(p); ok && !skip && strings.Contains(p.out.String(), "saved") {
					found = p
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Fatalf("no new leader's child started and checkpointed: %v", err)
		}
		return found
	}
	first := leader()
	firstPid, cp, _, _ := started(first)
	if cp != "" {
		t.Fatalf("first leader got checkpoint %q, want none", cp)
	}
	for _, p := range ps {
		if p != first {
			if _, _, _, ok := started(p); ok {
				t.Fatalf("two children ran at once:\n%s\n%s", first.out, p.out)
			}
		}
	}
	firstID := strings.Fields(pidRe.FindString(first.out.String()))[0]

	// SIGKILL the leader's runner: the kernel takes its child too, and the
	// next leader resumes from the checkpoint.
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	first.wait(t, 5*time.Second)
	second := leader(first)
	_, cp, cpTerm, _ := started(second)
	if cp != "by-"+firstID || cpTerm == "" {
		t.Fatalf("second leader resumed from %q (term %q), want by-%s with its term", cp, cpTerm, firstID)
	}
	if err := waitFor(5*time.Second, func() bool { return !alive(firstPid) }); err != nil {
		t.Fatalf("the killed runner's child (pid %d) outlived it", firstPid)
	}

	// SIGKILL the new leader's child: its runner passes 137 and resigns.
	secondPid, _, _, _ := started(second)
	_ = signalPID(secondPid, syscall.SIGKILL)
	if code := second.wait(t, 10*time.Second); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("runner of a SIGKILLed child exited %d, want 137", code)
	}
	third := leader(first, second)
	secondID := strings.Fields(pidRe.FindString(second.out.String()))[0]
	if _, cp, _, _ := started(third); cp != "by-"+secondID {
		t.Fatalf("third leader resumed from %q, want by-%s", cp, secondID)
	}
	out, _, _ := heraldRun(t, nil, append(zk, "checkpoint", "get", "--election", g)...)
	if want := "by-" + strings.Fields(pidRe.FindString(third.out.String()))[0]; strings.TrimSpace(out) != want {
		t.Fatalf("checkpoint get = %q, want %q", out, want)
	}
}

// TestRunPausedRunnerIsFenced: a runner frozen past its session timeout is
// deposed. Its watchdog sends the command SIGTERM before the next leader
// is elected (half the session timeout after the freeze), and a command
// that ignores it gets SIGKILL before the session can expire, --grace
// notwithstanding: when the next leader's command starts, the old one is
// gone. When the runner runs again it exits 3, saying the watchdog stopped
// the command.
func TestRunPausedRunnerIsFenced(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	g := uniq(t)
	env := pidFile(t)
	// The command notes SIGTERM and carries on: only SIGKILL ends it.
	// The next leader's first look is at whether a's still runs.
	child := `if [ "$HERALD_ID" = a ]; then echo $$ > "$PIDFILE"; else ` + checkLeftover + `; fi
		trap 'echo "$HERALD_ID got TERM"' TERM
		echo "$HERALD_ID running"
		while :; do
			"$HERALD_BIN" checkpoint put "by-$HERALD_ID" 2>/dev/null; rc=$?
			if [ $rc -eq 0 ]; then echo "$HERALD_ID put ok"; else echo "$HERALD_ID put rejected $rc"; fi
			sleep 0.1
		done`
	a := start(t, env, append(zk, "run", "--election", g, "--id", "a", "--grace", "8s", "--", "sh", "-c", child)...)
	a.waitOutput(t, "a put ok", 20*time.Second)
	b := start(t, env, append(zk, "run", "--election", g, "--id", "b", "--grace", "2s", "--", "sh", "-c", child)...)
	waitQueued(t, zk, g, 2, "b never joined the queue")

	if err := signalPID(a.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	// The watchdog says why it stops the command before it signals it.
	// (The shell may not run its TERM trap before the SIGKILL: it runs
	// traps between commands, and a checkpoint put may be under way.)
	a.waitOutput(t, "herald watchdog: herald gave no sign of life", 10*time.Second)
	if strings.Contains(b.out.String(), "b running") {
		t.Fatalf("b leads before the watchdog told a's command to stop (%v after the freeze):\n%s", time.Since(frozen), a.out)
	}
	b.waitOutput(t, "b put ok", 20*time.Second)
	if !strings.Contains(b.out.String(), "next owner: clean") {
		t.Fatalf("a's command, which ignores SIGTERM, still ran when b's started:\n%s", b.out)
	}
	if err := signalPID(a.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(t, 20*time.Second); code != exitNotLeader {
		t.Fatalf("deposed runner exited %d, want %d:\n%s", code, exitNotLeader, a.out)
	}
	// It says the watchdog stopped the command, whichever it heard first
	// on waking: its command's end, or the loss.
	if out := a.out.String(); !strings.Contains(out, "watchdog stopped the command") {
		t.Fatalf("deposed runner did not say the watchdog stopped its command:\n%s", out)
	}
	// Its node went with its session, which expired while it was frozen:
	// that is the reason it gives, not that someone deleted the node.
	if out := a.out.String(); !strings.Contains(out, "lost ("+string(elect.ReasonSessionExpired)+")") {
		t.Fatalf("deposed runner did not say its session expired:\n%s", out)
	}
	if b.exited() {
		t.Fatalf("the new leader exited:\n%s", b.out)
	}
}

// TestRunKilledRunnerLeavesNothingRunning: kill -9 of the runner takes its
// command's whole process group with it, not only the direct child (which
// the kernel kills): here a grandchild that ignores SIGTERM, gone after
// --grace.
//
// The runner is a copy of herald's binary, removed while the runner waits
// to lead (as an upgrade may replace it): the watchdog it starts once it
// leads is the running binary all the same.
func TestRunKilledRunnerLeavesNothingRunning(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	g := uniq(t)
	bin := filepath.Join(t.TempDir(), "herald-old")
	if b, err := os.ReadFile(heraldBin); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copy herald's binary: %v", err)
	}
	first := start(t, nil, append(zk, "run", "--election", g, "--id", "first", "--", "sh", "-c", "echo first leads; sleep 600")...)
	first.waitOutput(t, "first leads", 20*time.Second)
	child := `(trap '' TERM; while :; do sleep 0.05; done) & echo "grandchild $!"; wait`
	a := startBin(t, bin, nil, append(zk, "run", "--election", g, "--id", "a", "--grace", "1s", "--", "sh", "-c", child)...)
	waitQueued(t, zk, g, 2, "a never joined the queue")
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	a.waitOutput(t, "grandchild ", 20*time.Second)
	if strings.Contains(a.out.String(), "no watchdog") {
		t.Fatalf("the runner started no watchdog once its binary was gone:\n%s", a.out)
	}
	m := regexp.MustCompile(`grandchild (\d+)`).FindStringSubmatch(a.out.String())
	pid, _ := strconv.Atoi(m[1])
	t.Cleanup(func() { _ = signalPID(pid, syscall.SIGKILL) }) // should this test fail
	if err := signalPID(pid, 0); err != nil {
		t.Fatalf("grandchild %d not running before the kill: %v", pid, err)
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 5*time.Second)
	if err := waitFor(10*time.Second, func() bool { return signalPID(pid, 0) == syscall.ESRCH }); err != nil {
		t.Fatalf("the command's grandchild %d still runs 10s after its runner was killed:\n%s", pid, a.out)
	}
	if !strings.Contains(a.out.String(), "herald exited without stopping its command") {
		t.Fatalf("the watchdog does not say why it stopped the command:\n%s", a.out)
	}
}

func TestRunSignalStopsChild(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	p := start(t, nil, append(zk, "run", "--election", g, "--grace", "5s", "--",
		"sh", "-c", `trap 'echo got TERM; exit 9' TERM; echo running; while :; do sleep 0.05; done`)...)
	p.waitOutput(t, "running", 20*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 10*time.Second); code != 9 || !strings.Contains(p.out.String(), "got TERM") {
		t.Fatalf("runner told to stop: exit %d, want the child's 9 after its TERM trap:\n%s", code, p.out)
	}
}

// A runner or a lock waiting in line that is told to stop exits 128+N, as
// a shell reports a process signal N killed: 130 for Ctrl-C, 143 for
// SIGTERM; nothing was started.
func TestWaitingRunnerStoppedBySignal(t *testing.T) {
	zk := zkFlags(t)
	for _, c := range []struct {
		sig  syscall.Signal
		verb string
	}{{syscall.SIGINT, "run"}, {syscall.SIGTERM, "lock"}} {
		g := uniq(t)
		flag := "--election"
		if c.verb == "lock" {
			flag = "--lock"
		}
		holder := start(t, nil, append(zk, c.verb, flag, g, "--", "sh", "-c", "echo holding; exec sleep 30")...)
		holder.waitOutput(t, "holding", 20*time.Second)
		waiter := start(t, nil, append(zk, c.verb, flag, g, "--", "echo", "waiter-ran")...)
		if err := waitFor(20*time.Second, func() bool {
			out, _, _ := heraldRun(t, nil, append(zk, "who", g, "--json")...)
			var r whoReport
			return json.Unmarshal([]byte(out), &r) == nil && len(r.Queue) == 2
		}); err != nil {
			t.Fatalf("the %s waiter never queued", c.verb)
		}
		_ = waiter.cmd.Process.Signal(c.sig)
		if code := waiter.wait(t, 10*time.Second); code != 128+int(c.sig) || strings.Contains(waiter.out.String(), "waiter-ran") || !strings.Contains(waiter.out.String(), "interrupted") {
			t.Fatalf("%s waiting, sent %v: exit %d, want %d and nothing run:\n%s", c.verb, c.sig, code, 128+int(c.sig), waiter.out)
		}
	}
}

// TestRunRejoinFlagsGone: a deposed runner with --rejoin whose flags no
// longer hold when it campaigns again exits 3, as a runner without
// --rejoin would, naming both what was lost and why it could not join
// again; not 2, as if it had been started wrongly, nor 1, as if something
// else had failed. Its auth file is gone, or holds other credentials,
// which the group's ACL refuses.
func TestRunRejoinFlagsGone(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	openTestRoot(t)
	for _, c := range []struct {
		name  string
		spoil func(auth string) error
		says  []string
	}{
		{"auth-file-gone", os.Remove, []string{"could not campaign again", "--zk-auth-file"}},
		{"credentials-changed", func(auth string) error { return os.WriteFile(auth, []byte("someone:else\n"), 0o600) },
			[]string{"could not campaign again", "not allowed to create nodes", "--zk-auth-file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := uniq(t)
			dir := t.TempDir()
			authA, authB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			for _, f := range []string{authA, authB} {
				if err := os.WriteFile(f, []byte("herald:s3cret\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			child := `echo "$HERALD_ID running"; while :; do sleep 0.05; done`
			a := start(t, nil, append(zk, "--zk-auth-file", authA, "run", "--election", g, "--id", "a", "--grace", "2s", "--rejoin", "--", "sh", "-c", child)...)
			a.waitOutput(t, "a running", 20*time.Second)
			b := start(t, nil, append(zk, "--zk-auth-file", authB, "run", "--election", g, "--id", "b", "--grace", "2s", "--", "sh", "-c", child)...)
			waitQueued(t, zk, g, 2, "b never joined the queue")
			if err := c.spoil(authA); err != nil {
				t.Fatal(err)
			}
			if err := signalPID(a.cmd.Process.Pid, sigStop); err != nil {
				t.Fatal(err)
			}
			b.waitOutput(t, "b running", 20*time.Second)
			if err := signalPID(a.cmd.Process.Pid, sigCont); err != nil {
				t.Fatal(err)
			}
			if code := a.wait(t, 20*time.Second); code != exitNotLeader {
				t.Fatalf("a exited %d, want %d:\n%s", code, exitNotLeader, a.out)
			}
			for _, want := range c.says {
				if !strings.Contains(a.out.String(), want) {
					t.Errorf("a's output does not say %q:\n%s", want, a.out)
				}
			}
		})
	}
}

// TestRunRejoin: with --rejoin a deposed runner (frozen past its session
// timeout) stops its child, stays up, campaigns again on a new session,
// and runs the command again, under a higher term, once the other runner
// is gone.
func TestRunRejoin(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	g := uniq(t)
	child := `trap 'echo "$HERALD_ID got TERM"; exit 143' TERM
		echo "$HERALD_ID running term=$HERALD_TERM"
		while :; do sleep 0.05; done`
	// a announces its transitions on NATS, across both its terms.
	url, announcedEvents := announcements(t, g)
	a := start(t, nil, append(zk, "run", "--election", g, "--id", "a", "--grace", "2s", "--rejoin", "--nats", url, "--", "sh", "-c", child)...)
	a.waitOutput(t, "a running", 20*time.Second)
	b := start(t, nil, append(zk, "run", "--election", g, "--id", "b", "--grace", "2s", "--", "sh", "-c", child)...)
	waitQueued(t, zk, g, 2, "b never joined the queue")
	if err := signalPID(a.cmd.Process.Pid, sigStop); err != nil {
		t.Fatal(err)
	}
	b.waitOutput(t, "b running", 20*time.Second)
	if err := signalPID(a.cmd.Process.Pid, sigCont); err != nil {
		t.Fatal(err)
	}
	a.waitOutput(t, "a got TERM", 10*time.Second)
	a.waitOutput(t, "campaigning again", 10*time.Second)
	if a.exited() {
		t.Fatalf("a exited instead of rejoining:\n%s", a.out)
	}
	// a waits behind b now; b's runner dies, a leads again.
	waitQueued(t, zk, g, 2, "a never queued again")
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	b.wait(t, 5*time.Second)
	terms := regexp.MustCompile(`a running term=(\d+)`)
	var m [][]string
	if err := waitFor(20*time.Second, func() bool {
		m = terms.FindAllStringSubmatch(a.out.String(), -1)
		return len(m) == 2
	}); err != nil {
		t.Fatalf("a did not run the command a second time:\n%s", a.out)
	}
	first, _ := strconv.ParseInt(m[0][1], 10, 64)
	second, _ := strconv.ParseInt(m[1][1], 10, 64)
	if second <= first {
		t.Fatalf("a's second term %d is not above its first %d", second, first)
	}
	var announced []string
	for _, e := range announcedEvents(3) {
		announced = append(announced, fmt.Sprintf("%s %d", e.Type, e.Term))
	}
	want := []string{fmt.Sprintf("%s %d", publish.LeaderElected, first), fmt.Sprintf("%s %d", publish.LeaderLost, first),
		fmt.Sprintf("%s %d", publish.LeaderElected, second)}
	if !slices.Equal(announced, want) {
		t.Fatalf("a announced %v, want %v", announced, want)
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(t, 10*time.Second); code != 143 {
		t.Fatalf("a told to stop exited %d, want its child's 143:\n%s", code, a.out)
	}
}

// waitQueued waits until herald who shows n candidates in group g.
func waitQueued(t *testing.T, zk []string, g string, n int, failure string) {
	t.Helper()
	out := ""
	if err := waitFor(10*time.Second, func() bool {
		out, _, _ = heraldRun(t, nil, append(zk, "who", g, "--json")...)
		var r whoReport
		return json.Unmarshal([]byte(out), &r) == nil && len(r.Queue) == n
	}); err != nil {
		t.Fatalf("%s: %s", failure, out)
	}
}

// A checkpoint node someone else wrote is not handed to the child as if it
// were a checkpoint: the child starts without it and learns why from
// HERALD_CHECKPOINT_ERROR, and its own checkpoint replaces it. checkpoint
// get says what is there and what to do.
func TestRunCheckpointSomeoneElseWrote(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	mknode(t, rawZK(t), g+"/herald-checkpoint", []byte("step=9 (typed by hand)"), 0)
	_, stderr, code := heraldRun(t, nil, append(zkFl, "checkpoint", "get", g)...)
	if code != exitFailure || !strings.Contains(stderr, "not a herald checkpoint") || !strings.Contains(stderr, "delete the node") {
		t.Fatalf("checkpoint get of data someone else wrote: exit %d, stderr: %s", code, stderr)
	}
	child := `echo "cp=[$HERALD_CHECKPOINT] err=[$HERALD_CHECKPOINT_ERROR]"; "$HERALD_BIN" checkpoint put step=10`
	out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--", "sh", "-c", child)...)
	if code != 0 || !strings.Contains(out, "cp=[]") || !strings.Contains(out, "someone else wrote") {
		t.Fatalf("run over a checkpoint someone else wrote: exit %d, want 0 with an empty checkpoint and the error named:\n%s%s", code, out, stderr)
	}
	if out, stderr, code := heraldRun(t, nil, append(zkFl, "checkpoint", "get", g)...); code != 0 || out != "step=10\n" {
		t.Fatalf("checkpoint get after the child saved: exit %d, %q %s", code, out, stderr)
	}
}

// A checkpoint the runner may not read (its ACL) is not skipped: the
// command does not start, and the runner says why and resigns.
func TestRunCheckpointUnreadable(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	conn := rawZK(t)
	mkpath(t, conn, g)
	if _, err := conn.Create(g+"/herald-checkpoint", []byte(`{"data":"c3RlcD05","term":1}`), 0, zk.DigestACL(zk.PermAll, "someone", "else")); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--", "echo", "child-started")...)
	if code == 0 || strings.Contains(out, "child-started") || !strings.Contains(stderr, "cannot read the last checkpoint") {
		t.Fatalf("run over an unreadable checkpoint: exit %d, want a failure before the command starts:\n%s%s", code, out, stderr)
	}
	if out, _, code := heraldRun(t, nil, append(zkFl, "who", g)...); code != exitNoOwner {
		t.Fatalf("who after the refused run: exit %d, want %d (the runner resigned):\n%s", code, exitNoOwner, out)
	}
}

// A new leader whose first read of the checkpoint goes unanswered (the
// server's reply lost, the connection cut) reads it again instead of
// starting the child without it. The leader rides out the cut here
// (LoseOnExpiry); under herald run's default it would have stopped
// leading, and nothing would start at all.
func TestCheckpointEnvReadsAgainAfterALostReply(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	addrs := zktest.Shared(t).Addrs()
	g := uniq(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func(servers []string) *elect.Session {
		s, err := elect.NewSession(ctx, servers, elect.WithSessionTimeout(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	campaign := func(s *elect.Session, opts ...elect.Option) *elect.Handle {
		e, err := elect.NewElection(s, g, append(opts, elect.CreateParents())...)
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.Campaign(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	old := campaign(open(addrs))
	if err := old.Checkpoint(ctx, []byte("step=5")); err != nil {
		t.Fatal(err)
	}
	if err := old.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s := open([]string{p.Addr()})
	h := campaign(s, elect.WithLossPolicy(elect.LoseOnExpiry))
	p.DropReplyTo(faultproxy.OpSync)
	a := &app{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	env, err := a.checkpointEnv(ctx, h, s, g)
	if err != nil || p.Dropped() != 1 || !slices.Contains(env, "HERALD_CHECKPOINT=step=5") || !h.Held() {
		t.Fatalf("checkpointEnv after a lost reply: %q, %v (replies dropped %d, still leading %v); want step=5 read again", env, err, p.Dropped(), h.Held())
	}
}

// Data someone else wrote to a group's office node is not shown as the
// owner's acknowledgment: who says the owner's readiness is not known, and
// why.
func TestWhoNotesAnOfficeSomeoneElseWrote(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	holder := start(t, nil, append(zkFl, "run", "--election", g, "--id", "leader-1", "--", "sh", "-c", "echo running; exec sleep 30")...)
	holder.waitOutput(t, "running", 20*time.Second)
	if err := waitFor(10*time.Second, func() bool {
		out, _, _ := heraldRun(t, nil, append(zkFl, "who", g)...)
		return strings.Contains(out, "owner leader-1, ready")
	}); err != nil {
		t.Fatal("the runner never acknowledged")
	}
	if _, err := rawZK(t).Set(g+"/herald-office", []byte("maintenance until 5pm"), -1); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(zkFl, "who", g)...)
	if code != 0 || strings.Contains(out, "ready") || !strings.Contains(out, "note: "+g+"/herald-office holds data herald did not write") {
		t.Fatalf("who with an office someone else wrote: exit %d, want the owner not ready and a note:\n%s%s", code, out, stderr)
	}
}

// TestInterruptedWhileConnecting: a signal while herald still connects
// (the server does not answer) is an interruption, exit 128+N as a shell
// reports it, not "ZooKeeper unreachable".
func TestInterruptedWhileConnecting(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	p := sharedZKProxy(t)
	p.Blackhole(true)
	silent := []string{"--zk", p.Addr(), "--connect-timeout", "30s"}
	for _, args := range [][]string{
		{"who", "/x"},
		{"lock", "--lock", "/x", "--", "true"},
		{"run", "--election", "/x", "--", "true"},
	} {
		h := start(t, nil, append(silent, args...)...)
		time.Sleep(700 * time.Millisecond)
		_ = h.cmd.Process.Signal(syscall.SIGINT)
		if code := h.wait(t, 10*time.Second); code != 130 || !strings.Contains(h.out.String(), "interrupted while connecting") || strings.Contains(h.out.String(), "unreachable") {
			t.Errorf("%s interrupted while connecting: exit %d, want 130 saying so:\n%s", args[0], code, h.out)
		}
	}
}

// TestHotStandbysOutliveAZooKeeperOutage: two `run --rejoin` copies, and a
// `lock` waiting in line behind a holder, lose ZooKeeper for longer than their session
// timeout plus --connect-timeout. None exits: each waits the outage out
// and joins again, and once ZooKeeper is back a copy runs the command
// again and the lock is taken. Before, every copy exited 1 when its new
// session could not be opened within --connect-timeout, and nothing ran
// after the outage.
func TestHotStandbysOutliveAZooKeeperOutage(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	p := sharedZKProxy(t)
	zk := []string{"--zk", p.Addr(), "--session-timeout", "1s", "--connect-timeout", "2s"}
	g, l := uniq(t), uniq(t)+"-lock"
	marks := filepath.Join(t.TempDir(), "marks")
	child := `echo "start $HERALD_ID $HERALD_TERM" >> "$MARKS"; exec sleep 60`
	env := []string{"MARKS=" + marks}
	var runners []*proc
	for _, id := range []string{"copy-1", "copy-2"} {
		runners = append(runners, start(t, env, append(zk, "run", "--election", g, "--id", id, "--rejoin", "--", "sh", "-c", child)...))
	}
	start(t, env, append(zk, "lock", "--lock", l, "--id", "holder", "--", "sh", "-c", child)...)
	starts := func() int {
		b, _ := os.ReadFile(marks)
		return strings.Count(string(b), "start ")
	}
	if err := waitFor(20*time.Second, func() bool { return starts() == 2 }); err != nil {
		t.Fatalf("the runner and the lock holder never both started (%d starts)", starts())
	}
	waiter := start(t, env, append(zk, "lock", "--lock", l, "--id", "waiter", "--", "sh", "-c", child)...)
	time.Sleep(time.Second) // the waiter queues behind the holder

	p.Refuse(true)
	p.Cut()
	time.Sleep(6 * time.Second) // past 1s sessions and 2s connect timeouts, several times
	p.Refuse(false)

	if err := waitFor(30*time.Second, func() bool { return starts() >= 4 }); err != nil {
		b, _ := os.ReadFile(marks)
		t.Errorf("after the outage, the command never ran again in the election and under the lock:\n%s", b)
	}
	for _, r := range append(runners, waiter) { // the holder lost its lock: exit 3 is its due
		if r.exited() {
			t.Errorf("%v exited during or after the outage:\n%s", r.cmd.Args, r.out)
		}
	}
}

// TestDeletedOwnerNodeNeverRunsTwoCommands: an operator deletes the
// leading runner's node by hand. Its command ignores SIGTERM, so it lives
// until its runner's SIGKILL, a sixth of the session timeout after the
// deletion; the next leader heard of the deletion at the same moment, and
// must not start its command before then. Each command holds an flock on
// one file while it runs, so an overlap is seen even though the old one is
// killed outright. Before, the next command started at once, beside it.
func TestDeletedOwnerNodeNeverRunsTwoCommands(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "3s"}
	g := uniq(t)
	child, env, read := overlapMarks(t)
	for _, id := range []string{"copy-1", "copy-2"} {
		start(t, env, append(zk, "run", "--election", g, "--id", id, "--grace", "10s", "--rejoin", "--", "sh", "-c", child)...)
	}
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("no command started: %q", read())
	}
	var node string
	if err := waitFor(10*time.Second, func() bool {
		ch, _, err := rawZK(t).Children(g)
		if err != nil {
			return false
		}
		for _, c := range ch {
			if info, ok := elect.ParseName(c); ok && (node == "" || info.Sequence < mustSeq(node)) {
				node = c
			}
		}
		return node != ""
	}); err != nil {
		t.Fatal("no queue node found")
	}
	if err := rawZK(t).Delete(g+"/"+node, -1); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
		t.Fatalf("the next leader's command never started: %q", read())
	}
	if strings.Contains(read(), "OVERLAP") {
		t.Errorf("two commands ran at once after the owner's node was deleted by hand:\n%s", read())
	}
}

// overlapMarks is a command for the copies of a runner that ignores
// SIGTERM (so it lives until its runner's SIGKILL) and holds an flock on
// one file while it runs: a command that starts while another runs writes
// OVERLAP, even though the old one is killed outright. env passes the
// marks file to the copies; read returns what the commands wrote.
func overlapMarks(t *testing.T) (child string, env []string, read func() string) {
	marks := filepath.Join(t.TempDir(), "marks")
	child = `exec 9>>"$MARKS.lock"; flock -n 9 || echo "OVERLAP $HERALD_ID" >> "$MARKS"; echo "start $HERALD_ID" >> "$MARKS"; trap "" TERM; exec sleep 60`
	return child, []string{"MARKS=" + marks}, func() string { b, _ := os.ReadFile(marks); return string(b) }
}

func mustSeq(node string) int32 {
	info, _ := elect.ParseName(node)
	return info.Sequence
}

// TestRunSaysItsCommandIsStopped: someone stops the leader's command
// (SIGSTOP). It holds the leadership and does nothing, and nothing else
// tells: the runner says so (WARN), and again when it runs (INFO).
func TestRunSaysItsCommandIsStopped(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	g := uniq(t)
	p := start(t, nil, append(zkFlags(t), "run", "--election", g, "--id", "leader", "--", "sh", "-c", `echo "pid=$$"; exec sleep 60`)...)
	m := waitMatch(t, p, regexp.MustCompile(`pid=(\d+)`), 20*time.Second)
	pid, err := strconv.Atoi(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := signalPID(pid, sigStop); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, "the command is stopped", 10*time.Second)
	if err := signalPID(pid, sigCont); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, "the command runs again", 10*time.Second)
}

// TestOwnerDeletedBeforeTheNextCopyStarted: the leading runner's node is
// deleted by hand while no other copy is queued; a copy started a moment
// later finds its node alone in the group, with no owner before it to go
// by. The deposed command ignores SIGTERM and lives until its runner's
// SIGKILL, a sixth of the session timeout after the deletion: the new
// copy's must not start before then.
func TestOwnerDeletedBeforeTheNextCopyStarted(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
	g := uniq(t)
	child, env, read := overlapMarks(t)
	// A first tenure released, so that the group has a history.
	if _, stderr, code := heraldRun(t, nil, append(zk, "run", "--election", g, "--id", "copy-0", "--", "true")...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	start(t, env, append(zk, "run", "--election", g, "--id", "copy-1", "--grace", "10s", "--", "sh", "-c", child)...)
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") == 1 }); err != nil {
		t.Fatalf("no command started: %q", read())
	}
	ch, _, err := rawZK(t).Children(g)
	ch = slices.DeleteFunc(ch, func(c string) bool { _, ok := elect.ParseName(c); return !ok })
	if err != nil || len(ch) != 1 {
		t.Fatalf("want copy-1's node alone in %s: %v, %v", g, ch, err)
	}
	if err := rawZK(t).Delete(g+"/"+ch[0], -1); err != nil {
		t.Fatal(err)
	}
	next := start(t, env, append(zk, "run", "--election", g, "--id", "copy-2", "--grace", "10s", "--", "sh", "-c", child)...)
	if err := waitFor(20*time.Second, func() bool { return strings.Count(read(), "start ") >= 2 }); err != nil {
		t.Fatalf("the next copy's command never started: %q", read())
	}
	if strings.Contains(read(), "OVERLAP") {
		t.Errorf("two commands ran at once after the owner's node was deleted by hand:\n%s", read())
	}
	next.waitOutput(t, "no owner was seen before ours, but the group's history cannot show that none went without a release", time.Second)
}

// TestLockAfterAGiveUpStartsAtOnce: a `herald lock --timeout` that gave
// up while the lock was held, then the holder's release, then a new
// `herald lock`, which finds the group empty. The node of the one that gave
// up was made between the release's and the new one's, so nothing showed
// that it never owned, and the new command waited as for an owner deleted
// by hand (9.2 s with the default session timeout; seen trying the
// try-lock pattern of cron jobs). The one that gave up now says so on the
// group node as it leaves, and the command starts at once.
func TestLockAfterAGiveUpStartsAtOnce(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	l := uniq(t)
	holder := start(t, nil, append(zk, "lock", "--lock", l, "--id", "holder", "--", "sleep", "1")...)
	holder.waitOutput(t, "child started", 15*time.Second)
	_, stderr, code := heraldRun(t, nil, append(zk, "lock", "--lock", l, "--id", "quitter", "--timeout", "200ms", "--", "true")...)
	if code != exitTempFail {
		t.Fatalf("lock --timeout while held: exit %d, want %d: %s", code, exitTempFail, stderr)
	}
	if code := holder.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("holder: exit %d:\n%s", code, holder.out)
	}
	began := time.Now()
	_, stderr, code = heraldRun(t, nil, append(zk, "lock", "--lock", l, "--id", "next", "--", "true")...)
	if code != 0 {
		t.Fatalf("lock after the release: exit %d: %s", code, stderr)
	}
	if took := time.Since(began); strings.Contains(stderr, "went without a release") || took > 5*time.Second {
		t.Errorf("the lock after a give-up and a release waited (%v) as for an owner deleted by hand:\n%s", took.Round(time.Millisecond), stderr)
	}
}

// TestReleasedLockStartsAtOnce: a lock released by its holder, then taken
// again by a new `herald lock`, which finds the group empty. The release
// is on record and was the last node made before the new one's, so the
// command starts at once. Before, every copy that found a group with a
// past empty waited a quarter of the session timeout (2.5 s by default),
// as if the owner before it had been deleted by hand.
func TestReleasedLockStartsAtOnce(t *testing.T) {
	zk := zkFlags(t)
	l := uniq(t)
	for i := range 3 {
		_, stderr, code := heraldRun(t, nil, append(zk, "lock", "--lock", l, "--id", fmt.Sprintf("cron-%d", i), "--", "true")...)
		if code != 0 {
			t.Fatalf("lock %d: exit %d: %s", i, code, stderr)
		}
		if strings.Contains(stderr, "went without a release") {
			t.Errorf("lock %d waited although the lock before it was released:\n%s", i, stderr)
		}
	}
}
