package integration_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// stepDownBound bounds how long a herald CLI holder keeps its command
// running after a client joined that cannot see its node: the children
// event, one listing, and the command's end (killed at once: the client
// owns already).
const stepDownBound = 3 * time.Second

// stampingScript is holdScript stamping $OWN_ALIVE every 20 ms while it
// holds: a command herald kills (SIGKILL runs no trap) leaves its last
// stamp as the end of its tenure (see killedAt).
const stampingScript = `printf 'acq %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"
i=0
while [ ! -e "$OWN_REL" ] && [ "$i" -lt 3000 ]; do date +%s%N >> "$OWN_ALIVE"; sleep 0.02; i=$((i+1)); done
printf 'rel %s %s\n' "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"`

// killedAt waits up to d for the command stamping alive to stop, and
// logs its last stamp as who's rel: a killed command logs none itself.
func killedAt(t *testing.T, log *ownLog, who, alive string, d time.Duration) int64 {
	t.Helper()
	last, still := lastAlive(t, alive), time.Now()
	for deadline := time.Now().Add(d); time.Since(still) < 300*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("herald's command still ran %v after it should have stopped", d)
		}
		if v := lastAlive(t, alive); v != last {
			last, still = v, time.Now()
		}
	}
	log.add("rel", who, last)
	return last
}

// trapScript is holdScript for a command herald stops: it logs rel on
// SIGTERM too, so the log shows when its tenure really ended.
const trapScript = `trap 'printf "rel %s %s\n" "$OWN_ID" "$(date +%s%N)" >> "$OWN_LOG"; exit 143' TERM
` + holdScript

// TestHolderStepsDownForBlindJoiner (issue 18, a mix herald cannot make
// safe): herald lock and herald run hold in their default dialect when a
// Kazoo client joins, which sees only "__lock__" names and so owns as if
// herald were not there. herald cannot stop Kazoo, but it ends its own
// tenure: the command is stopped within stepDownBound of Kazoo's
// acquisition (often before Kazoo has finished acquiring: herald sees its
// node as it is created), herald lock exits 3 (lost), and herald run --rejoin queues
// again in Kazoo's dialect, behind Kazoo, owning once Kazoo releases.
func TestHolderStepsDownForBlindJoiner(t *testing.T) {
	env := newSharedEnv(t, false, true, true)
	for _, c := range []struct {
		short, name, kazoo string
		run                bool
	}{
		{"cli-lock", "herald lock", "lock", false},
		{"cli-run", "herald run --rejoin", "election", true},
	} {
		t.Run(c.short, func(t *testing.T) {
			group := groupPath(t, "group")
			log := newOwnLog() // two owners for a moment is what this case starts from
			h, k := newID(c.short), newID("kazoo-"+c.kazoo)
			log.name(h, c.name)
			log.name(k, "Kazoo "+c.kazoo)
			alive := filepath.Join(env.dir, h+".alive")
			o := cliOpts{run: c.run, script: stampingScript, env: []string{"OWN_ALIVE=" + alive}}
			if c.run {
				o.env = append(o.env, "HERALD_REJOIN=true")
			}
			mh := newCLIMember(t, env, group, h, log, o)
			mh.start()
			log.awaitAcq(t, h, 20*time.Second, "first, in an empty group")
			if !c.run {
				mh.stopping.Store(true) // its exit is what this case expects
			}
			// An observer from before Kazoo joined: herald's end is
			// reported with its reason, not as a release.
			obs := observeFrom(t, env.addrs, group)
			mk := kazooKind(c.kazoo)(t, env, group, k, log, "")
			mk.start()
			kAcq := log.awaitAcq(t, k, 20*time.Second, "at once: Kazoo does not see herald's node")
			rel := killedAt(t, log, h, alive, stepDownBound+5*time.Second)
			if d := time.Duration(rel - kAcq); d > stepDownBound {
				evs, _ := log.snapshot()
				t.Errorf("herald's command ran %v beside Kazoo's tenure; want at most %v\n%s", d, stepDownBound, log.timeline(evs))
			}
			if end := heraldEnd(t, obs, 10*time.Second); end.Reason != elect.ReasonTwoOwners {
				t.Errorf("observers report herald's end as %+v; want reason %q", end, elect.ReasonTwoOwners)
			}
			if !c.run {
				code, ok := mh.waitExit(10 * time.Second)
				if !ok || code != 3 {
					t.Fatalf("herald lock: exited %v (code %d) after stepping down; want exit 3 (lost)\n%s", ok, code, lastBytes(mh.out.String()))
				}
				if out := mh.out.String(); !strings.Contains(out, "two owners possible") || !strings.Contains(out, "Kazoo") {
					t.Errorf("herald lock does not say why it stepped down (two owners possible, naming Kazoo):\n%s", lastBytes(out))
				}
				return
			}
			var q []string
			eventually(t, 15*time.Second, "herald run queued again in Kazoo's dialect, behind Kazoo", func() bool {
				q, _ = queueOf(env.probe, group)
				info, _ := elect.ParseName(q[len(q)-1])
				return len(q) == 2 && info.Convention == "herald" && strings.HasSuffix(strings.TrimRight(q[1], "0123456789"), "__lock__")
			})
			mk.release(t)
			log.await(t, 20*time.Second, "herald run owning again after Kazoo released", func(evs []ownEvent) bool {
				return countEvents(evs, "acq", h) == 2
			})
			mh.release(t)
			evs, errs := log.snapshot()
			ts, problems := tenuresOf(evs, wallNow())
			if len(errs)+len(problems) > 0 {
				t.Fatalf("errors %v %v\n%s", errs, problems, log.timeline(evs))
			}
			for _, o := range overlapsOf(ts) {
				if o.b.who != k || o.d > stepDownBound {
					t.Errorf("%s acquired while %s held, for %v; want only Kazoo's join, for at most %v\n%s", o.b.who, o.a.who, o.d, stepDownBound, log.timeline(evs))
				}
			}
		})
	}
}

