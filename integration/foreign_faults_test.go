package integration_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// Faults in groups herald shares with foreign clients: whoever comes next,
// herald's command must be gone before a foreign client owns, and a
// foreign owner's end must be its session's, never sooner.

// stubbornScript is aliveScript with a grandchild that ignores SIGTERM
// and stamps too: it outlives the command's first process, which the
// kernel kills with the runner.
const stubbornScript = `(trap '' TERM; i=0; while [ "$i" -lt 3000 ]; do date +%s%N >> "$OWN_ALIVE"; sleep 0.02; i=$((i+1)); done) &
` + aliveScript

// aliveScript is a command that logs acq and then stamps $OWN_ALIVE every
// 20 ms for as long as it runs (at most about a minute, so that a command
// nobody stops never outlives the test): its last stamp is a moment it
// still ran, which no other owner's acquisition may precede.
const aliveScript = `printf 'acq %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"
i=0
while [ "$i" -lt 3000 ]; do date +%s%N >> "$OWN_ALIVE"; sleep 0.02; i=$((i+1)); done`

// lastAlive is the last stamp an aliveScript wrote to p (0: none yet).
func lastAlive(t testing.TB, p string) int64 {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	v, _ := strconv.ParseInt(string(b), 10, 64)
	return v
}

// runnerThenPeer is the cast of a handover from a herald runner (a) whose
// command stamps alive to a foreign peer (b) queued behind it, in group.
type runnerThenPeer struct {
	group, a, b, alive string
	log                *ownLog
}

// newRunnerThenPeer names the runner and a peer of kind peer in a group
// of the test's own.
func newRunnerThenPeer(t *testing.T, env *sharedEnv, peer kindSpec) *runnerThenPeer {
	r := &runnerThenPeer{group: groupPath(t, "group"), log: newOwnLog(), a: newID("runner"), b: newID(peer.short)}
	r.log.name(r.a, "herald runner")
	r.log.name(r.b, peer.name)
	r.alive = filepath.Join(env.dir, r.a+".alive")
	return r
}

// ownThenQueue starts the runner, waits up to d for it to own the empty
// group, then starts the peer and waits for it to queue behind.
func (r *runnerThenPeer) ownThenQueue(t *testing.T, probe *zk.Conn, cm, pm member, d time.Duration) {
	t.Helper()
	cm.start()
	r.log.awaitAcq(t, r.a, d, "first, in an empty group")
	pm.start()
	awaitQueue(t, probe, r.group, 2, 15*time.Second, r.log)
}

// commandGoneBeforePeer waits up to d for the peer to own after the fault
// (at wall time fault, named event in the log) and fails the test if the
// runner's command (whose) stamped at or after the peer's acquisition.
func (r *runnerThenPeer) commandGoneBeforePeer(t *testing.T, fault int64, d time.Duration, why, event, whose string) {
	t.Helper()
	acq := r.log.awaitAcq(t, r.b, d, why)
	time.Sleep(100 * time.Millisecond) // a stamp being written lands
	last := lastAlive(t, r.alive)
	t.Logf("%s; the command's last stamp %v after, %s owned %v after (session timeout %v)",
		event, time.Duration(last-fault).Round(time.Millisecond), r.log.label(r.b), time.Duration(acq-fault).Round(time.Millisecond), sharedPeerSession)
	if last >= acq {
		t.Errorf("%s still ran %v after %s owned", whose, time.Duration(last-acq).Round(time.Millisecond), r.log.label(r.b))
	}
}

// TestKilledRunnerForeignNextWaitsForItsCommand: herald lock or herald run
// owns a group with a Curator or Kazoo client queued behind it, and is
// killed with SIGKILL. Its command is not its process: herald's watchdog
// must end it before its node goes (the releaser deletes it once the
// command is gone, or the session's expiry does) and hands the group to
// the foreign client, which waits for nothing else. The command's last
// sign of life must come before the foreign client's acquisition, also
// where a grandchild of the command ignores SIGTERM.
func TestKilledRunnerForeignNextWaitsForItsCommand(t *testing.T) {
	env := newSharedEnv(t, true, true, true)
	for _, c := range []struct {
		name string
		run  bool
		d    elect.Dialect
		peer kindSpec
	}{
		{"lock-then-curator-mutex", false, auto, kindSpec{"curator-mutex", "Curator InterProcessMutex", curatorKind("mutex")}},
		{"run-then-curator-latch", true, auto, kindSpec{"curator-latch", "Curator LeaderLatch", curatorKind("latch")}},
		{"lock-then-kazoo-lock", false, elect.DialectKazoo, kindSpec{"kazoo-lock", "Kazoo Lock", kazooKind("lock")}},
		{"run-then-kazoo-election", true, elect.DialectKazoo, kindSpec{"kazoo-election", "Kazoo Election", kazooKind("election")}},
	} {
		t.Run(c.name, func(t *testing.T) { killedRunner(t, env, c.run, c.d, c.peer, aliveScript) })
		t.Run(c.name+"-stubborn-grandchild", func(t *testing.T) { killedRunner(t, env, c.run, c.d, c.peer, stubbornScript) })
	}
}

