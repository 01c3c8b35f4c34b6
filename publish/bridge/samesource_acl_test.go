package bridge_test

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
)

// TestSourceClaimedBeforeByAnyoneStopsNoBridge: a bridge with digest
// credentials made the sources root open to every client's create, and a
// source's claim is named for the source, which is public. A client
// without credentials could claim a bridge's source before it, from a
// session of its own, and the bridge stopped as a duplicate of it two
// session timeouts later, again after every restart. The root such a
// bridge makes now admits its own identity alone to create.
func TestSourceClaimedBeforeByAnyoneStopsNoBridge(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	const auth = "bridge:pw"
	owner := authSession(t, addrs, auth)
	clearSourcesRoot(t, owner) // made open by the tests before
	t.Cleanup(func() { clearSourcesRoot(t, authSession(t, addrs, auth)) })
	name := func(s string) string {
		return s + "-" + strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-")
	}
	cfg := bridge.Config{Servers: addrs, Discover: []string{groupPath(t)}, Source: name("first"), SessionTimeout: 2 * time.Second, DigestAuth: auth, Sinks: []publish.Sink{jsSink(t, url)}}
	a := start(t, cfg)
	waitStatus(t, a.Bridge, 15*time.Second, "the first bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	deadline := time.Now().Add(10 * time.Second)
	for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first bridge never claimed its source")
		}
		ok, _, _ = owner.Conn().Exists(bridge.SourcesRoot + "/" + cfg.Source)
	}

	anyone := session(t, addrs) // no credentials
	target := name("second")
	_, err := anyone.Conn().Create(bridge.SourcesRoot+"/"+target, []byte("{}"), gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll))
	if !errors.Is(err, gozk.ErrNoAuth) {
		t.Errorf("a client without credentials claiming %s: %v; want ErrNoAuth", target, err)
	}
	cfg.Source, cfg.Discover, cfg.Sinks = target, []string{groupPath(t)}, []publish.Sink{jsSink(t, url)}
	b := start(t, cfg)
	waitStatus(t, b.Bridge, 15*time.Second, "the second bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	staysUp(t, b, 2*cfg.SessionTimeout+time.Second, "the bridge whose source another client tried to claim")
}