// TestNoCommandBesideAnOwnerThatCameWhileWeWaited: herald lock waits
// behind a herald Lock; a Kazoo Lock joins and owns at once (it does not
// see herald's nodes). When the first lock is released, herald lock wins,
// but Kazoo owns: herald lock must look at the group before it starts its
// command, find Kazoo, and step down without ever running it (exit 3).
func TestNoCommandBesideAnOwnerThatCameWhileWeWaited(t *testing.T) {
	env := newSharedEnv(t, false, true, true)
	ctx := ctxFor(t, 60*time.Second)
	group := groupPath(t, "group")
	log := newOwnLog() // Kazoo owning beside the first lock is how this case starts
	b, k := newID("cli-lock"), newID("kazoo-lock")
	log.name(b, "herald lock")
	log.name(k, "Kazoo Lock")
	first, err := elect.NewLock(session(t, env.addrs), group, elect.CreateParents(), elect.NoHazardCheck())
	if err != nil {
		t.Fatal(err)
	}
	h, err := first.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mb := newCLIMember(t, env, group, b, log, cliOpts{script: trapScript})
	mb.stopping.Store(true) // its exit 3 is what this case expects
	mb.start()
	awaitQueue(t, env.probe, group, 2, 15*time.Second, log)
	mk := kazooKind("lock")(t, env, group, k, log, "")
	mk.start()
	log.awaitAcq(t, k, 20*time.Second, "at once: Kazoo does not see herald's nodes")
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	code, ok := mb.waitExit(15 * time.Second)
	out := mb.out.String()
	var last string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "before the command started") {
			last = l
		}
	}
	if !ok || code != 3 || !strings.Contains(last, "Kazoo") {
		t.Fatalf("herald lock: exited %v (code %d); want exit 3 with a line saying it lost the lock before the command started, naming Kazoo:\n%s", ok, code, lastBytes(out))
	}
	if evs, _ := log.snapshot(); countEvents(evs, "acq", b) != 0 {
		t.Fatalf("herald lock ran its command beside Kazoo's tenure:\n%s", log.timeline(evs))
	}
}

// observeFrom observes group from a session of its own, for the test's
// life, once its first snapshot shows an owner.
func observeFrom(t *testing.T, addrs []string, group string) *elect.Observer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := elect.NewSession(ctx, addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	o, err := elect.Observe(ctx, s, group)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-o.Changes():
		if c.Kind != elect.Snapshot || c.Owner == nil {
			t.Fatalf("first change %+v; want a snapshot with herald owning", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot from the observer within 10s")
	}
	return o
}

// heraldEnd is the first owner change o reports whose previous owner is
// a herald node: how observers saw herald's tenure end.
func heraldEnd(t *testing.T, o *elect.Observer, within time.Duration) elect.Change {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case c := <-o.Changes():
			if c.Kind != elect.OwnerChanged || c.Previous == nil {
				continue
			}
			if info, _ := elect.ParseName(c.Previous.Node); info.Convention == "herald" {
				return c
			}
		case <-deadline:
			t.Fatalf("no owner change from a herald owner within %v", within)
		}
	}
}
