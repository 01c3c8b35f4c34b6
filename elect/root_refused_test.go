package elect_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

// zkCliACL reads an ACL as ZooKeeper's shell (zkCli.sh setAcl) does:
// entries split at every comma, the id between the first and the last
// colon, entries of another form skipped.
func zkCliACL(s string) []zk.ACL {
	var out []zk.ACL
	for _, e := range strings.Split(s, ",") {
		first, last := strings.Index(e, ":"), strings.LastIndex(e, ":")
		if first < 0 || first == last {
			continue
		}
		var perms int32
		for _, c := range e[last+1:] {
			perms |= map[rune]int32{'c': zk.PermCreate, 'd': zk.PermDelete, 'r': zk.PermRead, 'w': zk.PermWrite, 'a': zk.PermAdmin}[c]
		}
		out = append(out, zk.ACL{Scheme: e[:first], ID: e[first+1 : last], Perms: perms})
	}
	return out
}

// TestRootRefusedSetAclKeepsItsMaker: a bridge the sources root refused
// printed the setAcl that would admit it beside the root's identities,
// built from the ACL it read; but ZooKeeper hides a digest id's hash
// (user:x) from a client that may not administer the node, so the
// setAcl, run as printed by the root's maker, replaced that identity's
// hash with x and locked it out of its own root. And a copy whose ACL
// names its identity as auth:: (--zk-acl auth::cdrwa,world:anyone:r)
// was told to add nothing. Following what the error says must admit the
// refused identity and keep the maker.
func TestRootRefusedSetAclKeepsItsMaker(t *testing.T) {
	authACL, err := elect.ParseACL("auth::cdrwa,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []elect.SessionOption
	}{
		{"digest", nil},
		{"auth", []elect.SessionOption{elect.WithDefaultACL(authACL)}},
	} {
		t.Run(tc.name, func(t *testing.T) { followRootRefused(t, tc.opts...) })
	}
}

// followRootRefused has a session of another identity (opts) refused by
// a root that maker:pw made, does what RootRefused says, and checks that
// both may create there.
func followRootRefused(t *testing.T, opts ...elect.SessionOption) {
	addrs := sharedAddrs(t)
	root := groupPath(t) + "-root"
	maker := rootMadeBy(t, addrs, "maker", root)
	other := session(t, addrs, append([]elect.SessionOption{elect.WithDigestAuth("other:pw")}, opts...)...)
	_, err := other.Conn().Create(root+"/claim", nil, zk.FlagEphemeral, other.DefaultACL())
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("another identity creating under the root: %v; want ErrNoAuth", err)
	}
	msg := elect.RootRefused(ctxT(t, 10*time.Second), other, root, err).Error()
	// As told: the maker's ACL as getAcl shows it to the maker, and the
	// entries named added.
	acl := aclAsTold(t, "error", msg, root, func() []zk.ACL {
		got, _, err := maker.Conn().GetACL(root)
		if err != nil {
			t.Fatal(err)
		}
		return got
	})
	if _, err := maker.Conn().SetACL(root, acl, -1); err != nil {
		t.Fatalf("the maker setting %s as told (%s): %v", elect.FormatACL(acl), msg, err)
	}
	createsUnder(t, root, fmt.Sprintf("the setAcl the error printed (%s)", msg), map[string]*elect.Session{"maker": maker, "other": other})
}

// aclAsTold is the ACL that msg, a refused copy's warning or error
// (what), tells root's maker to set: the entries it names added to the
// ACL the maker sees (shown), or the whole ACL of the setAcl it prints.
func aclAsTold(t *testing.T, what, msg, root string, shown func() []zk.ACL) []zk.ACL {
	t.Helper()
	if m := regexp.MustCompile(`add (\S+) to the ACL`).FindStringSubmatch(msg); m != nil {
		return append(shown(), zkCliACL(m[1])...)
	}
	if m := regexp.MustCompile(`setAcl ` + regexp.QuoteMeta(root) + ` (\S+)`).FindStringSubmatch(msg); m != nil {
		return zkCliACL(m[1])
	}
	t.Fatalf("the %s names no setAcl: %s", what, msg)
	return nil
}

