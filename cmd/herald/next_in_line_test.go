package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// nextTimeout is the session timeout of the cases below: the grace a
// deposed runner's command gets is a sixth of it (2 s), and a command
// stopped within a twelfth of it (1 s, room for a loaded machine) was
// killed as soon as its runner heard of the loss, not given that grace.
const nextTimeout = 12 * time.Second

// stubbornOwner starts `herald lock` (or `herald run`, recipe "run") over
// a command that ignores SIGTERM and stamps $ALIVE every 20 ms, and
// returns it once the command runs, with the stamp file and its node's
// name.
func stubbornOwner(t *testing.T, recipe, g string) (h *proc, alive, own string) {
	t.Helper()
	alive = filepath.Join(t.TempDir(), "alive")
	flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
	h = start(t, []string{"ALIVE=" + alive}, "--zk", zktest.Shared(t).ConnectString(), "--session-timeout", nextTimeout.String(),
		"--connect-timeout", "10s", recipe, flag, g, "--id", "holder", "--grace", "60s", "--", "sh", "-c", stampScript)
	h.waitOutput(t, "holding", 20*time.Second)
	return h, alive, nodeOf(t, rawZK(t), g, "holder")
}

// queued waits until the group holds n queue nodes (an election's office
// aside), then a second more: the owner's guard lists the group on each
// join, a round trip or two later.
func queued(t *testing.T, c *zk.Conn, g string, n int) {
	t.Helper()
	if err := waitFor(10*time.Second, func() bool {
		k, _, _ := c.Children(g)
		return len(slices.DeleteFunc(k, func(name string) bool { _, seq := elect.ParseSequence(name); return !seq })) >= n
	}); err != nil {
		t.Fatalf("the group never held %d queue nodes: %v", n, err)
	}
	time.Sleep(time.Second)
}

// A program using herald's library (elect.Lock, elect.Election) next in
// line behind `herald lock` or `herald run` owns as soon as the runner's node goes: it waits for no
// record that the runner's command stopped, as a herald runner does. Its
// nodes are named as a runner's are, so the runner took it for one and
// gave its command, which ignored SIGTERM, the sixth of the timeout beside
// the library's owner (2 s here). A runner's session node now says that
// its session waits (elect.WaitsForPredecessor); a herald node whose
// session says nothing of the kind counts as a client that does not wait.
func TestLibraryNextInLineGetsNoGrace(t *testing.T) {
	for _, recipe := range []string{"lock", "run"} {
		t.Run(recipe, func(t *testing.T) { libraryNext(t, recipe) })
	}
}

func libraryNext(t *testing.T, recipe string) {
	g := uniq(t)
	c := rawZK(t)
	h, alive, own := stubbornOwner(t, recipe, g)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owned := make(chan time.Time, 1)
	go func() {
		if lh, err := libraryOwner(ctx, zkSession(t), recipe, g); err == nil {
			owned <- time.Now()
			<-ctx.Done()
			_ = lh.Release(context.Background())
		}
	}()
	queued(t, c, g, 2)
	if err := c.Delete(g+"/"+own, -1); err != nil {
		t.Fatal(err)
	}
	var at time.Time
	select {
	case at = <-owned:
	case <-time.After(20 * time.Second):
		t.Fatal("the library's lock never owned after the runner's node was deleted")
	}
	h.wait(t, 30*time.Second)
	if over := lastStamp(t, alive).Sub(at); over > nextTimeout/12 {
		t.Errorf("the deposed runner's command ran on %v beside the library's owner (at most %v, the time to hear of the deletion, expected)\n%s",
			over.Round(time.Millisecond), nextTimeout/12, h.out)
	}
}

// libraryOwner owns g as a program using herald's library does: it works
// as soon as Acquire or Campaign returns.
func libraryOwner(ctx context.Context, s *elect.Session, recipe, g string) (*elect.Handle, error) {
	if recipe == "lock" {
		l, err := elect.NewLock(s, g)
		if err != nil {
			return nil, err
		}
		return l.Acquire(ctx)
	}
	e, err := elect.NewElection(s, g)
	if err != nil {
		return nil, err
	}
	return e.Campaign(ctx, "library")
}

