package elect

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/faultproxy"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestReadStampedWhenAnswered: a sync the leader answered vouches for the
// state as of its send; a read asked for before that send but answered
// after it may show an owner that came after it. So an observer stamps a
// read when it is answered (observation.listedAt, singleState.readAt, in
// ObserveSingle's step and in ObserveMany's turn for a single node),
// and a sync sent before that stamp vouches for nothing of the view the
// read gave (unseen). Here the observer's link is slow (300 ms each way):
// the read is asked for, a sync is sent, an owner appears, and only then
// does the read reach the server, which shows the owner. Stamped when it
// was asked for, the view said that owner held as of the sync, before it
// existed.
func TestReadStampedWhenAnswered(t *testing.T) {
	t.Run("group", func(t *testing.T) {
		s, direct, group := slowSession(t)
		ob := &observation{o: &Observer{}, s: s, r: reader{conn: s.Conn(), group: group, recipe: RecipeLock}, childrenFired: true}
		read := make(chan error, 1)
		var v View
		go func() {
			var err error
			v, err = ob.read(t.Context(), make(chan struct{}))
			read <- err
		}()
		synced, appeared := syncThenOwner(t, s, direct, group+"/lock-", zk.FlagEphemeral|zk.FlagSequence)
		if err := <-read; err != nil {
			t.Fatal(err)
		}
		if v.Owner == nil {
			t.Fatalf("the listing does not show the owner made after the sync was sent (it reached the server first): %+v", v)
		}
		ob.prev = &v
		ob.unseen(synced) // the newest sync the leader answered was sent at synced
		checkHeld(t, v.Owner.Node, nsTime(ob.before.heldAsOf), synced, appeared)
	})
	t.Run("single", func(t *testing.T) {
		s, direct, group := slowSession(t)
		leader := group + "/leader"
		st, _, err := newSingleState(s, leader, SingleNode{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		so := &SingleObserver{Observer: &Observer{ch: make(chan Change, 4), done: make(chan struct{})}}
		ob := &singleObservation{o: so, s: s, singleState: st}
		changed := make(chan struct{})
		stepped := make(chan error, 1)
		go func() { stepped <- ob.step(t.Context(), changed) }()
		synced, appeared := syncThenOwner(t, s, direct, leader, zk.FlagEphemeral)
		var c Change
		select {
		case c = <-so.ch:
		case err := <-stepped:
			t.Fatalf("the read ended with no change: %v", err)
		}
		close(changed) // the step waits for its watch no longer
		if err := <-stepped; err != nil {
			t.Fatal(err)
		}
		if c.Owner == nil {
			t.Fatalf("the read does not show the owner made after the sync was sent (it reached the server first): %+v", c)
		}
		ob.unseen(synced) // as above
		checkHeld(t, leader, nsTime(ob.before.view.heldAsOf), synced, appeared)
	})
	t.Run("many", func(t *testing.T) {
		s, direct, group := slowSession(t)
		leader := group + "/leader"
		st, _, err := newSingleState(s, leader, SingleNode{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := &Many{s: s, ctx: t.Context(), ch: make(chan Change, 4), groups: map[string]*member{}}
		g := &member{single: &st}
		g.ob.r.group, g.ob.childrenFired = leader, true
		served := make(chan struct{})
		go func() {
			defer close(served)
			m.serveSingle(g, fired{})
		}()
		synced, appeared := syncThenOwner(t, s, direct, leader, zk.FlagEphemeral)
		<-served
		var c Change
		select {
		case c = <-m.ch:
		default:
			t.Fatal("the turn sent no change")
		}
		if c.Owner == nil {
			t.Fatalf("the read does not show the owner made after the sync was sent (it reached the server first): %+v", c)
		}
		st.unseen(synced) // as above
		checkHeld(t, leader, nsTime(st.before.view.heldAsOf), synced, appeared)
	})
}

// slowSession is a session whose link to ZooKeeper takes 300 ms each
// way, one straight to it, and a group made for the test.
func slowSession(t *testing.T) (s, direct *Session, group string) {
	t.Helper()
	zks := zktest.Shared(t)
	px, err := faultproxy.New(zks.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { px.Close() })
	px.Delay(300 * time.Millisecond)
	for _, p := range []struct {
		to   []string
		into **Session
	}{{[]string{px.Addr()}, &s}, {zks.Addrs(), &direct}} {
		ss, err := NewSession(t.Context(), p.to, WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		*p.into = ss
	}
	group = fmt.Sprintf("/t/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
	for _, p := range []string{"/t", group} {
		if _, err := direct.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	return s, direct, group
}

// syncThenOwner, once a read on s is on its way, sends a sync on s, then
// makes the owner's node straight away, before the read reaches the
// server; it returns when the sync was sent and the owner made, once the
// sync is answered.
func syncThenOwner(t *testing.T, s, direct *Session, node string, flags int32) (synced, appeared time.Time) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // the read is on its way
	synced = time.Now()
	answered := make(chan error, 1)
	go func() {
		_, err := s.Conn().Sync("/")
		answered <- err
	}()
	time.Sleep(20 * time.Millisecond)
	appeared = time.Now()
	if _, err := direct.Conn().Create(node, []byte("owner-1"), flags, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	return synced, appeared
}

// checkHeld fails when the owner, made at appeared, is vouched for as of
// a moment before that.
func checkHeld(t *testing.T, owner string, held, synced, appeared time.Time) {
	t.Helper()
	if !held.IsZero() && held.Before(appeared) {
		t.Errorf("owner %s, made %v after the sync was sent, is vouched for as of %v after it, before it was made",
			owner, appeared.Sub(synced).Round(time.Millisecond), held.Sub(synced).Round(time.Millisecond))
	}
}
