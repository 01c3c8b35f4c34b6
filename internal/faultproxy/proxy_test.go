package faultproxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// client is a go-zookeeper connection whose state changes are all kept,
// since go-zookeeper drops events when its own small buffer is full.
type client struct {
	*zk.Conn
	states chan zk.State
}

func dial(t *testing.T, addr string, session time.Duration) *client {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, session, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	c := &client{Conn: conn, states: make(chan zk.State, 1000)}
	go func() {
		for ev := range events {
			if ev.Type == zk.EventSession {
				select {
				case c.states <- ev.State:
				default: // the test stopped listening; nothing waits for more
				}
			}
		}
	}()
	t.Cleanup(conn.Close)
	return c
}

// await reads state changes until want arrives.
func (c *client) await(t *testing.T, want zk.State, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	var seen []zk.State
	for {
		select {
		case s := <-c.states:
			if s == want {
				return
			}
			seen = append(seen, s)
		case <-deadline:
			t.Fatalf("no %v within %v; saw %v", want, within, seen)
		}
	}
}

func newProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

var acl = zk.WorldACL(zk.PermAll)

func TestRelaysZooKeeper(t *testing.T) {
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	c := dial(t, p.Addr(), 4*time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	path := uniq(t)
	if _, err := c.Create(path, []byte("through"), 0, acl); err != nil {
		t.Fatal(err)
	}
	data, _, err := c.Get(path)
	if err != nil || string(data) != "through" {
		t.Fatalf("Get = %q, %v", data, err)
	}
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns = %d, want 1", n)
	}
}