// The same deletion with a herald runner next in line keeps the command's
// SIGTERM and grace: that runner waits for the record that the command
// stopped. And so it does beside a persistent node named like a foreign
// client's (made by hand, or left over): no session holds it, so nobody
// can own by it. That one used to cost the command its grace.
func TestRunnerNextInLineKeepsTheGrace(t *testing.T) {
	for _, c := range []struct{ recipe, next string }{{"lock", "runner"}, {"run", "runner"}, {"lock", "leftover"}} {
		t.Run(c.recipe+"-"+c.next, func(t *testing.T) { runnerNext(t, c.recipe, c.next) })
	}
}

func runnerNext(t *testing.T, recipe, next string) {
	g := uniq(t)
	c := rawZK(t)
	h, alive, own := stubbornOwner(t, recipe, g)
	if next == "runner" {
		flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
		start(t, nil, "--zk", zktest.Shared(t).ConnectString(), "--session-timeout", nextTimeout.String(), "--connect-timeout", "10s",
			recipe, flag, g, "--id", "next", "--", "sh", "-c", "sleep 30")
	} else if _, err := c.Create(g+"/_c_11111111-2222-3333-4444-555555555555-lock-0000000099", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	queued(t, c, g, 2)
	deleted := time.Now()
	if err := c.Delete(g+"/"+own, -1); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 30*time.Second)
	if over := lastStamp(t, alive).Sub(deleted); over < nextTimeout/12 {
		t.Errorf("the command, with a %s next in line, was killed %v after its node was deleted, not given the sixth of the timeout from its SIGTERM\n%s",
			next, over.Round(time.Millisecond), h.out)
	}
}

// An owner that steps down because a client joined that cannot read its
// node (a Kazoo lock beside herald's default names) does so because that
// client may own already: Kazoo's owns as it joins. So the command is
// killed at once; it used to get its SIGTERM and the sixth of the timeout
// beside that client.
func TestSteppingDownForABlindClientGivesNoGrace(t *testing.T) {
	g := uniq(t)
	h, alive, _ := stubbornOwner(t, "lock", g)
	joined := time.Now()
	if _, err := rawZK(t).Create(g+"/kazoo__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 30*time.Second)
	if !strings.Contains(h.out.String(), "two owners possible") {
		t.Fatalf("herald lock did not step down for the Kazoo client:\n%s", h.out)
	}
	if over := lastStamp(t, alive).Sub(joined); over > nextTimeout/12 {
		t.Errorf("the command ran on %v beside the Kazoo client that owned as it joined (at most %v, the time to hear of it, expected)\n%s",
			over.Round(time.Millisecond), nextTimeout/12, h.out)
	}
}

// An owner that steps down because its session may no longer list the
// group (someone gave the group to another identity) does so because a
// client that joined since, unseen, may own already: Kazoo's owns as it
// joins. So the command is killed at once, as for a blind client seen
// joining; it used to get its SIGTERM and the sixth of the timeout beside
// that client. Here the other identity takes the group and joins it.
func TestSteppingDownForAnUnlistableGroupGivesNoGrace(t *testing.T) {
	t.Parallel() // half a minute waiting for the runner's look, not the CPU
	g := uniq(t)
	h, alive, _ := stubbornOwner(t, "lock", g)
	c := zkSession(t).Conn()
	if err := c.AddAuth("digest", []byte("other:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetACL(g, zk.DigestACL(zk.PermAll, "other", "secret"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(g+"/kazoo__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 45*time.Second) // ZooKeeper tells herald nothing: its look every 30 s finds it
	down := steppedDownAt(t, h.out.String(), "may no longer list the group")
	if over := lastStamp(t, alive).Sub(down); over > nextTimeout/12 {
		t.Errorf("the command ran on %v after its runner stepped down, beside the Kazoo client that joined unseen and owned as it joined (at most %v expected)\n%s",
			over.Round(time.Millisecond), nextTimeout/12, h.out)
	}
}

// steppedDownAt is the time of the log line of out that says what.
func steppedDownAt(t *testing.T, out, what string) time.Time {
	t.Helper()
	for line := range strings.Lines(out) {
		at, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if ts, err := time.Parse(time.RFC3339Nano, at); err == nil && strings.Contains(line, what) {
			return ts
		}
	}
	t.Fatalf("no log line says %q:\n%s", what, out)
	return time.Time{}
}
