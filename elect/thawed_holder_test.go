package elect_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
)

// thawedHolderEnv, set, makes the test binary a thawedHolder: "SERVERS
// GROUP".
const thawedHolderEnv = "HERALD_TEST_THAWED_HOLDER"

// thawedHolder owns a group on a 2 s session (under LoseOnExpiry when
// the spec ends in "expiry"), prints "owned", then works without pause;
// the first step that ends over a second after the one before (it was
// frozen) asks at once whether it still holds, tries a checkpoint, and
// prints "thawed held=BOOL checkpoint=ERR".
func thawedHolder(spec string) int {
	f := strings.Fields(spec) // SERVERS GROUP [expiry]
	servers, group := f[0], f[1]
	var opts []elect.Option
	if len(f) > 2 {
		opts = append(opts, elect.WithLossPolicy(elect.LoseOnExpiry))
	}
	ctx := context.Background()
	s, err := elect.NewSession(ctx, strings.Split(servers, ","), elect.WithSessionTimeout(2*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := elect.NewElection(s, group, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := l.Campaign(ctx, "thawed")
	if err != nil {
		fmt.Println("error", err)
		select {}
	}
	// A busy worker on one CPU, as in a small container: thawed, it runs
	// on before the goroutines that would tell it of the loss.
	runtime.GOMAXPROCS(1)
	last := time.Now() // before "owned": the freeze may come at once
	fmt.Println("owned")
	for {
		now := time.Now()
		if now.Sub(last) < time.Second {
			last = now
			continue
		}
		held := h.Held()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := h.Checkpoint(cctx, []byte("late"))
		cancel()
		fmt.Printf("thawed held=%v checkpoint=%v\n", held, err)
		select {}
	}
}

// TestThawedHolderNeitherHoldsNorWrites: an owner frozen (SIGSTOP) past
// its session timeout, while the servers expire its session and the next
// owner takes over and writes, asks first thing once thawed whether it
// still holds, then writes a checkpoint. Held must say false, under
// either loss policy, and the write must be refused. Before, Held said
// true (under LoseOnExpiry until the client reconnected and heard of the
// expiry, under LoseOnSuspend when the thawed goroutine ran before the
// lease's timer), while the next owner held.
func TestThawedHolderNeitherHoldsNorWrites(t *testing.T) {
	for _, policy := range []string{"suspend", "expiry"} {
		t.Run(policy, func(t *testing.T) { thawHolder(t, policy) })
	}
}

func thawHolder(t *testing.T, policy string) {
	addrs := sharedAddrs(t)
	g := groupPath(t)
	made, err := elect.NewElection(session(t, addrs), g, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	if h, err := made.Campaign(ctxT(t, 10*time.Second), "first"); err != nil {
		t.Fatal(err)
	} else if err := h.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	spec := strings.Join(addrs, ",") + " " + g
	if policy == "expiry" {
		spec += " expiry"
	}
	lines, cmd := startTestChild(t, thawedHolderEnv+"="+spec)
	next := func() string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("the holder said nothing within 20s")
		}
		return ""
	}
	if l := next(); l != "owned" {
		t.Fatalf("the holder said %q, want owned", l)
	}
	if err := cmd.Process.Signal(sigStop); err != nil {
		t.Fatal(err)
	}
	l, err := elect.NewElection(session(t, addrs), g)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Campaign(ctxT(t, 15*time.Second), "next")
	if err != nil {
		t.Fatalf("nobody owned once the frozen holder's session expired: %v", err)
	}
	if err := h.Checkpoint(ctxT(t, 5*time.Second), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(sigCont); err != nil {
		t.Fatal(err)
	}
	got := next()
	if !strings.HasPrefix(got, "thawed held=false ") || !strings.Contains(got, elect.ErrNotLeader.Error()) {
		t.Errorf("the thawed holder: %q while another owns; want held=false and %v", got, elect.ErrNotLeader)
	}
	if cp, err := elect.ReadCheckpoint(ctxT(t, 5*time.Second), session(t, addrs), g); err != nil || string(cp.Data) != "new" {
		t.Errorf("the checkpoint: %+v, %v; want the next owner's", cp, err)
	}
}
