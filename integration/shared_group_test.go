package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// Issue 18: herald in groups it shares with Apache Curator, Kazoo,
// go-zookeeper and the classic recipe. Each case logs every participant's
// tenures (shared_group_helpers_test.go) and fails when two participants
// owned at once, or when one did not own soon after the one before it left.

// heraldForms are the ways a user runs herald: the library's Lock and
// Election, and the CLI's herald lock and herald run (processes of their
// own, built from this module).
var heraldForms = []struct {
	kindSpec
	election bool
}{
	{kindSpec{"Lock", "herald Lock", heraldLock}, false},
	{kindSpec{"Election", "herald Election", heraldElection}, true},
	{kindSpec{"cli-lock", "herald lock", heraldLockCLI}, false},
	{kindSpec{"cli-run", "herald run", heraldRunCLI}, true},
}

// sharingTable is what the README tells users, and what
// TestSharedGroupPairs checks: which dialect a herald participant must be
// given to share a group with each peer.
//
// A herald participant that joins after the peer needs nothing: herald
// reads the peer's node names and writes its own in the same dialect
// (elect.DialectAuto, the default). One that queues FIRST cannot know who
// comes later. It writes the default, "_c_<id>-lock-<seq>" for a lock and
// "_c_<id>-latch-<seq>" for an election; where the peer cannot order that
// name by its sequence, herald must be told the peer's dialect with
// elect.WithDialect or --dialect:
//
//	peer (joining after herald)   herald Lock, herald lock   herald Election, herald run
//	Curator InterProcessMutex     default                    curator-lock
//	Curator LeaderSelector        default                    curator-lock
//	Curator LeaderLatch           curator-latch              default
//	go-zookeeper zk.Lock          default                    curator-lock
//	Kazoo Lock                    kazoo                      kazoo
//	Kazoo Election                kazoo                      kazoo
//	classic recipe                default                    default
//
// Why: Curator sorts by the text after the last "lock-" (mutex, selector)
// or "latch-" (latch), go-zookeeper's Lock parses the number after "lock-"
// (or "__"), Kazoo sees only names ending in "__lock__<seq>", and the
// classic recipe reads the trailing sequence alone. The classic client
// names its nodes "lock-" beside a lock and "candidate-<sessionID>_" beside
// an election.
var sharingTable = []struct {
	peer          kindSpec
	classic       bool // the peer is the classic recipe: its names follow herald's recipe
	lockFirst     elect.Dialect
	electionFirst elect.Dialect
}{
	{kindSpec{"curator-mutex", "Curator InterProcessMutex", curatorKind("mutex")}, false, auto, elect.DialectCuratorLock},
	{kindSpec{"curator-selector", "Curator LeaderSelector", curatorKind("selector")}, false, auto, elect.DialectCuratorLock},
	{kindSpec{"curator-latch", "Curator LeaderLatch", curatorKind("latch")}, false, elect.DialectCuratorLatch, auto},
	{kindSpec{"gozk-lock", "go-zookeeper zk.Lock", gozkLock}, false, auto, elect.DialectCuratorLock},
	{kindSpec{"kazoo-lock", "Kazoo Lock", kazooKind("lock")}, false, elect.DialectKazoo, elect.DialectKazoo},
	{kindSpec{"kazoo-election", "Kazoo Election", kazooKind("election")}, false, elect.DialectKazoo, elect.DialectKazoo},
	{kindSpec{"classic", "classic recipe, NodeDeleted only", classicLock}, true, auto, auto},
}

const auto = elect.DialectAuto

const (
	// pairHold is how long the first participant keeps owning once the
	// second queued: a second that misreads the queue owns within it.
	pairHold = 400 * time.Millisecond
	// pairHandoff bounds the wait of the second after the first released.
	pairHandoff = 5 * time.Second
)

