package zkserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func connect(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(addrs, 4*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// eventually retries f until it succeeds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStandaloneLifecycle(t *testing.T) {
	c := zktest.ForTest(t, zkserver.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := c.Member(0)
	if c.Len() != 1 || c.ConnectString() != s.Addr() || !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("standalone: Len %d, ConnectString %q, Addr %q", c.Len(), c.ConnectString(), s.Addr())
	}
	if out, err := s.FourLetter(ctx, "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v", out, err)
	}
	if st, err := s.State(ctx); err != nil || st != "standalone" {
		t.Fatalf("state = %q, %v", st, err)
	}
	if l, err := c.Leader(ctx); err != nil || l != s {
		t.Fatalf("Leader = %v, %v; want the only member", l, err)
	}

	cpu0, err := s.CPUTime()
	if err != nil || cpu0 <= 0 {
		t.Fatalf("CPUTime = %v, %v; a started JVM has used some", cpu0, err)
	}
	conn := connect(t, c.Addrs())
	before, err := s.PacketsReceived(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/lifecycle", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := conn.GetW("/lifecycle"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.WatchCount(ctx); err != nil || n != 1 {
		t.Fatalf("WatchCount = %d, %v; want 1", n, err)
	}
	if after, err := s.PacketsReceived(ctx); err != nil || after < before+2 {
		t.Fatalf("PacketsReceived went from %d to %d (%v); want at least 2 more", before, after, err)
	}

	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("Running after Stop")
	}
	if _, err := s.FourLetter(ctx, "ruok"); err == nil {
		t.Fatal("ruok answered by a stopped server")
	}
	if _, err := s.CPUTime(); !errors.Is(err, zkserver.ErrNotRunning) {
		t.Fatalf("CPUTime on stopped server: %v, want ErrNotRunning", err)
	}
	if err := s.Pause(); !errors.Is(err, zkserver.ErrNotRunning) {
		t.Fatalf("Pause on stopped server: %v, want ErrNotRunning", err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); !errors.Is(err, zkserver.ErrAlreadyRunning) {
		t.Fatalf("second Start: %v, want ErrAlreadyRunning", err)
	}
	eventually(t, 20*time.Second, "data kept across restart", func() error {
		data, _, err := conn.Get("/lifecycle")
		if err == nil && string(data) != "v1" {
			return errors.New("data " + string(data))
		}
		return err
	})

	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	short, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = s.FourLetter(short, "ruok")
	scancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ruok on paused server: %v, want a deadline error", err)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if out, err := s.FourLetter(ctx, "ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok after Resume = %q, %v", out, err)
	}

	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("Running after Kill")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Start(ctx); !errors.Is(err, zkserver.ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
}

func TestEnsembleFailover(t *testing.T) {
	c := zktest.ForTest(t, zkserver.Config{Nodes: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if got := len(strings.Split(c.ConnectString(), ",")); got != 3 {
		t.Fatalf("ConnectString %q has %d addresses, want 3", c.ConnectString(), got)
	}
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Members() {
		st, err := s.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "leader", false: "follower"}[s == old]; st != want {
			t.Fatalf("zk%d state %q, want %q", s.ID(), st, want)
		}
	}
	conn := connect(t, c.Addrs())
	if _, err := conn.Create("/failover", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == old {
		t.Fatal("killed leader still reported as leader")
	}

	if err := old.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := old.State(ctx); err != nil || st != "follower" {
		t.Fatalf("restarted old leader state %q, %v; want follower", st, err)
	}
	own := connect(t, []string{old.Addr()})
	eventually(t, 20*time.Second, "rejoined member serves the data", func() error {
		_, _, err := own.Get("/failover")
		return err
	})
}

func TestStartFailureShowsLog(t *testing.T) {
	if _, err := zkserver.FindRuntime(); err != nil {
		zktest.ForTest(t, zkserver.Config{}) // skips or fails with the clear message
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := zkserver.Start(ctx, zkserver.Config{Dir: t.TempDir(), JVMFlags: []string{"-XX:+HeraldNoSuchOption"}})
	if err == nil {
		c.Close()
		t.Fatal("Start succeeded with a bad JVM flag")
	}
	if !errors.Is(err, zkserver.ErrExited) || !strings.Contains(err.Error(), "HeraldNoSuchOption") {
		t.Fatalf("error should say the process exited and quote the log: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []zkserver.Config{
		{Nodes: -1},
		{Nodes: 10},
		{TickTime: -time.Second},
		{MaxClientCnxns: -1},
		{SyncLimit: -1},
		{MinSessionTimeout: 5 * time.Second, MaxSessionTimeout: time.Second},
		{TickTime: time.Second, MinSessionTimeout: time.Second},
		{JVMHeap: "256m -Xdebug"},
		{TLSProtocol: "TLSv1.3"},
		{TLSKeyStore: "/k.pem", TLSProtocol: "1.3"},
	}
	for _, cfg := range bad {
		if err := cfg.Validate(); !errors.Is(err, zkserver.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := zkserver.Start(context.Background(), cfg); !errors.Is(err, zkserver.ErrInvalidConfig) {
			t.Errorf("Start(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	good := []zkserver.Config{{}, {Nodes: 3}, {TickTime: time.Second, MaxSessionTimeout: 10 * time.Second}, {TLSKeyStore: "/k.pem", TLSProtocol: "TLSv1.3"}}
	for _, cfg := range good {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", cfg, err)
		}
	}
}