func killedRunner(t *testing.T, env *sharedEnv, run bool, d elect.Dialect, peer kindSpec, script string) {
	r := newRunnerThenPeer(t, env, peer)
	cm := newCLIMember(t, env, r.group, r.a, r.log, cliOpts{dialect: d, run: run, script: script, env: []string{"OWN_ALIVE=" + r.alive}})
	pm := peer.make(t, env, r.group, r.b, r.log, auto)
	r.ownThenQueue(t, env.probe, cm, pm, 20*time.Second)
	cm.stopping.Store(true)
	killed := wallNow()
	if err := cm.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.commandGoneBeforePeer(t, killed, 20*time.Second, "after the runner was killed", "runner killed", "the killed runner's command")
	pm.release(t)
}

// TestDelayedOwnerStepsDownBeforeForeignNext: a herald runner reaches
// ZooKeeper through a proxy that delays every frame, a Curator client
// queued behind it reaches ZooKeeper directly. The runner's command must
// be gone before Curator owns, whether the delay grows past what the
// connection bears (two thirds of the timeout each way, the connection
// cut so that it applies) or a delayed connection (a tenth each way) is
// partitioned off.
func TestDelayedOwnerStepsDownBeforeForeignNext(t *testing.T) {
	env := newSharedEnv(t, true, false, true)
	mutex := kindSpec{"curator-mutex", "Curator InterProcessMutex", curatorKind("mutex")}
	latch := kindSpec{"curator-latch", "Curator LeaderLatch", curatorKind("latch")}
	for _, c := range []struct {
		name      string
		run       bool
		peer      kindSpec
		partition bool
	}{
		{"lock-delay-grows", false, mutex, false},
		{"run-delay-grows", true, latch, false},
		{"lock-delayed-partitioned", false, mutex, true},
		{"run-delayed-partitioned", true, latch, true},
	} {
		t.Run(c.name, func(t *testing.T) { delayedOwner(t, env, c.run, c.peer, c.partition) })
	}
}

func delayedOwner(t *testing.T, env *sharedEnv, run bool, peer kindSpec, partition bool) {
	p, err := faultproxy.New(env.zk.Member(0).Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Blackhole(false); _ = p.Close() })
	if partition {
		// A tenth each way, not a sixth: herald takes a member whose
		// newest answered sync was sent half a timeout ago for cut off
		// (elect's leader lease, a sync every eighth), and a sixth each
		// way left it an eighth of a second of that: on a loaded machine
		// the runner gave its connection up again and again and did not
		// own within 30 s, or took 26-36 s to.
		p.Delay(sharedPeerSession / 10)
	}
	penv := *env
	penv.connect = p.Addr()
	r := newRunnerThenPeer(t, env, peer)
	cm := newCLIMember(t, &penv, r.group, r.a, r.log, cliOpts{run: run, script: aliveScript, env: []string{"OWN_ALIVE=" + r.alive}})
	pm := peer.make(t, env, r.group, r.b, r.log, auto)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s said:\n%s", r.log.label(r.a), lastBytes(cm.out.String()))
		}
	})
	r.ownThenQueue(t, env.probe, cm, pm, 30*time.Second)
	time.Sleep(sharedPeerSession / 2) // owning steadily across the delay
	cm.stopping.Store(true)
	fault := wallNow()
	if partition {
		p.Blackhole(true)
	} else {
		p.Delay(2 * sharedPeerSession / 3)
		p.Cut()
	}
	r.commandGoneBeforePeer(t, fault, 30*time.Second, "after the runner's connection failed", "fault", "the delayed runner's command")
	pm.release(t)
}