// authSession is a session logged in with digest credentials auth.
func authSession(t testing.TB, servers []string, auth string) *elect.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := elect.NewSession(ctx, servers, elect.WithDigestAuth(auth))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// clearSourcesRoot deletes the sources root, once the claims in it (of
// sessions that ended, expiring) are gone.
func clearSourcesRoot(t testing.TB, s *elect.Session) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.Conn().Delete(bridge.SourcesRoot, -1)
		switch {
		case err == nil, errors.Is(err, gozk.ErrNoNode):
			// /herald too, where nothing else is left in it: made by a
			// bridge with credentials, it admits that identity alone,
			// and the next test's bridges must make it afresh.
			_ = s.Conn().Delete(path.Dir(bridge.SourcesRoot), -1)
			return
		case !errors.Is(err, gozk.ErrNotEmpty) || time.Now().After(deadline):
			t.Fatalf("clearing %s: %v", bridge.SourcesRoot, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSourcesRootLetsItsMakerClaim: a bridge whose ACL grants its own
// identity write but not create (`auth::rwa,world:anyone:r`, which herald
// takes for every node, giving the parents it makes create and delete)
// made the sources root with that ACL as it stood: no one, the bridge
// included, could create there, so its claim was refused, and every later
// bridge's too, for as long as the root stood; a second bridge of the same
// source went unnoticed.
func TestSourcesRootLetsItsMakerClaim(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	const auth = "bridge:pw"
	clearSourcesRoot(t, authSession(t, addrs, auth))
	t.Cleanup(func() { clearSourcesRoot(t, authSession(t, addrs, auth)) })
	acl, err := elect.ParseACL("auth::rwa,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	source := "maker-" + strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-")
	cfg := bridge.Config{Servers: addrs, Discover: []string{groupPath(t)}, Source: source, SessionTimeout: 2 * time.Second, DigestAuth: auth,
		SessionOptions: []elect.SessionOption{elect.WithDefaultACL(acl)}, Sinks: []publish.Sink{jsSink(t, url)}}
	a := start(t, cfg)
	waitStatus(t, a.Bridge, 15*time.Second, "the bridge active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
	owner := authSession(t, addrs, auth)
	deadline := time.Now().Add(10 * time.Second)
	for ok := false; !ok; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			rootACL, _, err := owner.Conn().GetACL(bridge.SourcesRoot)
			t.Fatalf("the bridge never claimed its source; %s has ACL %s (%v)", bridge.SourcesRoot, elect.FormatACL(rootACL), err)
		}
		ok, _, _ = owner.Conn().Exists(bridge.SourcesRoot + "/" + source)
	}
}

// TestSourcesRootOfAnotherIdentity: the sources root a bridge with
// credentials makes admits that identity alone, and a bridge of another
// identity could not claim its source there: it said only "not
// authenticated". It now names the root's ACL and the setAcl that admits
// it too; and bridges given an ACL naming both identities (--zk-acl) make
// a root where each claims its source.
func TestSourcesRootOfAnotherIdentity(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	suffix := strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-")
	name := func(s string) string { return s + "-" + suffix }
	claimed := func(source string) bool {
		ok, _, _ := authSession(t, addrs, "bridge:pw").Conn().Exists(bridge.SourcesRoot + "/" + source)
		return ok
	}
	run := func(auth, source string, log *logLines, opts ...elect.SessionOption) *running {
		cfg := bridge.Config{Servers: addrs, Discover: []string{groupPath(t)}, Source: source, SessionTimeout: 2 * time.Second, DigestAuth: auth,
			SessionOptions: opts, Sinks: []publish.Sink{jsSink(t, url)}}
		if log != nil {
			cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
		}
		r := start(t, cfg)
		waitStatus(t, r.Bridge, 15*time.Second, source+" active", func(st bridge.Status) bool { return st.Role == bridge.RoleActive })
		return r
	}
	clearSourcesRoot(t, authSession(t, addrs, "bridge:pw"))
	t.Cleanup(func() { clearSourcesRoot(t, authSession(t, addrs, "bridge:pw")) })
	a := run("bridge:pw", name("alpha"), nil)
	eventually(t, 10*time.Second, "alpha's claim", func() bool { return claimed(name("alpha")) })
	var log logLines
	b := run("beta:pw", name("beta"), &log)
	// The root's maker's hash is hidden from beta (see
	// elect.RootRefused): it is told what to add, not a whole setAcl.
	want := "add digest:" + gozk.DigestACL(gozk.PermAll, "beta", "pw")[0].ID + ":cdr to the ACL that getAcl " + bridge.SourcesRoot + " shows"
	eventually(t, 10*time.Second, "beta told why it cannot claim", func() bool {
		return strings.Contains(log.String(), "does not let this identity create there (ACL digest:bridge:") && strings.Contains(log.String(), want) &&
			strings.Contains(log.String(), "setAcl "+bridge.SourcesRoot+" to the sum")
	})
	a.stop(t)
	b.stop(t)

	clearSourcesRoot(t, authSession(t, addrs, "bridge:pw"))
	both := []gozk.ACL{gozk.DigestACL(gozk.PermAll, "bridge", "pw")[0], gozk.DigestACL(gozk.PermAll, "beta", "pw")[0], {Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}}
	run("bridge:pw", name("alpha2"), nil, elect.WithDefaultACL(both))
	eventually(t, 10*time.Second, "alpha's claim", func() bool { return claimed(name("alpha2")) })
	run("beta:pw", name("beta2"), nil, elect.WithDefaultACL(both))
	eventually(t, 10*time.Second, "beta's claim under a root whose ACL names both", func() bool { return claimed(name("beta2")) })
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOpenSourcesRootIsWarnedOf: a sources root an older herald made (or
// a bridge without credentials, first) lets anyone claim a source first;
// a bridge with credentials says so, and what to run.
func TestOpenSourcesRootIsWarnedOf(t *testing.T) {
	addrs, url := zkAddrs(t), natsURL(t)
	clearSourcesRoot(t, authSession(t, addrs, "bridge:pw"))
	t.Cleanup(func() { clearSourcesRoot(t, authSession(t, addrs, "bridge:pw")) })
	if err := elect.MakeSharedPath(session(t, addrs), bridge.SourcesRoot); err != nil {
		t.Fatal(err)
	}
	var log logLines
	source := "open-" + strings.ReplaceAll(strings.TrimPrefix(groupPath(t), "/"), "/", "-")
	start(t, bridge.Config{Servers: addrs, Discover: []string{groupPath(t)}, Source: source, SessionTimeout: 2 * time.Second, DigestAuth: "bridge:pw",
		Sinks: []publish.Sink{jsSink(t, url)}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	eventually(t, 15*time.Second, "the warning of an open sources root", func() bool {
		return strings.Contains(log.String(), bridge.SourcesRoot+" lets anyone create there") && strings.Contains(log.String(), "setAcl "+bridge.SourcesRoot+" digest:bridge:")
	})
}
