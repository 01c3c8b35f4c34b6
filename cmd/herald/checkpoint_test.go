package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// A checkpoint too big for an environment variable (Linux takes at most
// 128 KiB, name and all) does not keep the next leader's command from
// starting: it starts with HERALD_CHECKPOINT empty, the checkpoint's term,
// and HERALD_CHECKPOINT_ERROR saying to read it with checkpoint get, which
// does. checkpoint put saves it with a warning; one that fits exactly is
// passed as before.
func TestRunHandsOverACheckpointTooBigForTheEnvironment(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	zkFl := zkFlags(t)
	for _, tc := range []struct {
		n   int
		fit bool
	}{{maxEnvCheckpoint, true}, {maxEnvCheckpoint + 1, false}, {200000, false}} {
		g := uniq(t)
		put := `head -c ` + itoa(tc.n) + ` /dev/zero | tr '\0' a | "$HERALD_BIN" checkpoint put -`
		_, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--id", "a", "--", "sh", "-c", put)...)
		if warned := strings.Contains(stderr, "too big to pass in the environment"); code != 0 || warned == tc.fit {
			t.Fatalf("checkpoint put of %d bytes: exit %d, want 0 with a warning only when it does not fit (%d): %s", tc.n, code, maxEnvCheckpoint, stderr)
		}
		child := `echo "started len=${#HERALD_CHECKPOINT} term=[$HERALD_CHECKPOINT_TERM] err=[$HERALD_CHECKPOINT_ERROR]"; echo "got=$("$HERALD_BIN" checkpoint get | tr -d '\n' | wc -c)"`
		out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--id", "b", "--", "sh", "-c", child)...)
		want := "started len=" + itoa(tc.n) + " term=["
		if !tc.fit {
			want = "started len=0 term=["
		}
		if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "term=[]") || !strings.Contains(out, "got="+itoa(tc.n)+"\n") {
			t.Fatalf("run over a checkpoint of %d bytes: exit %d, want the command started with %q and checkpoint get reading it all:\n%s%s", tc.n, code, want, out, stderr)
		}
		if tooBig := strings.Contains(out, "is too big to pass in HERALD_CHECKPOINT") && strings.Contains(out, "read it with: herald checkpoint get"); tooBig == tc.fit {
			t.Fatalf("run over a checkpoint of %d bytes: HERALD_CHECKPOINT_ERROR should say it is too big only when it does not fit:\n%s", tc.n, out)
		}
	}
}

// checkpoint put reads standard input only when told to with "-": an
// unset variable (herald checkpoint put $STEP) or an empty argument is a
// usage error, and the progress saved stays.
func TestCheckpointPutNeedsItsData(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	if _, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--", "sh", "-c", `"$HERALD_BIN" checkpoint put step=41`)...); code != 0 {
		t.Fatalf("checkpoint put step=41: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct{ put, want string }{
		{`"$HERALD_BIN" checkpoint put $NEXT_STEP`, "or - to read it from standard input"},
		{`"$HERALD_BIN" checkpoint put "$NEXT_STEP"`, "empty data"},
	} {
		child := tc.put + ` </dev/null; echo "put=$?"`
		out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--", "sh", "-c", child)...)
		if code != 0 || !strings.Contains(out, "put=2") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, want a usage error (2) saying %q:\n%s%s", tc.put, code, tc.want, out, stderr)
		}
	}
	if out, stderr, code := heraldRun(t, nil, append(zkFl, "checkpoint", "get", g)...); code != 0 || out != "step=41\n" {
		t.Fatalf("checkpoint get after the refused puts: exit %d, %q %s; want step=41 kept", code, out, stderr)
	}
}

// checkpoint put - with standard input closed (<&-), where Go finds
// /dev/null, or fed by a command that wrote nothing, is a usage error
// (exit 2) saying so, and the progress saved stays: both saved an empty
// checkpoint. </dev/null, the documented empty checkpoint, still saves one.
func TestCheckpointPutClosedOrEmptyStdin(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	child := `"$HERALD_BIN" checkpoint put step=41 || exit 9
"$HERALD_BIN" checkpoint put - <&-; echo "closed=$?"
printf '' | "$HERALD_BIN" checkpoint put -; echo "empty=$?"
"$HERALD_BIN" checkpoint get --raw "$HERALD_ELECTION"; echo " got=$?"
"$HERALD_BIN" checkpoint put - </dev/null; echo "null=$?"`
	out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--", "sh", "-c", child)...)
	if code != 0 {
		t.Fatalf("herald run: exit %d:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"closed=2", "empty=2", "step=41 got=0", "null=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the output:\n%s%s", want, out, stderr)
		}
	}
	for _, want := range []string{"it was closed (<&-) when herald started", "read nothing from standard input (did the command feeding it fail?)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("want %q on stderr:\n%s", want, stderr)
		}
	}
	if out, stderr, code := heraldRun(t, nil, append(zkFl, "checkpoint", "get", "--raw", g)...); code != 0 || out != "" {
		t.Fatalf("checkpoint get after put - </dev/null: exit %d, %q %s; want it empty", code, out, stderr)
	}
}