// TestFrozenMemberMixedGroup: a 3-member ensemble, one member frozen with
// SIGSTOP (its clients hear neither expiry nor loss) while a group that
// herald shares with Curator hands over. owner-on-frozen: a herald runner
// that reaches only the frozen member owns, Curator (on the other two)
// waits; the runner's command must be gone before Curator owns.
// waiter-on-frozen: Curator (on the other two) owns, a herald runner on
// the frozen member waits, and a second Curator client waits behind it;
// the first Curator client releases during the freeze. No two may own at
// once, and the runner owns once the member is back.
func TestFrozenMemberMixedGroup(t *testing.T) {
	zkc := zktest.ForTest(t, zkserver.Config{Nodes: 3})
	for _, run := range []bool{false, true} {
		name := map[bool]string{false: "lock", true: "run"}[run]
		t.Run(name+"-owner-on-frozen", func(t *testing.T) { frozenMember(t, zkc, run, true) })
		t.Run(name+"-waiter-on-frozen", func(t *testing.T) { frozenMember(t, zkc, run, false) })
	}
}

// frozenCase is one case of TestFrozenMemberMixedGroup.
type frozenCase struct {
	env    *sharedEnv
	frozen *zkserver.Server
	group  string
	log    *ownLog
	cm     *cliMember
	a      string
	alive  string
	peer   kindSpec
}

