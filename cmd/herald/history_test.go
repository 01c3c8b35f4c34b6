package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/sinks/audit"
)

// observation is how late a bridge may see a change its holder made (or
// how early, against the moment the holder's call returned): the tolerance
// of every comparison with the truth below.
const observation = 500 * time.Millisecond

// held is one tenure as its holder lived it.
type held struct{ from, until time.Time }

// truths records every tenure the participants of a test held, by node.
type truths struct {
	mu sync.Mutex
	m  map[string]held
}

func (tr *truths) add(node string, h held) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.m[node] = h
}

func (tr *truths) get(node string) (held, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	h, ok := tr.m[node]
	return h, ok
}

// churnTruth runs n participants in group g, each on its own session: take
// ownership, hold it for lo..hi, give it back, again, until stop is called;
// stop waits for them and returns. Every tenure is recorded in tr.
func churnTruth(t *testing.T, g string, recipe elect.Recipe, n int, lo, hi time.Duration, tr *truths) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// waiting counts the participants inside take. At the stop an owner
	// lets go only once none is: a waiter given up as the owner released
	// was, for the moment between, the group's lowest node, which a bridge
	// rightly reports as a tenure though the waiter never heard it owned.
	var waiting atomic.Int32
	for i := 0; i < n; i++ {
		s := zkSession(t)
		id := fmt.Sprintf("p%d", i)
		var take func(context.Context) (*elect.Handle, error)
		if recipe == elect.RecipeLock {
			l, err := elect.NewLock(s, g, elect.CreateParents(), elect.WithID(id))
			if err != nil {
				t.Fatal(err)
			}
			take = l.Acquire
		} else {
			el, err := elect.NewElection(s, g, elect.CreateParents())
			if err != nil {
				t.Fatal(err)
			}
			take = func(ctx context.Context) (*elect.Handle, error) { return el.Campaign(ctx, id) }
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				waiting.Add(1)
				h, err := take(ctx)
				waiting.Add(-1)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("%s in %s: %v", id, g, err)
					}
					return
				}
				from := time.Now()
				select {
				case <-time.After(lo + rand.N(hi-lo)):
				case <-h.Done():
					t.Errorf("%s lost %s (%s) while holding it", id, g, h.Reason())
				case <-ctx.Done():
					// Stopping, it still holds lo: a tenure the stop cut to a
					// few milliseconds could begin and end between two of a
					// bridge's listings, which is a gap, not a row, and the
					// histories checked here would lack it.
					time.Sleep(lo - time.Since(from))
					for end := time.Now().Add(5 * time.Second); waiting.Load() > 0 && time.Now().Before(end); {
						time.Sleep(10 * time.Millisecond)
					}
				}
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				if recipe == elect.RecipeLock {
					err = h.Release(rctx)
				} else {
					err = h.Resign(rctx)
				}
				rcancel()
				tr.add(h.Node(), held{from, time.Now()})
				if err != nil {
					t.Errorf("%s releasing %s: %v", id, g, err)
					return
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// historyJSON runs herald history --json with args and decodes it.
func historyJSON(t *testing.T, args ...string) []audit.Tenure {
	t.Helper()
	out, stderr, code := heraldRun(t, nil, append([]string{"history", "--json"}, args...)...)
	var ts []audit.Tenure
	if err := json.Unmarshal([]byte(out), &ts); code != 0 || err != nil {
		t.Fatalf("history %v: exit %d, %v:\n%s%s", args, code, err, out, stderr)
	}
	return ts
}

// checkAgainstTruth checks every tenure of groups in ts against what its
// holder lived: none is longer than the truth by more than the observation
// delay, whether marked or not; a start or end marked seen is the true one
// within that delay, one marked unseen lies inside the true tenure. It
// returns the tenures of those groups.
func checkAgainstTruth(t *testing.T, name string, ts []audit.Tenure, tr *truths, groups ...string) []audit.Tenure {
	t.Helper()
	var mine []audit.Tenure
	nodes := map[string]bool{}
	for _, x := range ts {
		if !strings.Contains(strings.Join(groups, "\n")+"\n", x.Group+"\n") || x.Missing {
			continue // another group, or a stretch of missing owners: no tenure
		}
		mine = append(mine, x)
		if nodes[x.Owner.Node] {
			t.Errorf("%s: %s appears twice", name, x.Owner.Node)
		}
		nodes[x.Owner.Node] = true
		truth, ok := tr.get(x.Owner.Node)
		if !ok {
			t.Errorf("%s: tenure of %s, who never held %s", name, x.Owner.Node, x.Group)
			continue
		}
		lived := truth.until.Sub(truth.from)
		bad := func(what string, args ...any) {
			t.Errorf("%s: %s %s (held %v from %s to %s): %s; tenure %+v", name, x.Group, x.Owner.Node, lived,
				truth.from.Format("15:04:05.000"), truth.until.Format("15:04:05.000"), fmt.Sprintf(what, args...), x)
		}
		if x.HeldFor > lived+observation {
			bad("history says held for %v (exact %v): longer than the truth", x.HeldFor, x.Exact())
		}
		if !x.From.IsZero() && x.From.Before(truth.from.Add(-observation)) {
			bad("from %s is before it held", x.From.Format("15:04:05.000"))
		}
		if x.FromSeen && x.From.After(truth.from.Add(observation)) {
			bad("from %s marked seen, but it held since %s", x.From.Format("15:04:05.000"), truth.from.Format("15:04:05.000"))
		}
		if !x.Open() && x.Until.After(truth.until.Add(observation)) {
			bad("until %s (seen %v) is after it let go", x.Until.Format("15:04:05.000"), x.UntilSeen)
		}
		if x.UntilSeen && x.Until.Before(truth.until.Add(-observation)) {
			bad("until %s marked seen, but it held until %s", x.Until.Format("15:04:05.000"), truth.until.Format("15:04:05.000"))
		}
		if x.LastSeen.After(truth.until.Add(observation)) {
			bad("last seen holding at %s, after it let go", x.LastSeen.Format("15:04:05.000"))
		}
		if x.Exact() && (x.HeldFor < lived-observation) {
			bad("exact, but held for %v", x.HeldFor)
		}
	}
	return mine
}

// TestHistoryStatesOnlyWhatWasSeen (issue 13): two bridges with --ha, each
// with its own audit log, under lock and election churn; the active one is
// SIGKILLed, restarted as a standby, and the other killed in turn, so each
// log has holes. `herald history` over each log and over both merged: no
// tenure is longer than the truth by more than the observation delay, and
// what a log did not observe is marked. Merged, the logs miss no tenure and
// every one is exact (a standby was up throughout).
func TestHistoryStatesOnlyWhatWasSeen(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	url := natsserver.Start(t).URL()
	base := uniq(t)
	gl, ge, ha := base+"/lock", base+"/leader", base+"-ha"
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a", "audit.log"), filepath.Join(dir, "b", "audit.log")

	// The groups exist (empty) before the bridges look.
	s := zkSession(t)
	l, err := elect.NewLock(s, gl, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	lh, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := lh.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := campaign(t, s, ge, "setup").Resign(context.Background()); err != nil {
		t.Fatal(err)
	}

	httpAddr := regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`)
	// Sources are claimed across the shared ZooKeeper: parallel tests name theirs apart.
	sfx := "-" + newRunID()[:8]
	bridgeUp := func(name, log, role string) (*proc, string) {
		p := start(t, nil, append([]string{"bridge", "--watch", gl, "--watch", ge, "--ha", ha, "--source", name + sfx,
			"--nats", url, "--nats-mode", "core", "--audit", log, "--http", "127.0.0.1:0", "--drain-timeout", "5s"}, zk...)...)
		addr := waitMatch(t, p, httpAddr, 30*time.Second)
		waitRole(t, addr, role)
		return p, addr
	}
	kill := func(p *proc) {
		if err := signalPID(p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		p.wait(t, 5*time.Second)
	}
	b1, _ := bridgeUp("bridge-1", logA, "active")
	b2, addr2 := bridgeUp("bridge-2", logB, "standby")

	tr := &truths{m: map[string]held{}}
	stopLocks := churnTruth(t, gl, elect.RecipeLock, 3, 200*time.Millisecond, 900*time.Millisecond, tr)
	stopLeaders := churnTruth(t, ge, elect.RecipeElection, 2, 300*time.Millisecond, 1200*time.Millisecond, tr)

	time.Sleep(2 * time.Second) // churn observed by bridge-1
	kill(b1)
	waitRole(t, addr2, "active")
	time.Sleep(time.Second) // bridge-1's log misses this stretch
	b1, addr1 := bridgeUp("bridge-1", logA, "standby")
	time.Sleep(1500 * time.Millisecond)
	kill(b2)
	waitRole(t, addr1, "active")
	time.Sleep(2 * time.Second)
	stopLeaders()
	stopLocks()

	// bridge-1 writes the last releases, then stops cleanly.
	if err := waitFor(20*time.Second, func() bool {
		events, err := audit.ReadAll(context.Background(), logA, nil)
		if err != nil {
			return false
		}
		for _, x := range audit.History(events) {
			if (x.Group == gl || x.Group == ge) && x.Open() {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("bridge-1's log never showed both groups released: %v", err)
	}
	if err := b1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b1.wait(t, 15*time.Second); code != 0 {
		t.Errorf("bridge-1 exit %d after SIGTERM", code)
	}

	tr.mu.Lock()
	total := len(tr.m)
	tr.mu.Unlock()
	if total < 10 {
		t.Fatalf("only %d tenures ran; the churn did not churn", total)
	}
	a := checkAgainstTruth(t, "bridge-1's log", historyJSON(t, "--audit", logA), tr, gl, ge)
	b := checkAgainstTruth(t, "bridge-2's log", historyJSON(t, "--audit", logB), tr, gl, ge)
	merged := checkAgainstTruth(t, "both logs", historyJSON(t, "--audit", logA, "--audit", logB), tr, gl, ge)

	// bridge-1's log has a hole (from its death to its restart): something
	// there is marked, beyond the first row of each group.
	marked := 0
	first := map[string]bool{}
	for _, x := range a {
		if first[x.Group] && !x.Exact() && !x.Open() {
			marked++
		}
		first[x.Group] = true
	}
	if marked == 0 {
		t.Errorf("bridge-1's log had a hole, but no tenure after the first is marked: %+v", a)
	}
	if len(merged) < len(a) || len(merged) < len(b) {
		t.Errorf("merged history has %d tenures, fewer than a log alone (%d, %d)", len(merged), len(a), len(b))
	}
	// Merged, every tenure that ran is there, both ends seen.
	inMerged := map[string]audit.Tenure{}
	for _, x := range merged {
		inMerged[x.Owner.Node] = x
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	missing, inexact := 0, 0
	for node := range tr.m {
		x, ok := inMerged[node]
		switch {
		case !ok:
			missing++
			t.Errorf("tenure of %s (%v) is in neither log", node, tr.m[node])
		case !x.Exact():
			inexact++
			t.Errorf("merged: tenure of %s not exact though a bridge observed throughout: %+v", node, x)
		}
	}
	t.Logf("%d tenures ran; bridge-1's log: %d tenures, %d marked after a hole; bridge-2's: %d; merged: %d (%d missing, %d not exact)",
		total, len(a), marked, len(b), len(merged), missing, inexact)
}