// Ctrl-C while checkpoint put waits for standard input is reported as an
// interrupt (exit 130), not as ZooKeeper being unreachable.
func TestCheckpointPutInterruptedWhileReading(t *testing.T) {
	zkFl := zkFlags(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // standard input stays open, and empty, until then
	out := &syncBuf{}
	cmd := exec.Command(heraldBin, append(zkFl, "--log-level", "debug", "checkpoint", "put", "--election", uniq(t), "--node", "x-0000000001", "--term", "5", "-")...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	if err := waitFor(10*time.Second, func() bool { return strings.Contains(out.String(), "reading the checkpoint from standard input") }); err != nil {
		t.Fatalf("checkpoint put never started reading standard input: %s", out)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		done <- nil
	case <-time.After(10 * time.Second):
		t.Fatalf("checkpoint put still waits for standard input 10s after SIGINT:\n%s", out)
	}
	s := out.String()
	if code := exitCode(cmd.ProcessState); code != 130 || !strings.Contains(s, "interrupted while reading the checkpoint from standard input") ||
		strings.Contains(s, "unreachable") || strings.Contains(s, "session 0x0") {
		t.Fatalf("checkpoint put interrupted while reading: exit %d, want 130 saying it was interrupted:\n%s", code, s)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A binary checkpoint comes back byte for byte: checkpoint get --raw
// prints it as stored (no newline added), --json carries it in
// data_base64. One holding NUL bytes, which an environment variable
// cannot carry, is not passed with its NULs dropped: the next leader's
// command starts with HERALD_CHECKPOINT empty and HERALD_CHECKPOINT_ERROR
// saying to read it with checkpoint get --raw; checkpoint put warns.
func TestBinaryCheckpointComesBackByteForByte(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	data := []byte("a\x00b\xff\xfe")
	put := `printf 'a\000b\377\376' | "$HERALD_BIN" checkpoint put -`
	_, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--id", "a", "--", "sh", "-c", put)...)
	if code != 0 || !strings.Contains(stderr, "holds NUL bytes") {
		t.Fatalf("checkpoint put of binary data: exit %d, want 0 with a warning about NUL bytes: %s", code, stderr)
	}
	out, stderr, code := heraldRun(t, nil, append(zkFl, "checkpoint", "get", "--raw", g)...)
	if code != 0 || out != string(data) {
		t.Fatalf("checkpoint get --raw: exit %d, %q, want %q: %s", code, out, data, stderr)
	}
	out, stderr, code = heraldRun(t, nil, append(zkFl, "checkpoint", "get", "--json", g)...)
	var rec struct {
		DataBase64 []byte `json:"data_base64"`
	}
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || string(rec.DataBase64) != string(data) {
		t.Fatalf("checkpoint get --json: exit %d, data_base64 %q (%v), want %q: %s%s", code, rec.DataBase64, err, data, out, stderr)
	}
	child := `echo "len=${#HERALD_CHECKPOINT} term=[$HERALD_CHECKPOINT_TERM] err=[$HERALD_CHECKPOINT_ERROR]"`
	out, stderr, code = heraldRun(t, nil, append(zkFl, "run", "--election", g, "--id", "b", "--", "sh", "-c", child)...)
	if code != 0 || !strings.Contains(out, "len=0 term=[") || strings.Contains(out, "term=[]") || !strings.Contains(out, "holds NUL bytes") || !strings.Contains(out, "checkpoint get --raw") {
		t.Fatalf("run over a checkpoint with NUL bytes: exit %d, want HERALD_CHECKPOINT empty, its term, and the error naming checkpoint get --raw:\n%s%s", code, out, stderr)
	}
	if out, _, code := heraldRun(t, nil, append(zkFl, "checkpoint", "get", "--raw", "--json", g)...); code != exitUsage {
		t.Fatalf("checkpoint get --raw --json: exit %d, want a usage error (%d):\n%s", code, exitUsage, out)
	}
}

// A checkpoint this identity may not read is named in the error, beside
// how to log in as one ZooKeeper admits.
func TestCheckpointGetUnreadableNamesTheNode(t *testing.T) {
	g := uniq(t)
	s := zkSession(t)
	mkpath(t, s.Conn(), g)
	if _, err := s.Conn().Create(g+"/"+elect.CheckpointNode, []byte("x"), 0, zk.DigestACL(zk.PermAll, "runner", "secret")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := heraldRun(t, nil, append(zkFlags(t), "checkpoint", "get", "--election", g)...)
	if code != exitFailure || !strings.Contains(stderr, g+"/"+elect.CheckpointNode) || !strings.Contains(stderr, "refused this identity") {
		t.Fatalf("checkpoint get of an unreadable checkpoint: exit %d, want %d naming the node; stderr: %s", code, exitFailure, stderr)
	}
}

// TestCheckpointPutUnwritableNamesTheNode: a leader whose identity may
// read the checkpoint but not write it (another identity's leader made it,
// or someone set its ACL) was told only "not authenticated", about the
// election; it is told which node refused it and what to do.
func TestCheckpointPutUnwritableNamesTheNode(t *testing.T) {
	g := uniq(t)
	s := zkSession(t)
	mkpath(t, s.Conn(), g)
	acl := append(zk.DigestACL(zk.PermAll, "runner", "secret"), zk.WorldACL(zk.PermRead)...)
	if _, err := s.Conn().Create(g+"/"+elect.CheckpointNode, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	e, err := elect.NewElection(s, g)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(context.Background(), "leader")
	if err != nil {
		t.Fatal(err)
	}
	args := append(zkFlags(t), "checkpoint", "put", "--election", g, "--node", h.Node(), "--term", fmt.Sprint(h.Term()), "step=2")
	_, stderr, code := heraldRun(t, nil, args...)
	if code != exitFailure || !strings.Contains(stderr, g+"/"+elect.CheckpointNode) || !strings.Contains(stderr, "may not write it") {
		t.Fatalf("checkpoint put to an unwritable checkpoint: exit %d, want %d naming the node; stderr: %s", code, exitFailure, stderr)
	}
}

// TestCheckpointPutInsideALock: a lock taken inside herald run's command
// gives its own command its node and term, and leaves the run's
// HERALD_ELECTION. A checkpoint put there says so (exit 2) rather than
// fence the run's group with the lock's node (refused, blaming the group:
// "herald keeps no office or checkpoint in this group: ... is a lock");
// the run's command, outside the lock, saves it.
func TestCheckpointPutInsideALock(t *testing.T) {
	zkFl := zkFlags(t)
	g, l := uniq(t), uniq(t)+"-lock"
	child := `"$HERALD_BIN" lock --lock ` + l + ` -- "$HERALD_BIN" checkpoint put inner; echo "inner=$?"; "$HERALD_BIN" checkpoint put outer; echo "outer=$?"`
	out, stderr, code := heraldRun(t, nil, append(zkFl, "run", "--election", g, "--", "sh", "-c", child)...)
	if code != 0 || !strings.Contains(out, "inner=2") || !strings.Contains(out, "outer=0") ||
		!strings.Contains(stderr, "HERALD_NODE and HERALD_TERM are the lock's") || !strings.Contains(stderr, "herald run --election "+g) {
		t.Fatalf("checkpoint put inside a lock inside run: exit %d, want inner=2 naming the lock's fence, outer=0:\n%s%s", code, out, stderr)
	}
	if got, _, _ := heraldRun(t, nil, append(zkFl, "checkpoint", "get", g)...); got != "outer\n" {
		t.Fatalf("checkpoint after: %q, want the run's outer", got)
	}
}

// TestCheckpointPutUnreachableExits69: a put that cannot reach ZooKeeper
// exits 69 (EX_UNAVAILABLE), as checkpoint get does, so that the command
// can tell "try again" from "no longer the leader" (3). It exited 1.
func TestCheckpointPutUnreachableExits69(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	_, stderr, code := heraldRun(t, []string{"HERALD_PARENT="}, "--zk", "127.0.0.1:1", "--connect-timeout", "1s", "checkpoint", "put",
		"--election", "/x", "--node", "_c_01000468-470b-0050-0000-000168726c65-latch-0000000000", "--term", "5", "step=3")
	if code != exitUnreachable || !strings.Contains(stderr, "not saved") {
		t.Fatalf("checkpoint put with ZooKeeper unreachable: exit %d, want %d saying nothing was saved: %s", code, exitUnreachable, stderr)
	}
}

// TestCheckpointOfASecondOwnerIsNamedSo: the last checkpoint names a
// later term than the new leader's, written by a node after the leader's
// that is still in the group: as the fence reads it, a second owner's (a
// client that cannot see herald's node), whose term refuses the leader's
// puts. The child was told the checkpoint was copied from another group
// or written by hand, and that its first put would replace it.
func TestCheckpointOfASecondOwnerIsNamedSo(t *testing.T) {
	zkFl := zkFlags(t)
	g := uniq(t)
	s, w := zkSession(t), zkSession(t)
	mkpath(t, s.Conn(), g)
	first, err := s.Conn().Create(g+"/n_", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	child := `echo "term=[$HERALD_CHECKPOINT_TERM] err=[$HERALD_CHECKPOINT_ERROR]"`
	leader := start(t, nil, append(zkFl, "run", "--election", g, "--id", "leader", "--", "sh", "-c", child)...)
	waitQueued(t, zkFl, g, 2, "the herald copy never queued")
	second, err := w.Conn().Create(g+"/n_", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := w.Conn().Exists(second)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(elect.Checkpoint{Term: st.Czxid, Node: path.Base(second), ID: "second", Time: time.Now(), Data: []byte("theirs")})
	if _, err := w.Conn().Create(g+"/"+elect.CheckpointNode, rec, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := s.Conn().Delete(first, -1); err != nil {
		t.Fatal(err)
	}
	leader.waitOutput(t, "a node after ours still in the group: a second owner's", 20*time.Second)
	if strings.Contains(leader.out.String(), "copied from another group") {
		t.Errorf("the child was told the checkpoint came from another group:\n%s", leader.out.String())
	}
}

// TestCheckpointPutCutOffSaysWhatItMayHaveSaved: herald checkpoint put
// whose connection is lost after its write went out (its reply lost, the
// servers then refusing it) exited 1, "context canceled" when the runner
// stopped the command with SIGTERM, and "session expired" (as if the
// leader's) when its own session ended, though the write had landed
// both times (found by a review). It now exits 128+N on the signal and 69
// when its own session ends, each saying the checkpoint may or may not
// have been saved.
func TestCheckpointPutCutOffSaysWhatItMayHaveSaved(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	owner := zkSession(t)
	g := uniq(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := elect.NewElection(owner, g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(zktest.Shared(t).Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	f := h.Fence()
	for i, signal := range []bool{true, false} {
		p.Refuse(false)
		p.DropReplyTo(faultproxy.OpMulti)
		go func() { // once the write's reply is gone, refuse the reconnects
			for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
				if p.Dropped() == i+1 {
					p.Refuse(true)
					return
				}
			}
		}()
		data := "step=" + itoa(i+1)
		put := start(t, []string{"HERALD_PARENT="}, "--zk", p.Addr(), "--session-timeout", "2s", "checkpoint", "put",
			"--election", g, "--node", f.Node, "--term", strconv.FormatInt(f.Term, 10), data)
		if err := waitFor(20*time.Second, func() bool { return p.Dropped() == i+1 }); err != nil {
			t.Fatalf("the write's reply was never dropped:\n%s", put.out)
		}
		if signal {
			time.Sleep(300 * time.Millisecond) // it waits to reconnect
			_ = put.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-put.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("checkpoint put still runs:\n%s", put.out)
		}
		out := put.out.String()
		want := map[bool]int{true: 143, false: exitUnreachable}[signal]
		if put.code != want || !strings.Contains(out, "may or may not have been saved") {
			t.Errorf("checkpoint put cut off after its write (signal %v): exit %d, want %d saying it may have been saved:\n%s", signal, put.code, want, out)
		}
		if !signal && !strings.Contains(out, "not the leader's") {
			t.Errorf("checkpoint put whose own session ended does not say it was not the leader's:\n%s", out)
		}
		if c, err := elect.ReadCheckpoint(ctx, owner, g); err != nil || string(c.Data) != data {
			t.Errorf("checkpoint %+v (%v): want %s, the write that landed", c, err, data)
		}
	}
}