func frozenMember(t *testing.T, zkc *zkserver.Cluster, run, ownerOnFrozen bool) {
	lead, err := zkc.Leader(ctxFor(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	frozen := zkc.Member(0)
	if frozen == lead {
		frozen = zkc.Member(1)
	}
	var others []string
	for _, m := range zkc.Members() {
		if m != frozen {
			others = append(others, m.Addr())
		}
	}
	env := &sharedEnv{zk: zkc, addrs: zkc.Addrs(), connect: frozen.Addr(), dir: t.TempDir(), bin: buildHerald(t)}
	env.probe = rawConn(t, others, 10*time.Second)
	env.cur = newPeerCtl(startCurator(t, strings.Join(others, ","), sharedPeerSession), "Curator")
	fc := &frozenCase{env: env, frozen: frozen, group: groupPath(t, "group"), log: newOwnLog(), a: newID("runner")}
	fc.peer = kindSpec{"curator-mutex", "Curator InterProcessMutex", curatorKind("mutex")}
	if run {
		fc.peer = kindSpec{"curator-latch", "Curator LeaderLatch", curatorKind("latch")}
	}
	fc.log.name(fc.a, "herald runner")
	fc.alive = filepath.Join(env.dir, fc.a+".alive")
	script := aliveScript
	if !ownerOnFrozen {
		script = holdScript
	}
	fc.cm = newCLIMember(t, env, fc.group, fc.a, fc.log, cliOpts{run: run, script: script, env: []string{"OWN_ALIVE=" + fc.alive}})
	t.Cleanup(func() { _ = frozen.Resume() })
	if ownerOnFrozen {
		frozenOwner(t, fc)
	} else {
		frozenWaiter(t, fc)
	}
}

// peerAt makes a Curator participant of fc's group.
func (fc *frozenCase) peerAt(t *testing.T) (member, string) {
	b := newID(fc.peer.short)
	fc.log.name(b, fc.peer.name)
	return fc.peer.make(t, fc.env, fc.group, b, fc.log, auto), b
}

func frozenOwner(t *testing.T, fc *frozenCase) {
	pm, b := fc.peerAt(t)
	r := &runnerThenPeer{group: fc.group, log: fc.log, a: fc.a, b: b, alive: fc.alive}
	r.ownThenQueue(t, fc.env.probe, fc.cm, pm, 30*time.Second)
	fc.cm.stopping.Store(true)
	fault := wallNow()
	if err := fc.frozen.Pause(); err != nil {
		t.Fatal(err)
	}
	r.commandGoneBeforePeer(t, fault, 30*time.Second, "after the runner's member froze", "member frozen", "the runner's command")
	if err := fc.frozen.Resume(); err != nil {
		t.Fatal(err)
	}
	pm.release(t)
}

func frozenWaiter(t *testing.T, fc *frozenCase) {
	log, a := fc.log, fc.a
	p1, b1 := fc.peerAt(t)
	p2, b2 := fc.peerAt(t)
	t.Cleanup(func() { log.checkExclusive(t) })
	p1.start()
	log.awaitAcq(t, b1, 30*time.Second, "first, in an empty group")
	fc.cm.start()
	awaitQueue(t, fc.env.probe, fc.group, 2, 30*time.Second, log)
	p2.start()
	awaitQueue(t, fc.env.probe, fc.group, 3, 15*time.Second, log)
	if err := fc.frozen.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(sharedPeerSession / 4)
	p1.release(t) // while the runner's member is frozen
	time.Sleep(sharedPeerSession / 2)
	if err := fc.frozen.Resume(); err != nil {
		t.Fatal(err)
	}
	// The runner's session may not outlive the freeze on a loaded
	// machine (its client has a third of the timeout to reach another
	// member): its node then goes, Curator's second client owns before it,
	// and the runner, queued again, owns once that one lets go.
	evs := log.await(t, 30*time.Second, log.label(a)+" or "+log.label(b2)+" owning once the member is back", func(evs []ownEvent) bool {
		_, runner := firstEvent(evs, "acq", a)
		_, peer := firstEvent(evs, "acq", b2)
		return runner || peer
	})
	if _, runner := firstEvent(evs, "acq", a); !runner {
		t.Logf("the runner's session ended in the freeze; %s owned first", log.label(b2))
		p2.release(t)
		log.awaitAcq(t, a, 30*time.Second, "after "+log.label(b2)+" released")
		fc.cm.release(t)
		return
	}
	fc.cm.release(t)
	log.awaitAcq(t, b2, 15*time.Second, "after the runner released")
	p2.release(t)
}

// TestDeleteallWithAForeignClientNext: an operator's deleteall of a group
// where a herald runner owns and a Curator client waits. Curator owns as
// soon as its node is gone (it makes the group again), waiting for no
// record that the runner's command stopped, as a herald runner would. So
// the runner must kill its command at once, not give it a sixth of the
// timeout: the command's grandchild that ignores SIGTERM stamped on
// beside Curator's owner for most of that (0.8–1 s with 6 s sessions).
// What is left is the time the runner takes to hear of the deletion.
func TestDeleteallWithAForeignClientNext(t *testing.T) {
	env := newSharedEnv(t, true, false, true)
	mutex := kindSpec{"curator-mutex", "Curator InterProcessMutex", curatorKind("mutex")}
	// Not Curator's LeaderLatch: its node deleted while its parent goes,
	// it at times never queues again; nor Kazoo's Lock, which at times
	// fails with NoNodeError then (liveness matters of theirs, with or
	// without herald's change; where Kazoo did own, it owned 5-10 ms after
	// the deleteall, beside the command for 1 s without the change).
	for _, c := range []struct {
		name string
		run  bool
		d    elect.Dialect
		peer kindSpec
	}{
		{"lock-then-curator-mutex", false, auto, mutex},
		{"run-then-curator-mutex", true, elect.DialectCuratorLock, mutex},
	} {
		t.Run(c.name, func(t *testing.T) { deleteallForeignNext(t, env, c.run, c.d, c.peer) })
	}
}

func deleteallForeignNext(t *testing.T, env *sharedEnv, run bool, d elect.Dialect, peer kindSpec) {
	const timeout = 6 * time.Second
	r := newRunnerThenPeer(t, env, peer)
	group, log, b, alive := r.group, r.log, r.b, r.alive
	cm := newCLIMember(t, env, group, r.a, log, cliOpts{dialect: d, run: run, script: stubbornScript, session: timeout, env: []string{"OWN_ALIVE=" + alive}})
	pm := peer.make(t, env, group, b, log, auto)
	r.ownThenQueue(t, env.probe, cm, pm, 20*time.Second)
	time.Sleep(300 * time.Millisecond) // the runner's guard lists the group on the join, a round trip later
	cm.stopping.Store(true)
	fault := wallNow()
	deleteAll(t, env, group)
	acq := log.awaitAcq(t, b, 20*time.Second, "after the deleteall")
	time.Sleep(timeout / 6) // the old grace, which the command no longer gets
	last := lastAlive(t, alive)
	t.Logf("deleteall; the command's last stamp %v after, %s owned %v after",
		time.Duration(last-fault).Round(time.Millisecond), log.label(b), time.Duration(acq-fault).Round(time.Millisecond))
	if over := time.Duration(last - acq); over > timeout/12 {
		t.Errorf("the deposed runner's command ran on %v beside %s (at most %v, the time to hear of the deletion, expected)\n%s",
			over.Round(time.Millisecond), log.label(b), timeout/12, lastBytes(cm.out.String()))
	}
	pm.release(t)
}

// deleteAll deletes group and everything below it, leaves first, as
// zkCli.sh's deleteall does.
func deleteAll(t *testing.T, env *sharedEnv, group string) {
	t.Helper()
	kids, _, err := env.probe.Children(group)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	for _, k := range kids {
		deleteAll(t, env, group+"/"+k)
	}
	err = env.probe.Delete(group, -1)
	switch {
	case errors.Is(err, zk.ErrNotEmpty):
		t.Logf("delete %s: %v (a client made a node in it again)", group, err)
	case err != nil && !errors.Is(err, zk.ErrNoNode):
		t.Fatal(err)
	}
}
