package elect_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// lateChildEnv, set, makes the test binary a lateObserver: "MODE SERVERS
// PATH", MODE group (Observe) or single (ObserveSingle).
const lateChildEnv = "HERALD_TEST_LATE_OBSERVER"

// lateObserver observes one group or single node and prints every change
// as a JSON line, until killed.
func lateObserver(spec string) int {
	f := strings.SplitN(spec, " ", 3)
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "%s=%q: want MODE SERVERS PATH\n", lateChildEnv, spec)
		return 2
	}
	ctx := context.Background()
	s, err := elect.NewSession(ctx, strings.Split(f[1], ","), elect.WithSessionTimeout(10*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var ch <-chan elect.Change
	switch f[0] {
	case "group":
		o, err := elect.Observe(ctx, s, f[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ch = o.Changes()
	default:
		o, err := elect.ObserveSingle(ctx, s, f[2], elect.SingleNode{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ch = o.Changes()
	}
	enc := json.NewEncoder(os.Stdout)
	for c := range ch {
		if enc.Encode(c) != nil {
			return 1
		}
	}
	return 0
}

// TestObserverSaysWhenItSawAChangeLate: Observe and ObserveSingle, in a
// process that was stopped (SIGSTOP) while the owner went, report that
// loss with NotBefore: a moment before the process stopped, after which
// it happened. The same changes seen promptly carry none.
func TestObserverSaysWhenItSawAChangeLate(t *testing.T) {
	for _, mode := range []string{"group", "single"} {
		t.Run(mode, func(t *testing.T) {
			s := session(t, sharedAddrs(t))
			g := groupPath(t)
			target, take := g, func() func() {
				l, err := elect.NewLock(s, g, elect.CreateParents())
				if err != nil {
					t.Fatal(err)
				}
				h, err := l.Acquire(ctxT(t, 10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				return func() {
					if err := h.Release(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if mode == "single" {
				if _, err := s.Conn().Create(g, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
				target = g + "/leader"
				take = func() func() {
					if _, err := s.Conn().Create(target, []byte("leader-1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
						t.Fatal(err)
					}
					return func() {
						if err := s.Conn().Delete(target, -1); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			release := take()
			changes, child := startLateObserver(t, mode+" "+strings.Join(sharedAddrs(t), ",")+" "+target)
			next := func(what string) elect.Change {
				t.Helper()
				select {
				case c, ok := <-changes:
					if !ok {
						t.Fatalf("the observer ended before %s", what)
					}
					return c
				case <-time.After(20 * time.Second):
					t.Fatalf("no change for %s within 20s", what)
				}
				return elect.Change{}
			}
			if c := next("the snapshot"); c.Kind != elect.Snapshot || c.Owner == nil {
				t.Fatalf("first change %+v, want a snapshot with an owner", c)
			}
			// Seen promptly: no NotBefore.
			release()
			if c := next("the prompt loss"); c.Kind != elect.OwnerChanged || c.Owner != nil || !c.NotBefore.IsZero() {
				t.Fatalf("a loss seen promptly: %+v, want the owner gone, no not_before", c)
			}
			release = take()
			if c := next("the prompt gain"); c.Kind != elect.OwnerChanged || c.Owner == nil || !c.NotBefore.IsZero() {
				t.Fatalf("a gain seen promptly: %+v, want an owner, no not_before", c)
			}
			time.Sleep(300 * time.Millisecond) // the child is idle, waiting on its watches
			stopped := time.Now()
			if err := child.Process.Signal(sigStop); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			released := time.Now()
			release()
			time.Sleep(1500 * time.Millisecond)
			if err := child.Process.Signal(sigCont); err != nil {
				t.Fatal(err)
			}
			c := next("the loss seen late")
			if c.Kind != elect.OwnerChanged || c.Owner != nil {
				t.Fatalf("after the thaw: %+v, want the owner gone", c)
			}
			if c.NotBefore.IsZero() || c.NotBefore.After(stopped) || c.NotBefore.After(released) {
				t.Errorf("the loss seen late says not_before %v; want one before the process stopped (%v), so before the release (%v)",
					c.NotBefore, stopped, released)
			}
		})
	}
}

// startLateObserver runs a lateObserver in a child process of the test
// binary, killed when the test ends, and streams its changes.
func startLateObserver(t *testing.T, spec string) (<-chan elect.Change, *exec.Cmd) {
	t.Helper()
	lines, cmd := startTestChild(t, lateChildEnv+"="+spec)
	ch := make(chan elect.Change, 16)
	go func() {
		defer close(ch)
		for l := range lines {
			var c elect.Change
			if json.Unmarshal([]byte(l), &c) == nil {
				ch <- c
			}
		}
	}()
	return ch, cmd
}

// startTestChild runs the test binary as a child process with env set
// (one of the child modes TestMain knows), killed (and continued first,
// should the test have stopped it) when the test ends, and streams its
// standard output's lines.
func startTestChild(t *testing.T, env string) (<-chan string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(sigCont)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines, cmd
}