// createsUnder has each of sessions create a node under root, which it
// may once the maker did what the refusal said (after).
func createsUnder(t *testing.T, root, after string, sessions map[string]*elect.Session) {
	t.Helper()
	for who, s := range sessions {
		if _, err := s.Conn().Create(root+"/n-"+who, nil, zk.FlagEphemeral, s.DefaultACL()); err != nil {
			t.Errorf("%s creating under the root after %s: %v", who, after, err)
		}
	}
}

// TestOpenRootSetAclOfX509Identities: a copy whose --zk-acl names x509
// identities warned of an open root with a setAcl naming them; but
// zkCli's setAcl splits its ACL at every comma, an x509 subject's too,
// skips the pieces that are no scheme:id:perms, and sets the rest. Run
// as printed, it left the root readable by all and creatable by no
// one: every copy lost its session node and run note. A setAcl the
// warning prints must mean to the shell what it means to herald.
func TestOpenRootSetAclOfX509Identities(t *testing.T) {
	addrs := sharedAddrs(t)
	root := groupPath(t) + "-root"
	s := session(t, addrs)
	if err := elect.MakeSharedPath(s, root); err != nil { // open, as an older herald made it
		t.Fatal(err)
	}
	acl, err := elect.ParseACL("x509:CN=host-a,O=Example:cdrwa,x509:CN=host-b,O=Example:cdrwa,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	werr := elect.CheckRootFor(ctxT(t, 10*time.Second), s, root, acl)
	if werr == nil {
		t.Fatal("no warning of a root open to all")
	}
	msg := werr.Error()
	for _, m := range regexp.MustCompile(`setAcl `+regexp.QuoteMeta(root)+` (\S+)`).FindAllStringSubmatch(msg, -1) {
		want, err := elect.ParseACL(m[1])
		if err != nil {
			t.Fatalf("the printed ACL %s: %v", m[1], err)
		}
		if got := zkCliACL(m[1]); elect.FormatACL(got) != elect.FormatACL(want) {
			t.Errorf("the printed setAcl sets %s in zkCli, not %s: %s", elect.FormatACL(got), elect.FormatACL(want), msg)
		}
	}
	if !strings.Contains(msg, "x509:CN=host-a,O=Example:cdrw") {
		t.Errorf("the warning does not name the ACL to set: %s", msg)
	}
}

// TestOpenRootSetAclOfAnAuthACL: a copy whose --zk-acl names its
// identity as auth:: warned of an open root with `setAcl ROOT
// auth::cdrwa,...`, which names the identities of whoever runs it: the
// operator's zkCli, without herald's credentials, was refused it as an
// invalid ACL. The warning names the copy's digest identity instead.
func TestOpenRootSetAclOfAnAuthACL(t *testing.T) {
	addrs := sharedAddrs(t)
	root := groupPath(t) + "-root"
	anyone := session(t, addrs)
	if err := elect.MakeSharedPath(anyone, root); err != nil { // open, as an older herald made it
		t.Fatal(err)
	}
	acl, err := elect.ParseACL("auth::cdrwa,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	owner := session(t, addrs, elect.WithDigestAuth("owner:pw"), elect.WithDefaultACL(acl))
	werr := elect.CheckRoot(ctxT(t, 10*time.Second), owner, root)
	if werr == nil {
		t.Fatal("no warning of a root open to all")
	}
	m := regexp.MustCompile(`setAcl ` + regexp.QuoteMeta(root) + ` (\S+)`).FindStringSubmatch(werr.Error())
	if m == nil {
		t.Fatalf("the warning names no setAcl: %v", werr)
	}
	if _, err := anyone.Conn().SetACL(root, zkCliACL(m[1]), -1); err != nil {
		t.Fatalf("setAcl %s %s, as printed, from a client without herald's credentials: %v", root, m[1], err)
	}
	if _, err := owner.Conn().Create(root+"/n", nil, zk.FlagEphemeral, owner.DefaultACL()); err != nil {
		t.Errorf("the copy creating under the root after the setAcl: %v", err)
	}
	if _, err := anyone.Conn().Create(root+"/m", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a client without credentials creating under the root after the setAcl: %v; want ErrNoAuth", err)
	}
}