func TestCutKeepsSession(t *testing.T) {
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	c := dial(t, p.Addr(), 4*time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	id := c.SessionID()

	p.Cut()
	c.await(t, zk.StateDisconnected, 10*time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	if got := c.SessionID(); got != id {
		t.Fatalf("session changed across Cut: %x -> %x", id, got)
	}
	if _, err := c.Create(uniq(t), nil, 0, acl); err != nil {
		t.Fatal(err)
	}
}

func TestBlackholeExpiresSession(t *testing.T) {
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	c := dial(t, p.Addr(), time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	path := uniq(t)
	if _, err := c.Create(path, nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	direct := dial(t, srv.Member(0).Addr(), 4*time.Second)

	p.Blackhole(true)
	gone, deadline := false, time.Now().Add(15*time.Second)
	for !gone && time.Now().Before(deadline) {
		ok, _, err := direct.Exists(path)
		if err != nil {
			t.Fatal(err)
		}
		if gone = !ok; !gone {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !gone {
		t.Fatal("the server kept the blackholed session's ephemeral node for 15s")
	}
	p.Blackhole(false)
	c.await(t, zk.StateExpired, 15*time.Second)
}

func TestDropReplyToCreate(t *testing.T) {
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	c := dial(t, p.Addr(), 4*time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	path := uniq(t)
	if _, err := c.Create(path, nil, 0, acl); err != nil {
		t.Fatal(err) // a create before arming passes
	}

	p.DropReplyTo(faultproxy.OpCreate, faultproxy.OpCreate2)
	if _, _, err := c.Get(path); err != nil {
		t.Fatalf("a getData must not trigger the create fault: %v", err)
	}
	_, err := c.Create(path+"/lost", nil, 0, acl)
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("Create = %v, want zk.ErrConnectionClosed", err)
	}
	if n := p.Dropped(); n != 1 {
		t.Fatalf("Dropped = %d, want 1", n)
	}
	direct := dial(t, srv.Member(0).Addr(), 4*time.Second)
	if ok, _, err := direct.Exists(path + "/lost"); err != nil || !ok {
		t.Fatalf("the server should have created the node: exists=%v, %v", ok, err)
	}

	// The fault fired once; the reconnected client works normally.
	c.await(t, zk.StateHasSession, 10*time.Second)
	if _, err := c.Create(path+"/kept", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if n := p.Dropped(); n != 1 {
		t.Fatalf("Dropped = %d after disarm, want 1", n)
	}
}

// TestDropRequestToCreate: the armed create never reaches the server; the
// client sees the connection lost, and once reconnected works as before.
func TestDropRequestToCreate(t *testing.T) {
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	c := dial(t, p.Addr(), 4*time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	path := uniq(t)
	if _, err := c.Create(path, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	p.DropRequestTo(faultproxy.OpCreate, faultproxy.OpCreate2)
	if _, _, err := c.Get(path); err != nil {
		t.Fatalf("a getData must not trigger the create fault: %v", err)
	}
	if _, err := c.Create(path+"/lost", nil, 0, acl); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("Create = %v, want zk.ErrConnectionClosed", err)
	}
	direct := dial(t, srv.Member(0).Addr(), 4*time.Second)
	if _, err := direct.Sync(path); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := direct.Exists(path + "/lost"); err != nil || ok {
		t.Fatalf("the swallowed create reached the server: exists=%v, %v", ok, err)
	}
	c.await(t, zk.StateHasSession, 10*time.Second)
	if _, err := c.Create(path+"/kept", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if n := p.Dropped(); n != 1 {
		t.Fatalf("Dropped = %d, want 1", n)
	}
}

// TestHoldReplyTo: the armed request reaches the server at once, its reply
// (and the replies after it) waits for Release, on a connection kept open.
func TestHoldReplyTo(t *testing.T) {
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	c := dial(t, p.Addr(), 4*time.Second)
	c.await(t, zk.StateHasSession, 10*time.Second)
	path := uniq(t)

	forwarded := p.HoldReplyTo(faultproxy.OpCreate, faultproxy.OpCreate2)
	if _, _, err := c.Exists(path); err != nil {
		t.Fatalf("an exists must not trigger the hold: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Create(path, nil, 0, acl)
		done <- err
	}()
	select {
	case <-forwarded:
	case <-time.After(10 * time.Second):
		t.Fatal("the create was not forwarded")
	}
	direct := dial(t, srv.Member(0).Addr(), 4*time.Second)
	eventuallyTrue(t, 10*time.Second, func() bool {
		ok, _, err := direct.Exists(path)
		return err == nil && ok
	})
	select {
	case err := <-done:
		t.Fatalf("the create returned (%v) while its reply was held", err)
	case <-time.After(300 * time.Millisecond):
	}
	p.Release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the held create, released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the create's reply did not come after Release")
	}
	if p.Dropped() != 0 {
		t.Fatalf("Dropped = %d; a hold drops nothing", p.Dropped())
	}
}

// eventuallyTrue fails t unless cond holds within d.
func eventuallyTrue(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not so within %v", d)
		}
	}
}

func TestRefuse(t *testing.T) {
	srv := zktest.Shared(t)
	p := newProxy(t, srv.Member(0).Addr())
	p.Refuse(true)
	conn, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
		t.Fatalf("refused connection read %d bytes, err %v; want it closed", n, err)
	}

	p.Refuse(false)
	// Four-letter commands are not framed; the proxy relays them as raw bytes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := zkserver.FourLetter(ctx, p.Addr(), "ruok")
	if err != nil || out != "imok" {
		t.Fatalf("ruok through the proxy = %q, %v", out, err)
	}
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// uniq is a path no other test or run of this binary uses on the shared server.
func uniq(t *testing.T) string {
	return "/" + strings.ReplaceAll(t.Name(), "/", "_") + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func TestNewRejectsBadTarget(t *testing.T) {
	for _, target := range []string{"", "localhost", "127.0.0.1:2181:9"} {
		if p, err := faultproxy.New(target); !errors.Is(err, faultproxy.ErrBadTarget) {
			if p != nil {
				p.Close()
			}
			t.Errorf("New(%q) = %v, want ErrBadTarget", target, err)
		}
	}
}