// TestSharedGroupPairs (make test): every herald form beside every peer,
// in both queue orders, in a fresh group each. The first participant owns
// and keeps owning while the second queues; then it releases, and the
// second must own within pairHandoff and never while the first held. One
// Curator JVM and one Kazoo process serve every case.
//
// Where the table forces a dialect, herald-first-default runs the same
// pair in the default dialect and expects it to go wrong (the peer owns
// while herald holds, fails on herald's name, or never wakes), so the
// table forces nothing in vain.
//
// Also: each peer beside itself and each herald form beside itself (the
// harness's baseline, which must pass whatever the core does), a group
// that really has two owners (Curator's mutex beside Kazoo's lock, which
// do not see each other's nodes) that the checker must catch, and the
// groups herald must refuse: a Kazoo node beside a Curator or go-zookeeper
// node.
func TestSharedGroupPairs(t *testing.T) {
	env := newSharedEnv(t, true, true, true)

	t.Run("baseline", func(t *testing.T) {
		for _, row := range sharingTable {
			t.Run(row.peer.short, func(t *testing.T) { runPair(t, env, row.peer, row.peer, auto, auto) })
		}
		for _, f := range heraldForms {
			t.Run(f.short, func(t *testing.T) { runPair(t, env, f.kindSpec, f.kindSpec, auto, auto) })
		}
	})
	t.Run("harness-sees-two-owners", func(t *testing.T) { twoOwnersSeen(t, env) })

	for _, f := range heraldForms {
		t.Run(f.short, func(t *testing.T) {
			for _, row := range sharingTable {
				peer, need := row.peer, row.lockFirst
				if f.election {
					need = row.electionFirst
				}
				if row.classic && f.election {
					peer.make = classicElection
				}
				t.Run(peer.short, func(t *testing.T) {
					t.Run("herald-first", func(t *testing.T) { runPair(t, env, f.kindSpec, peer, need, auto) })
					t.Run("peer-first", func(t *testing.T) { runPair(t, env, peer, f.kindSpec, auto, auto) })
					if need != auto {
						t.Run("herald-first-default", func(t *testing.T) { needsDialect(t, env, f.kindSpec, peer, need) })
					}
				})
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		for _, other := range []struct {
			kindSpec
			says string // how herald's message names the client
		}{
			{kindSpec{"curator-mutex", "Curator InterProcessMutex", curatorKind("mutex")}, "curator"},
			{kindSpec{"gozk-lock", "go-zookeeper zk.Lock", gozkLock}, "go-zookeeper"},
		} {
			t.Run("kazoo+"+other.short, func(t *testing.T) { refusedGroup(t, env, other.kindSpec, other.says) })
		}
	})
}

// dialectNote labels a forced dialect.
func dialectNote(d elect.Dialect) string {
	if d == "" || d == auto {
		return ""
	}
	return ", dialect " + string(d)
}

// runPair is one case: first owns, second queues behind it, first holds
// pairHold longer and releases, second must own within pairHandoff. d1 and
// d2 are the dialects the two are forced to write (auto: none).
func runPair(t *testing.T, env *sharedEnv, first, second kindSpec, d1, d2 elect.Dialect) {
	group := groupPath(t, "group")
	log := newOwnLog()
	a, b := newID(first.short), newID(second.short)
	log.name(a, first.name+dialectNote(d1))
	log.name(b, second.name+dialectNote(d2))
	ma := first.make(t, env, group, a, log, d1)
	mb := second.make(t, env, group, b, log, d2)
	t.Cleanup(func() { log.checkExclusive(t) }) // before the members' cleanups stop them

	ma.start()
	log.awaitAcq(t, a, 20*time.Second, "first, in an empty group")
	mb.start()
	awaitQueue(t, env.probe, group, 2, 15*time.Second, log)
	time.Sleep(pairHold) // holding, with the second queued
	if evs, _ := log.snapshot(); hasEvent(evs, "acq", b) {
		t.Fatalf("%s owns while %s still holds (the ownership log follows)", log.label(b), log.label(a))
	}
	if h := hazardOf(t, env, group); h != "" {
		t.Errorf("observers call a safe pair a hazard: %s", h)
	}
	ma.release(t)
	log.awaitAcq(t, b, pairHandoff, "after "+log.label(a)+" released (a waiter that never wakes hangs here)")
	time.Sleep(50 * time.Millisecond)
	mb.release(t)
	awaitEmpty(t, env, group, log)
}

func hasEvent(evs []ownEvent, kind, who string) bool {
	_, ok := firstEvent(evs, kind, who)
	return ok
}

// awaitEmpty checks that the participants left no node behind.
func awaitEmpty(t testing.TB, env *sharedEnv, group string, log *ownLog) {
	t.Helper()
	var q []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		if q, err = queueOf(env.probe, group); err != nil {
			t.Fatalf("list %s: %v", group, err)
		}
		if len(q) == 0 {
			return
		}
		if time.Now().After(deadline) {
			evs, _ := log.snapshot()
			t.Fatalf("%s still holds %v 5s after every participant released\n%s", group, q, log.timeline(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// needsDialect checks that the table forces nothing in vain: in the
// default dialect, the peer joining behind herald owns while herald holds
// (it misorders herald's node or does not see it), fails on herald's
// name, or never wakes when herald releases.
func needsDialect(t *testing.T, env *sharedEnv, herald, peer kindSpec, need elect.Dialect) {
	group := groupPath(t, "group")
	log := newOwnLog() // no exclusivity check: two owners are what this case expects
	a, b := newID(herald.short), newID(peer.short)
	log.name(a, herald.name)
	log.name(b, peer.name)
	ma := herald.make(t, env, group, a, log, auto)
	mb := peer.make(t, env, group, b, log, auto)
	ma.start()
	log.awaitAcq(t, a, 20*time.Second, "first, in an empty group")
	if cm, ok := ma.(*cliMember); ok {
		stepsDown(t, cm, mb, log, a, b, need)
		return
	}
	mb.start()
	awaitQueue(t, env.probe, group, 2, 15*time.Second, log)
	// Observers see it coming from the names alone.
	if h := hazardOf(t, env, group); h == "" {
		q, _ := queueOf(env.probe, group)
		t.Errorf("observers see no hazard in %v, where %s misreads herald's default names", q, log.label(b))
	} else if !strings.Contains(h, "--dialect "+string(need)) {
		t.Errorf("observers' hazard %q does not name the dialect the table forces, %s", h, need)
	}
	unsafe := func(d time.Duration) string {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			evs, errs := log.snapshot()
			switch {
			case len(errs) > 0:
				return "the peer failed: " + errs[0]
			case hasEvent(evs, "acq", b) && !hasEvent(evs, "rel", a):
				return fmt.Sprintf("%s owned while %s held", log.label(b), log.label(a))
			case hasEvent(evs, "acq", b):
				return ""
			}
		}
		return "timeout"
	}
	if why := unsafe(pairHold); why != "timeout" {
		t.Logf("without --dialect %s: %s", need, why)
		return
	}
	ma.release(t)
	switch why := unsafe(pairHandoff); why {
	case "":
		evs, _ := log.snapshot()
		t.Errorf("%s queued behind %s in the default dialect and owned in turn: the table forces dialect %s for nothing; update sharingTable and the README\n%s",
			log.label(b), log.label(a), need, log.timeline(evs))
	case "timeout":
		t.Logf("without --dialect %s: %s never owned after %s released", need, log.label(b), log.label(a))
	default:
		t.Logf("without --dialect %s, after %s released: %s", need, log.label(a), why)
	}
}

// stepsDown is needsDialect for herald lock and herald run, which step
// down rather than own beside a client that cannot read their node
// (elect.WatchForHazards): in the default dialect the peer joining
// behind them makes them exit 3 with "two owners possible", unless it
// fails on herald's name first (go-zookeeper's Lock), which is as wrong.
func stepsDown(t *testing.T, cm *cliMember, peer member, log *ownLog, a, b string, need elect.Dialect) {
	cm.stopping.Store(true) // its exit is one of the outcomes expected
	peer.start()
	for deadline := time.Now().Add(pairHandoff); time.Now().Before(deadline); {
		if code, ok := cm.waitExit(10 * time.Millisecond); ok {
			if out := cm.out.String(); code != 3 || !strings.Contains(out, "two owners possible") {
				t.Fatalf("%s exited %d as %s joined; want 3, stepping down for two owners possible:\n%s", log.label(a), code, log.label(b), lastBytes(out))
			}
			t.Logf("without --dialect %s: %s stepped down as %s joined", need, log.label(a), log.label(b))
			return
		}
		if _, errs := log.snapshot(); len(errs) > 0 {
			t.Logf("without --dialect %s: the peer failed: %s", need, errs[0])
			return
		}
	}
	evs, _ := log.snapshot()
	t.Errorf("%s joined behind %s in the default dialect: herald did not step down and the peer did not fail; the table forces dialect %s for nothing? update sharingTable and the README\n%s",
		log.label(b), log.label(a), need, log.timeline(evs))
}

// twoOwnersSeen checks the checker: Curator's mutex and Kazoo's lock do
// not see each other's nodes, so both own at once, and the log must say so.
func twoOwnersSeen(t *testing.T, env *sharedEnv) {
	group := groupPath(t, "group")
	log := newOwnLog()
	k, c := newID("kazoo-lock"), newID("curator-mutex")
	log.name(k, "Kazoo Lock")
	log.name(c, "Curator InterProcessMutex")
	mk := kazooKind("lock")(t, env, group, k, log, "")
	mc := curatorKind("mutex")(t, env, group, c, log, "")
	mk.start()
	log.awaitAcq(t, k, 20*time.Second, "first")
	mc.start()
	log.awaitAcq(t, c, 20*time.Second, "beside Kazoo, whose node Curator does not see")
	if h := hazardOf(t, env, group); !strings.Contains(h, "groups of their own") {
		t.Errorf("observers' hazard for Curator's mutex beside Kazoo's lock: %q; want one that tells to separate them", h)
	}
	time.Sleep(100 * time.Millisecond)
	mc.release(t)
	mk.release(t)
	evs, errs := log.snapshot()
	ts, problems := tenuresOf(evs, wallNow())
	o := overlapsOf(ts)
	if len(o) != 1 || len(errs)+len(problems) > 0 || o[0].a.who != k || o[0].b.who != c || o[0].d < 100*time.Millisecond {
		t.Fatalf("overlaps %+v, errors %v %v; want exactly one of at least 100ms: %s acquiring while %s held\n%s", o, errs, problems, c, k, log.timeline(evs))
	}
}

// refusedGroup: a group already holding a Kazoo node and a node of other
// (a Curator mutex, which owns beside Kazoo because neither sees the
// other, or a go-zookeeper Lock, which waits behind Kazoo) is one no name
// of herald's can serve. Every herald form in the default dialect must
// refuse it at once with ErrUnsafeGroup (the CLI: non-zero, naming both
// clients) and leave no node behind.
func refusedGroup(t *testing.T, env *sharedEnv, other kindSpec, says string) {
	group := groupPath(t, "group")
	log := newOwnLog() // no exclusivity check: the group is unsafe by construction
	k, o := newID("kazoo-lock"), newID(other.short)
	log.name(k, "Kazoo Lock")
	log.name(o, other.name)
	mk := kazooKind("lock")(t, env, group, k, log, "")
	mo := other.make(t, env, group, o, log, "")
	mk.start()
	log.awaitAcq(t, k, 20*time.Second, "first")
	mo.start()
	before := awaitQueue(t, env.probe, group, 2, 15*time.Second, log)
	unchanged := func(t *testing.T, who string) {
		t.Helper()
		var q []string
		deadline := time.Now().Add(2 * time.Second)
		for {
			q, _ = queueOf(env.probe, group)
			if slices.Equal(q, before) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s left the group holding %v; before it came: %v", who, q, before)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, f := range heraldForms {
		t.Run(f.short, func(t *testing.T) {
			if f.short == "cli-lock" || f.short == "cli-run" {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				id := newID(f.short)
				cmd := exec.CommandContext(ctx, env.bin, append(heraldArgs(env, group, id, "", f.election, 0, 0), "--", "true")...)
				cmd.Env = cliEnv()
				start := time.Now()
				out, _ := cmd.CombinedOutput()
				took, code, msg := time.Since(start), cmd.ProcessState.ExitCode(), clientsNamed(string(out), group, k, o)
				switch {
				case ctx.Err() != nil:
					t.Fatalf("%s beside %v did not exit within 10s (it queued instead of refusing):\n%s", f.name, before, out)
				case code == 0:
					t.Fatalf("%s beside %v ran its command and exited 0; want a refusal:\n%s", f.name, before, out)
				case !strings.Contains(msg, "kazoo") || !strings.Contains(msg, says):
					t.Fatalf("%s exited %d; want a message naming Kazoo and %s:\n%s", f.name, code, says, out)
				case took > 5*time.Second:
					t.Errorf("%s took %v to refuse; want it at once", f.name, took.Round(time.Millisecond))
				}
				t.Logf("%s exited %d in %v: %s", f.name, code, took.Round(time.Millisecond), strings.TrimSpace(string(out)))
				unchanged(t, f.name)
				return
			}
			s := session(t, env.addrs, elect.WithSessionTimeout(sharedPeerSession))
			take := heraldTaker(t, s, group, newID(f.short), "", f.election)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			h, err := take(ctx)
			took := time.Since(start)
			if err == nil {
				_ = h.Release(context.Background())
				t.Fatalf("%s took ownership of a group holding %v; want elect.ErrUnsafeGroup", f.name, before)
			}
			if !errors.Is(err, elect.ErrUnsafeGroup) {
				t.Fatalf("%s beside %v: %v after %v; want an error matching elect.ErrUnsafeGroup at once", f.name, before, err, took.Round(time.Millisecond))
			}
			if took > 3*time.Second {
				t.Errorf("%s took %v to refuse; want it at once", f.name, took.Round(time.Millisecond))
			}
			if msg := clientsNamed(err.Error(), group, k, o); !strings.Contains(msg, "kazoo") || !strings.Contains(msg, says) {
				t.Errorf("%s: %v; want the error to name Kazoo and %s", f.name, err, says)
			}
			t.Logf("%s refused in %v: %v", f.name, took.Round(time.Millisecond), err)
			unchanged(t, f.name)
		})
	}
}

// clientsNamed is msg in lower case without the group's path and the
// participants' ids, which name clients too: what is left names the
// clients only where herald's message does.
func clientsNamed(msg, group string, ids ...string) string {
	msg = strings.ReplaceAll(msg, group, "GROUP")
	for _, id := range ids {
		msg = strings.ReplaceAll(msg, id, "ID")
	}
	return strings.ToLower(msg)
}

// TestWriteToHolderNode: a third session writes to a herald holder's node
// (a plain setData, and Curator's Revoker.attemptRevoke, which writes
// "__REVOKE__"), with a herald waiter queued behind it. A write is not a
// release: the waiter must not own and the holder must keep holding. Then,
// for herald run, a deposed leader's command: its checkpoint put succeeds
// while it leads and fails with exit status 3 once a third session deleted
// its node and the next leader checkpointed.
func TestWriteToHolderNode(t *testing.T) {
	env := newSharedEnv(t, true, false, true)
	forms := []kindSpec{heraldForms[0].kindSpec, heraldForms[2].kindSpec, heraldForms[3].kindSpec}
	writes := []struct {
		name  string
		write func(t *testing.T, group, node string, log *ownLog)
	}{
		{"set", func(t *testing.T, group, node string, _ *ownLog) {
			if _, err := env.probe.Set(group+"/"+node, []byte("written by a third session"), -1); err != nil {
				t.Fatalf("set %s: %v", node, err)
			}
		}},
		{"revoke", func(t *testing.T, group, node string, log *ownLog) {
			ch := env.cur.register(node, log)
			if err := env.cur.send("revoke " + group + " " + node); err != nil {
				t.Fatal(err)
			}
			if _, err := env.cur.wait(ch, "revoked", 15*time.Second); err != nil {
				t.Fatalf("Curator Revoker.attemptRevoke(%s): %v", node, err)
			}
		}},
	}
	for _, f := range forms {
		t.Run(f.short, func(t *testing.T) {
			for _, w := range writes {
				t.Run(w.name, func(t *testing.T) { writeToHolder(t, env, f, w.write) })
			}
		})
	}
	t.Run("cli-run/deposed-checkpoint", func(t *testing.T) { deposedCheckpoint(t, env) })
}

// writeQuiet is how long after the write the waiter must still wait and
// the holder still hold.
const writeQuiet = 1500 * time.Millisecond

func writeToHolder(t *testing.T, env *sharedEnv, f kindSpec, write func(*testing.T, string, string, *ownLog)) {
	group := groupPath(t, "group")
	log := newOwnLog()
	hid, wid := newID("holder"), newID("waiter")
	log.name(hid, f.name)
	log.name(wid, f.name)
	holder := f.make(t, env, group, hid, log, auto)
	waiter := f.make(t, env, group, wid, log, auto)
	t.Cleanup(func() { log.checkExclusive(t) })

	holder.start()
	log.awaitAcq(t, hid, 20*time.Second, "first")
	waiter.start()
	q := awaitQueue(t, env.probe, group, 2, 15*time.Second, log)
	awaitWatched(t, env, group+"/"+q[0], 10*time.Second)
	write(t, group, q[0], log)
	wrote := wallNow()
	if ok, st, err := env.probe.Exists(group + "/" + q[0]); err != nil || !ok || st.Version < 1 {
		t.Fatalf("after the write, %s: exists %v, stat %+v, %v; want it written (version 1 or more)", q[0], ok, st, err)
	}
	deadline := time.Now().Add(writeQuiet)
	for time.Now().Before(deadline) {
		evs, errs := log.snapshot()
		if len(errs) > 0 {
			t.Fatalf("after a third session wrote %s: %v\n%s", q[0], errs, log.timeline(evs))
		}
		if hasEvent(evs, "acq", wid) {
			t.Fatalf("TWO OWNERS: %s owns %s after a third session wrote the holder's node %s at %s, while %s holds it\n%s",
				log.label(wid), group, q[0], log.at(wrote), log.label(hid), log.timeline(evs))
		}
		if err := holder.holding(); err != nil {
			t.Fatalf("%s stopped holding after a third session wrote its node %s: %v\n%s", log.label(hid), q[0], err, log.timeline(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	holder.release(t)
	log.awaitAcq(t, wid, pairHandoff, "after the holder released")
	waiter.release(t)
	awaitEmpty(t, env, group, log)
}

// checkpointScript holds an flock on $OWN_LOCK while it runs (logging
// "overlap ID 0" when another command holds it), logs acq, checkpoints at
// once (logging "put1 ID STATUS") and holds until $OWN_REL appears. It
// ignores SIGTERM, so that only its runner's SIGKILL ends it once the
// leadership is lost.
const checkpointScript = `trap '' TERM
exec 9>>"$OWN_LOCK"
flock -n 9 || printf 'overlap %s 0\n' "$OWN_ID" >> "$OWN_LOG"
printf 'acq %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"
"$HERALD_BIN" checkpoint put "by-$OWN_ID" 2>>"$OWN_ERR"
printf 'put1 %s %s\n' "$OWN_ID" "$?" >> "$OWN_LOG"
i=0
while [ ! -e "$OWN_REL" ] && [ "$i" -lt 3000 ]; do
	sleep 0.02
	i=$((i+1))
done
printf 'rel %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"`

// deposedCheckpoint: an operator deletes the leading runner's node. Its
// command ignores SIGTERM; the next leader's must not start before the
// deposed runner's SIGKILL ended it (the flock), and a checkpoint written
// later with the deposed leader's environment (a process that escaped, a
// machine thawed) is refused, exit 3, the next leader's checkpoint kept.
func deposedCheckpoint(t *testing.T, env *sharedEnv) {
	group := groupPath(t, "job")
	log := newOwnLog()
	lock := filepath.Join(env.dir, group[strings.LastIndexByte(group, '/')+1:]+".lock")
	runner := func(short string) (*cliMember, string) {
		id := newID(short)
		log.name(id, "herald run")
		errs := filepath.Join(env.dir, id+".err")
		m := newCLIMember(t, env, group, id, log, cliOpts{run: true, script: checkpointScript, grace: time.Minute,
			session: 3 * time.Second, env: []string{"OWN_LOCK=" + lock, "OWN_ERR=" + errs}})
		return m, errs
	}
	putStatus := func(kind, who, errFile string) int64 {
		t.Helper()
		evs := log.await(t, 20*time.Second, kind+" of "+who, func(evs []ownEvent) bool { return hasEvent(evs, kind, who) })
		e, _ := firstEvent(evs, kind, who)
		if e.v != 0 {
			b, _ := os.ReadFile(errFile)
			t.Logf("%s: herald checkpoint put exited %d: %s", who, e.v, b)
		}
		return e.v
	}
	r1, err1 := runner("leader")
	r2, err2 := runner("next")

	r1.start()
	if st := putStatus("put1", r1.id, err1); st != 0 {
		t.Fatalf("the leader's command could not checkpoint (exit %d)", st)
	}
	r2.start()
	q := awaitQueue(t, env.probe, group, 2, 15*time.Second, log)
	_, st, err := env.probe.Get(group + "/" + q[0])
	if err != nil {
		t.Fatal(err)
	}
	r1.releasing.Store(true) // deposed, it exits 3 once its command is dead
	deposed := wallNow()
	if err := env.probe.Delete(group+"/"+q[0], -1); err != nil {
		t.Fatalf("delete the leader's node %s: %v", q[0], err)
	}
	if st := putStatus("put1", r2.id, err2); st != 0 {
		t.Fatalf("the next leader's command could not checkpoint (exit %d)", st)
	}
	evs, _ := log.snapshot()
	if e, _ := firstEvent(evs, "acq", r2.id); e.v < deposed {
		t.Fatalf("the next leader's command started at %s, before the leader was deposed at %s\n%s", log.at(e.v), log.at(deposed), log.timeline(evs))
	}
	if hasEvent(evs, "overlap", r2.id) {
		t.Fatalf("the next leader's command started while the deposed one still ran\n%s", log.timeline(evs))
	}
	late := exec.Command(env.bin, "checkpoint", "put", "late-"+r1.id)
	late.Env = cliEnv("HERALD_ELECTION="+group, "HERALD_NODE="+q[0], "HERALD_TERM="+strconv.FormatInt(st.Czxid, 10),
		"HERALD_ID="+r1.id, "HERALD_ZK="+env.connect)
	out, _ := late.CombinedOutput()
	if code := late.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("a checkpoint with the deposed leader's environment after the next leader's: exit %d, want 3 (rejected):\n%s", code, out)
	}
	s := session(t, env.addrs)
	cp, err := elect.ReadCheckpoint(ctxFor(t, 10*time.Second), s, group)
	if err != nil || string(cp.Data) != "by-"+r2.id {
		t.Fatalf("checkpoint = %q, %v; want by-%s (the deposed leader's late write rejected)", cp.Data, err, r2.id)
	}
	if code, ok := r1.waitExit(15 * time.Second); !ok || code != 3 {
		t.Fatalf("deposed runner: exited %v, code %d; want exit status 3\n%s", ok, code, lastBytes(r1.out.String()))
	}
	r2.release(t)
}

// TestSharedGroupMix (make test): random mixes, one group per family of
// peers, every participant taking ownership again and again and holding
// it 20–80 ms, for mixDuration. No two may ever own at once, nobody may
// be left without an owner longer than mixGap, nobody may wait longer
// than mixWait (and a runner's bound more for each further runner in
// the group), and every participant must own at least once.
func TestSharedGroupMix(t *testing.T) {
	env := newSharedEnv(t, true, true, true)
	mixGroups(t, env, mixDuration, 1)
}

const (
	mixDuration = 10 * time.Second
	// runnerBound is how long a herald run or herald lock waits, at
	// most, before it starts its command after an owner whose release
	// does not vouch for the owners before it (a library handle's, a
	// foreign client's; see predecessorBound in cmd/herald): eleven
	// twelfths of the session timeout. In a mix, a runner that follows
	// such an owner leaves the group without a running owner that long.
	runnerBound = sharedPeerSession * 11 / 12
	mixGap      = runnerBound + time.Second
	mixWait     = 5 * time.Second
)

// mixGroups runs the three mixes at once, with n participants of each kind:
//
//   - locks: herald Lock, herald lock, Curator InterProcessMutex and
//     LeaderSelector, go-zookeeper zk.Lock, the classic recipe ("lock-");
//   - elections: herald Election, herald run, Curator LeaderLatch, the
//     classic recipe named "latch-" (LeaderLatch orders only names ending in
//     "latch-<seq>");
//   - Kazoo: herald Lock forced to DialectKazoo, Kazoo Lock and Election.
func mixGroups(t *testing.T, env *sharedEnv, duration time.Duration, n int) {
	type mix struct {
		name    string
		group   string
		log     *ownLog
		cyclers []cycler
	}
	mixes := []*mix{{name: "locks"}, {name: "elections"}, {name: "kazoo"}}
	for _, m := range mixes {
		m.group, m.log = groupPath(t, m.name), newOwnLog()
	}
	locks, elections, kz := mixes[0], mixes[1], mixes[2]
	for range n {
		locks.cyclers = append(locks.cyclers,
			heraldCycler(t, env, locks.group, locks.log, auto, false),
			cliCycler(t, env, locks.group, locks.log, false),
			peerCycler(t, env.cur, "mutex", "curator-mutex", "Curator InterProcessMutex", locks.group, locks.log, duration),
			peerCycler(t, env.cur, "selector", "curator-selector", "Curator LeaderSelector", locks.group, locks.log, duration),
			gozkCycler(t, env, locks.group, locks.log),
			classicCycler(t, env, locks.group, locks.log, "classic recipe (lock-)", func(*zk.Conn) string { return "lock-" }))
		elections.cyclers = append(elections.cyclers,
			heraldCycler(t, env, elections.group, elections.log, auto, true),
			cliCycler(t, env, elections.group, elections.log, true),
			peerCycler(t, env.cur, "latch", "curator-latch", "Curator LeaderLatch", elections.group, elections.log, duration),
			classicCycler(t, env, elections.group, elections.log, "classic recipe (latch-)", func(*zk.Conn) string { return "latch-" }))
		kz.cyclers = append(kz.cyclers,
			heraldCycler(t, env, kz.group, kz.log, elect.DialectKazoo, false),
			peerCycler(t, env.kz, "lock", "kazoo-lock", "Kazoo Lock", kz.group, kz.log, duration),
			peerCycler(t, env.kz, "election", "kazoo-election", "Kazoo Election", kz.group, kz.log, duration))
	}
	var all []cycler
	for _, m := range mixes {
		all = append(all, m.cyclers...)
	}
	start, until := runMix(t, duration, all)
	for _, m := range mixes {
		var whos []string
		for _, c := range m.cyclers {
			whos = append(whos, c.id)
		}
		// Each runner ahead of a participant may wait its bound.
		m.log.mixReport(t, fmt.Sprintf("%s (%s)", m.name, m.group), whos, start, until, mixGap, mixWait+time.Duration(n-1)*runnerBound)
	}
}
