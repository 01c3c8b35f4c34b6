package elect_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// frozenWaiterEnv, set, makes the test binary a frozenWaiter: "SERVERS
// GROUP".
const frozenWaiterEnv = "HERALD_TEST_FROZEN_WAITER"

// frozenWaiter queues for a lock on a 2 s session and prints "queued",
// then "owned" or "error <why>" as Acquire returns; once it owned, "lost
// <reason>" when its handle ends. Then it waits to be killed.
func frozenWaiter(spec string) int {
	servers, group, ok := strings.Cut(spec, " ")
	if !ok {
		fmt.Fprintf(os.Stderr, "%s=%q: want SERVERS GROUP\n", frozenWaiterEnv, spec)
		return 2
	}
	ctx := context.Background()
	s, err := elect.NewSession(ctx, strings.Split(servers, ","), elect.WithSessionTimeout(2*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := elect.NewLock(s, group, elect.OnQueued(func(string) { fmt.Println("queued") }))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := l.Acquire(ctx)
	switch {
	case err != nil:
		fmt.Println("error", err)
	case h.Held():
		fmt.Println("owned")
		<-h.Done()
		fmt.Println("lost", h.Reason())
	default:
		fmt.Println("error handle not held:", h.Err())
	}
	select {}
}

// startFrozenWaiter starts a frozenWaiter on group g; next returns its
// next line, failing the test when none comes within 20s.
func startFrozenWaiter(t *testing.T, addrs []string, g string) (next func(what string) string, cmd *exec.Cmd) {
	lines, cmd := startTestChild(t, frozenWaiterEnv+"="+strings.Join(addrs, ",")+" "+g)
	return func(what string) string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("the frozen waiter said nothing about %s within 20s", what)
		}
		return ""
	}, cmd
}

// TestFrozenWaiterNeverOwnsAfterItsSessionExpired: a waiter second in line
// is frozen (SIGSTOP) past its session timeout while the owner releases.
// ZooKeeper writes it the owner's deletion, then expires its session, and
// the waiter behind it owns. Thawed, the waiter reads that deletion before
// it learns its session is gone: it must not own on it (Acquire returns
// ErrSessionLost), nor say someone deleted its node. Before, it was given
// a handle beside the real owner, or ErrNodeDeleted.
func TestFrozenWaiterNeverOwnsAfterItsSessionExpired(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	lock := func() *elect.Lock {
		l, err := elect.NewLock(session(t, addrs), g, elect.CreateParents())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first, err := lock().Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	next, cmd := startFrozenWaiter(t, addrs, g)
	if l := next("its queueing"); l != "queued" {
		t.Fatalf("the waiter said %q, want queued", l)
	}
	third := make(chan *elect.Handle, 1)
	go func() {
		h, err := lock().Acquire(ctxT(t, 30*time.Second))
		if err != nil {
			t.Error(err)
		}
		third <- h
	}()
	time.Sleep(500 * time.Millisecond) // the third queues behind the waiter
	if err := cmd.Process.Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := first.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	var h *elect.Handle
	select {
	case h = <-third:
	case <-time.After(15 * time.Second):
		t.Fatal("the third never owned once the frozen waiter's session expired")
	}
	if h == nil || !h.Held() {
		t.Fatal("the third does not hold")
	}
	if err := cmd.Process.Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	got := next("its Acquire")
	if got == "owned" || !strings.Contains(got, elect.ErrSessionLost.Error()) {
		t.Errorf("the thawed waiter: %q while the third holds; want %v", got, elect.ErrSessionLost)
	}
	if !h.Held() {
		t.Errorf("the third lost the lock: %v", h.Err())
	}
}

// TestFrozenHolderSaysItsSessionExpired: an owner frozen (SIGSTOP) past
// its session timeout reads, once thawed, the deletion of its node that
// the expiry made, before it learns the session is gone. Its handle must
// end at once (another owner runs), and say why truly: the session
// expired, not that someone deleted the node.
func TestFrozenHolderSaysItsSessionExpired(t *testing.T) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	made, err := elect.NewLock(session(t, addrs), g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	if h, err := made.Acquire(ctxT(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	} else if err := h.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	next, cmd := startFrozenWaiter(t, addrs, g)
	for _, want := range []string{"queued", "owned"} {
		if l := next(want); l != want {
			t.Fatalf("the holder said %q, want %s", l, want)
		}
	}
	if err := cmd.Process.Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	l, err := elect.NewLock(session(t, addrs), g)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Acquire(ctxT(t, 15*time.Second))
	if err != nil {
		t.Fatalf("nobody owned once the frozen holder's session expired: %v", err)
	}
	if err := cmd.Process.Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	if got, want := next("its loss"), "lost "+string(elect.ReasonSessionExpired); got != want {
		t.Errorf("the thawed holder: %q, want %q", got, want)
	}
	if !h.Held() {
		t.Errorf("the new owner lost the lock: %v", h.Err())
	}
}
