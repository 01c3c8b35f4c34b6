package main

import (
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

func TestLockExitCodesAndTimeout(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zk := zkFlags(t)
	l := uniq(t)
	_, stderr, code := heraldRun(t, nil, append(zk, "lock", "--lock", l, "--", "sh", "-c", `test "$HERALD_LOCK" = "`+l+`" && exit 5`)...)
	if code != 5 {
		t.Fatalf("lock passed exit %d, want 5; stderr: %s", code, stderr)
	}

	holder := start(t, nil, append(zk, "lock", "--lock", l, "--id", "holder-1", "--", "sh", "-c", "echo holding; exec sleep 60")...)
	holder.waitOutput(t, "holding", 20*time.Second)

	began := time.Now()
	_, stderr, code = heraldRun(t, nil, append(zk, "lock", "--lock", l, "--timeout", "300ms", "--", "true")...)
	if code != exitTempFail || !strings.Contains(stderr, "holder-1") {
		t.Fatalf("busy lock: exit %d, want %d naming holder-1; stderr: %s", code, exitTempFail, stderr)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Fatalf("--timeout 300ms took %v", d)
	}

	// who shows the holder, as a table and as JSON.
	out, stderr, code := heraldRun(t, nil, append(zk, "who", l)...)
	if code != 0 || !strings.Contains(out, "owner holder-1") || !strings.Contains(out, "(lock, from zookeeper)") {
		t.Fatalf("who: exit %d:\n%s%s", code, out, stderr)
	}
	out, _, _ = heraldRun(t, nil, append(zk, "who", l, "--json")...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Owner == nil || r.Owner.ID != "holder-1" || r.Recipe != "lock" || r.Owner.Term == 0 {
		t.Fatalf("who --json = %s (%v)", out, err)
	}

	// A waiter gets the lock when the holder's command ends.
	waiter := start(t, nil, append(zk, "lock", "--lock", l, "--id", "waiter", "--", "sh", "-c", "echo waiter-ran")...)
	if err := waitFor(10*time.Second, func() bool {
		out, _, _ := heraldRun(t, nil, append(zk, "who", l, "--json")...)
		var r whoReport
		return json.Unmarshal([]byte(out), &r) == nil && len(r.Queue) == 2
	}); err != nil {
		t.Fatal("the waiter never queued")
	}
	holder.cmd.Process.Kill() // the runner dies; its session expires; the lock moves on
	if code := waiter.wait(t, 20*time.Second); code != 0 || !strings.Contains(waiter.out.String(), "waiter-ran") {
		t.Fatalf("waiter: exit %d:\n%s", code, waiter.out)
	}
}

func TestWhoMissingGroup(t *testing.T) {
	zk := zkFlags(t)
	g := uniq(t)
	_, stderr, code := heraldRun(t, nil, append(zk, "who", g)...)
	if code != exitFailure || !strings.Contains(stderr, "does not exist") || !strings.Contains(stderr, g) {
		t.Fatalf("who on a missing group: exit %d, stderr: %s", code, stderr)
	}
	_, stderr, code = heraldRun(t, nil, append(zk, "checkpoint", "get", g)...)
	if code != exitFailure || !strings.Contains(stderr, "no checkpoint") || !strings.Contains(stderr, g+" does not exist") {
		t.Fatalf("checkpoint get on a missing group: exit %d, want 1 saying it does not exist; stderr: %s", code, stderr)
	}
}

// who asked about a parent of groups (no queue nodes of its own) names the
// groups below it, herald's side nodes left out.
func TestWhoOnAParentNamesTheGroupsBelow(t *testing.T) {
	zkFl := zkFlags(t)
	parent := uniq(t)
	c := rawZK(t)
	for _, g := range []string{"backup", "reindex", "herald-office"} {
		mkpath(t, c, parent+"/"+g)
	}
	out, stderr, code := heraldRun(t, nil, append(zkFl, "who", parent)...)
	if code != exitNoOwner || !strings.Contains(out, "below it: backup, reindex —") || !strings.Contains(out, "herald who "+parent+"/backup") {
		t.Fatalf("who on a parent of groups: exit %d, want %d naming backup and reindex:\n%s%s", code, exitNoOwner, out, stderr)
	}
	// Nothing there tells a recipe: it is not called an election.
	if !strings.Contains(out, parent+" (unknown recipe, from zookeeper)") {
		t.Errorf("who on a parent of groups names a recipe:\n%s", out)
	}
	out, _, _ = heraldRun(t, nil, append(zkFl, "who", parent, "--json")...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || strings.Join(r.Below, ",") != "backup,reindex" || r.Recipe != "" {
		t.Fatalf("who --json = %s (%v); want below [backup reindex] and no recipe", out, err)
	}
}

// A node someone created by hand below the holder is shown as suspect,
// never as the owner.
func TestWhoFlagsSuspectNodes(t *testing.T) {
	zkFl := zkFlags(t)
	l := uniq(t)
	holder := start(t, nil, append(zkFl, "lock", "--lock", l, "--id", "holder-1", "--", "sh", "-c", "echo holding; exec sleep 60")...)
	holder.waitOutput(t, "holding", 20*time.Second)
	conn := rawZK(t)
	forged := "_c_ffffffff-ffff-ffff-0000-000168726c6c-lock--000000001" // sorts before sequence 0
	if _, err := conn.Create(l+"/"+forged, []byte("impostor"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := heraldRun(t, nil, append(zkFl, "who", l)...)
	if code != 0 || !strings.Contains(out, "owner holder-1") || !strings.Contains(out, "suspect: not ephemeral") {
		t.Fatalf("who with a forged persistent node: exit %d:\n%s%s", code, out, stderr)
	}
	out, _, _ = heraldRun(t, nil, append(zkFl, "who", l, "--json")...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Owner == nil || r.Owner.ID != "holder-1" || len(r.Queue) != 2 || r.Queue[0].Suspect == "" || r.Queue[0].Session != "" {
		t.Fatalf("who --json = %s (%v); want holder-1 owning, the forged node first, suspect, with no session", out, err)
	}
}

// A node nobody's session holds, older than every waiter, holds the lock's
// queue up: nobody owns, and every client waits for someone to delete it.
// herald lock warns as it starts waiting, and when it gives up names that
// node and how to remove it; who shows the queue and the same advice.
func TestLockBehindALeftoverNode(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkFl := zkFlags(t)
	l := uniq(t)
	c := rawZK(t)
	left := mknode(t, c, l+"/lock-", nil, zk.FlagSequence)
	_, stderr, code := heraldRun(t, nil, append(zkFl, "lock", "--lock", l, "--timeout", "1s", "--", "true")...)
	if code != exitTempFail || !strings.Contains(stderr, "waiting behind a node no session holds") ||
		!strings.Contains(stderr, "is held by nobody: its queue waits behind "+path.Base(left)+", which is not ephemeral") ||
		!strings.Contains(stderr, "delete "+left) {
		t.Fatalf("lock behind a left-over node: exit %d, want %d naming it and how to delete it; stderr:\n%s", code, exitTempFail, stderr)
	}
	out, stderr, code := heraldRun(t, nil, append(zkFl, "who", l)...)
	if code != exitNoOwner || !strings.Contains(out, "no owner, 0 waiting, 1 suspect") || !strings.Contains(out, "suspect: not ephemeral") ||
		!strings.Contains(out, "note: nobody owns: the queue waits behind "+path.Base(left)) {
		t.Fatalf("who behind a left-over node: exit %d, want %d showing the node and the note:\n%s%s", code, exitNoOwner, out, stderr)
	}
	out, _, _ = heraldRun(t, nil, append(zkFl, "who", l, "--json")...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.BlockedBy != path.Base(left) || r.Owner != nil {
		t.Fatalf("who --json = %s (%v); want no owner, blocked by %s", out, err, path.Base(left))
	}
	if err := c.Delete(left, -1); err != nil {
		t.Fatal(err)
	}
	// The wait behind a node deleted by hand takes the longest timeout of
	// the live sessions under the session root, which other tests share.
	if _, stderr, code := heraldRun(t, nil, append(zkFl, "lock", "--lock", l, "--timeout", "30s", "--", "true")...); code != 0 {
		t.Fatalf("lock once the node is deleted: exit %d; stderr:\n%s", code, stderr)
	}
}

// Kazoo's Election writes the same names as its Lock, so who reads such a
// group as a lock unless --recipe says otherwise.
func TestWhoRecipe(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	mknode(t, rawZK(t), g+"/9f8e7d6c5b4a39281706f5e4d3c2b1a0__lock__", []byte("kazoo-cand"), zk.FlagEphemeral|zk.FlagSequence)
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "(lock, from zookeeper): owner kazoo-cand"},
		{[]string{"--recipe", "election"}, "(election, from zookeeper): owner kazoo-cand"},
	} {
		out, stderr, code := heraldRun(t, nil, append(append(zkFl, "who", g), tc.flags...)...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("who %v: exit %d, want %q:\n%s%s", tc.flags, code, tc.want, out, stderr)
		}
	}
	out, _, _ := heraldRun(t, nil, append(zkFl, "who", g, "--recipe", "election", "--json")...)
	var r whoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Recipe != "election" {
		t.Errorf("who --recipe election --json = %s (%v)", out, err)
	}
	if _, stderr, code := heraldRun(t, nil, append(zkFl, "who", g, "--recipe", "leader")...); code != exitUsage || !strings.Contains(stderr, "want election or lock") {
		t.Errorf("who --recipe leader: exit %d, stderr %s", code, stderr)
	}
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// With --zk-auth-file (or HERALD_ZK_AUTH) herald's nodes let its identity
// do anything and everyone read: a session without the credentials cannot
// delete or write the lock's node, and who still reads it.
func TestZKDigestAuth(t *testing.T) {
	zkFl := zkFlags(t)
	openTestRoot(t)
	l := uniq(t)
	auth := filepath.Join(t.TempDir(), "zk-auth")
	if err := os.WriteFile(auth, []byte("herald:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	holder := start(t, nil, append(zkFl, "--zk-auth-file", auth, "lock", "--lock", l, "--id", "holder-1", "--", "sh", "-c", "echo node=$HERALD_NODE; exec sleep 60")...)
	holder.waitOutput(t, "node=", 20*time.Second)
	conn := rawZK(t)
	children, _, err := conn.Children(l)
	if err != nil || len(children) != 1 {
		t.Fatalf("children of %s: %v, %v", l, children, err)
	}
	node := l + "/" + children[0]
	if err := conn.Delete(node, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("delete of the holder's node without credentials: %v; want ErrNoAuth", err)
	}
	if _, err := conn.Set(node, []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("set of the holder's node without credentials: %v; want ErrNoAuth", err)
	}
	if out, stderr, code := heraldRun(t, nil, append(zkFl, "who", l)...); code != 0 || !strings.Contains(out, "owner holder-1") {
		t.Errorf("who without credentials: exit %d:\n%s%s", code, out, stderr)
	}
	// The same identity from the environment may take it next.
	waiter := start(t, []string{"HERALD_ZK_AUTH=herald:s3cret"}, append(zkFl, "lock", "--lock", l, "--", "sh", "-c", "echo waiter-ran")...)
	holder.cmd.Process.Kill()
	if code := waiter.wait(t, 20*time.Second); code != 0 || !strings.Contains(waiter.out.String(), "waiter-ran") {
		t.Fatalf("waiter with HERALD_ZK_AUTH: exit %d:\n%s", code, waiter.out)
	}
	// A wrong password is another identity, refused by the group's ACL;
	// the error says which flag to look at.
	if _, stderr, code := heraldRun(t, []string{"HERALD_ZK_AUTH=herald:wrong"}, append(zkFl, "lock", "--lock", l, "--", "true")...); code == 0 || !strings.Contains(stderr, "--zk-auth-file") || !strings.Contains(stderr, "not allowed") {
		t.Errorf("lock with a wrong password: exit %d, want an error naming --zk-auth-file: %s", code, stderr)
	}
	for _, bad := range [][]string{{"--zk-auth-file", filepath.Join(t.TempDir(), "missing")}, {"--zk-auth-file", os.DevNull}} {
		if _, stderr, code := heraldRun(t, []string{"HERALD_ZK_AUTH=nocolon"}, append(append(zkFl, bad...), "who", l)...); code != exitUsage || !strings.Contains(stderr, "zk-auth-file") {
			t.Errorf("who %v: exit %d: %s", bad, code, stderr)
		}
	}
}

// A --timeout that runs out on a lock nobody holds (one that does not
// exist yet, or one just let go) says so, and that the timeout may be too
// short; it does not send anyone looking for a holder. Exit 75 all the
// same.
func TestLockTimeoutOnAFreeLock(t *testing.T) {
	zkFl := zkFlags(t)
	l := uniq(t)
	for _, what := range []string{"missing", "free"} {
		_, stderr, code := heraldRun(t, nil, append(zkFl, "lock", "--lock", l, "--timeout", "1ns", "--", "echo", "ran")...)
		if code != exitTempFail || !strings.Contains(stderr, "lock "+l+" is free: nobody holds it now; --timeout 1ns ran out before the lock could be taken (too short?)") || strings.Contains(stderr, "held by") {
			t.Errorf("--timeout 1ns on a %s lock: exit %d, want %d saying nobody holds it; stderr: %s", what, code, exitTempFail, stderr)
		}
		// The lock exists after a run that took it.
		if _, stderr, code := heraldRun(t, nil, append(zkFl, "lock", "--lock", l, "--", "true")...); code != 0 {
			t.Fatalf("lock: exit %d: %s", code, stderr)
		}
	}
}

// The command herald run runs logs in as herald did: credentials given as
// --zk-auth-file reach its herald checkpoint put (as HERALD_ZK_AUTH_FILE,
// an absolute path, so a command that changes directory keeps them).
func TestChildCheckpointLogsInAsHeraldDid(t *testing.T) {
	zkFl := zkFlags(t)
	openTestRoot(t) // first on the server, it made the root its identity's alone
	g := uniq(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zk-auth"), []byte("herald:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(mustGetwd(t), filepath.Join(dir, "zk-auth"))
	if err != nil {
		t.Fatal(err)
	}
	child := `cd / && "$HERALD_BIN" checkpoint put step=1`
	if out, stderr, code := heraldRun(t, nil, append(zkFl, "--zk-auth-file", rel, "run", "--election", g, "--", "sh", "-c", child)...); code != 0 {
		t.Fatalf("run whose command saves a checkpoint with herald's credentials: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := heraldRun(t, nil, append(zkFl, "--zk-auth-file", rel, "checkpoint", "get", g)...); code != 0 || out != "step=1\n" {
		t.Fatalf("checkpoint get: exit %d, %q %s", code, out, stderr)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// A waiter whose session expires while it waits (the process paused past
// the session timeout) joins the queue again on a new session, as run
// does, and runs its command once the holder is done, rather than giving
// up with the expiry.
func TestLockWaiterJoinsAgainAfterItsSessionExpired(t *testing.T) {
	t.Parallel()     // waits on sessions and processes, not the CPU
	zk := zkFlags(t) // 1s sessions
	g := uniq(t)
	// The holder's session is longer, so that a busy machine does not cost
	// it the lock before the waiter has queued behind it.
	holderZK := append(slices.Clone(zk[:len(zk)-4]), "--session-timeout", "4s", "--connect-timeout", "10s")
	holder := start(t, nil, append(holderZK, "lock", "--lock", g, "--", "sh", "-c", "echo holding; sleep 5")...)
	holder.waitOutput(t, "holding", 20*time.Second)
	waiter := start(t, nil, append(zk, "lock", "--lock", g, "--", "echo", "waiter ran")...)
	waitQueued(t, zk, g, 2, "the waiter never queued")
	if err := waiter.cmd.Process.Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // its session expires
	if err := waiter.cmd.Process.Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	if code := waiter.wait(t, 20*time.Second); code != 0 || !strings.Contains(waiter.out.String(), "waiter ran") || !strings.Contains(waiter.out.String(), "joining again") {
		t.Fatalf("waiter whose session expired: exit %d, want 0 after joining again:\n%s", code, waiter.out)
	}
	if code := holder.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("holder exit %d:\n%s", code, holder.out)
	}
}

// TestLockUnderForeignGroupDataSaysWhyItWaits: a lock group whose node
// holds someone else's data can record no release (herald never writes
// over it, and a lock's group holds no office), so a herald lock handoff
// waits as for a node gone without one. The waiting copy says so, and
// what to do, where it used to speak of a deletion by hand or a session's
// end that never happened. With session nodes (the default) the previous
// copy's release is noted on its session node, and the next starts at
// once when it reads the note; a copy that has exited before the read
// leaves no note, and its session's end, in a transaction after its
// release, proves nothing (an operator's two deletions look the same):
// the next then waits its bound (5.5 s here), and never starts beside it.
func TestLockUnderForeignGroupDataSaysWhyItWaits(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	for _, tc := range []struct {
		name, root, says string
	}{
		{"without session nodes", "", "keep a lock group's node empty"},
		{"with session nodes", elect.DefaultSessionRoot, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zkArgs := []string{"--zk", zktest.Shared(t).ConnectString(), "--session-timeout", "6s"}
			g := uniq(t)
			c := rawZK(t)
			mkpath(t, c, path.Dir(g))
			if _, err := c.Create(g, []byte("kept by an operator"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			lock := func(id string, cmd ...string) *proc {
				return start(t, nil, append(append(zkArgs, "lock", "--lock", g, "--session-root", tc.root, "--id", id, "--"), cmd...)...)
			}
			first := lock("first", "sleep", "1")
			first.waitOutput(t, "child started", 10*time.Second)
			second := lock("second", "true")
			if tc.says != "" {
				second.waitOutput(t, tc.says, 15*time.Second)
			}
			if code := first.wait(t, 10*time.Second); code != 0 {
				t.Errorf("first: exit %d:\n%s", code, first.out)
			}
			exited := time.Now()
			if code := second.wait(t, 20*time.Second); code != 0 {
				t.Errorf("second: exit %d:\n%s", code, second.out)
			}
			out := second.out.String()
			if took := time.Since(exited); tc.root != "" && took > 3*time.Second && !strings.Contains(out, "went without a release") {
				t.Errorf("second exited %v after first without saying why it waited, want its command started as first released, or the wait explained:\n%s", took.Round(time.Millisecond), out)
			}
			if b, _, err := c.Get(g); err != nil || string(b) != "kept by an operator" {
				t.Errorf("the group node holds %q (%v), want the operator's data untouched", b, err)
			}
		})
	}
}

// TestWaiterWhoseNodeIsDeletedJoinsAgain: someone deletes the node of a
// copy that waits in line (a cleanup, or a hand that meant the owner's).
// The copy joins the queue again, at its end, and its command runs in its
// turn; before, it exited 1 and its command never ran.
func TestWaiterWhoseNodeIsDeletedJoinsAgain(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkArgs := []string{"--zk", zktest.Shared(t).ConnectString()}
	for _, recipe := range []string{"run", "lock"} {
		t.Run(recipe, func(t *testing.T) {
			g := uniq(t)
			flag := map[string]string{"run": "--election", "lock": "--lock"}[recipe]
			copyOf := func(id, cmd string) *proc {
				return start(t, nil, append(zkArgs, recipe, flag, g, "--id", id, "--", "sh", "-c", cmd)...)
			}
			first := copyOf("first", "sleep 2")
			first.waitOutput(t, "child started", 10*time.Second)
			second := copyOf("second", "echo second ran")
			waitQueued(t, zkArgs, g, 2, "the second copy never joined the queue")
			c := rawZK(t)
			children, _, err := c.Children(g)
			if err != nil {
				t.Fatal(err)
			}
			var waiting string
			for _, n := range children {
				if b, _, err := c.Get(g + "/" + n); err == nil && string(b) == "second" {
					waiting = n
				}
			}
			if waiting == "" {
				t.Fatalf("no node of the second copy in %v", children)
			}
			if err := c.Delete(g+"/"+waiting, -1); err != nil {
				t.Fatal(err)
			}
			second.waitOutput(t, "our node was deleted while we waited; joining again", 10*time.Second)
			if code := second.wait(t, 20*time.Second); code != 0 || !strings.Contains(second.out.String(), "second ran") {
				t.Errorf("the copy whose node was deleted: exit %d, want 0 with its command run:\n%s", code, second.out)
			}
			if code := first.wait(t, 10*time.Second); code != 0 {
				t.Errorf("first: exit %d:\n%s", code, first.out)
			}
		})
	}
}
