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

// TestRootParentMadeWithCredentialsAdmitsNoOneElse: a copy with
// credentials made its session root closed, but the shared path above it
// (/herald, above /herald/sessions and /herald/sources) open to anyone's
// create: a client without credentials could make the other root first,
// with an ACL of its own. herald makes that path closed too, READ left
// to all.
func TestRootParentMadeWithCredentialsAdmitsNoOneElse(t *testing.T) {
	addrs := sharedAddrs(t)
	parent := groupPath(t) + "-herald"
	owner := rootMadeBy(t, addrs, "owner", parent+"/sessions")
	anyone := session(t, addrs)
	if _, err := anyone.Conn().Create(parent+"/sources", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a client without credentials making a root beside herald's: %v; want ErrNoAuth", err)
	}
	if _, _, err := anyone.Conn().Children(parent); err != nil {
		t.Errorf("a client without credentials listing %s: %v; want it readable", parent, err)
	}
	if err := elect.MakeRoot(owner, parent+"/sources"); err != nil {
		t.Errorf("the owner making its other root there: %v", err)
	}
	// Another identity is refused there, and told where and what to do.
	other := session(t, addrs, elect.WithDigestAuth("other:pw"))
	err := elect.MakeRoot(other, parent+"/other")
	if !errors.Is(err, zk.ErrNoAuth) || !strings.Contains(err.Error(), parent+" does not let this identity create there") || !strings.Contains(err.Error(), "--zk-acl") {
		t.Errorf("another identity making a root there: %v; want ErrNoAuth naming %s and --zk-acl", err, parent)
	}
}

// rootMadeBy is a session of the digest identity who:pw that made root
// with its credentials, closed to others.
func rootMadeBy(t *testing.T, addrs []string, who, root string) *elect.Session {
	t.Helper()
	s := session(t, addrs, elect.WithDigestAuth(who+":pw"))
	if err := elect.MakeRoot(s, root); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenRootParentIsWarnedOf: the path above a closed root, made open
// by someone else first (or an older herald), went unwarned. A copy with
// credentials now names it and the setAcl that closes it, which, run as
// printed by the client that made it, shuts that client out and keeps
// the copy in.
func TestOpenRootParentIsWarnedOf(t *testing.T) {
	addrs := sharedAddrs(t)
	parent := groupPath(t) + "-herald"
	anyone := session(t, addrs)
	if err := elect.MakeSharedPath(anyone, parent); err != nil { // a stranger's, open to all
		t.Fatal(err)
	}
	owner := rootMadeBy(t, addrs, "owner", parent+"/sessions")
	werr := elect.CheckRoot(ctxT(t, 10*time.Second), owner, parent+"/sessions")
	if werr == nil {
		t.Fatal("no warning of the open path above the root")
	}
	m := regexp.MustCompile(`setAcl ` + regexp.QuoteMeta(parent) + ` (\S+)`).FindStringSubmatch(werr.Error())
	if m == nil {
		t.Fatalf("the warning names no setAcl for %s: %v", parent, werr)
	}
	if _, err := anyone.Conn().SetACL(parent, zkCliACL(m[1]), -1); err != nil {
		t.Fatalf("setAcl %s %s, as printed: %v", parent, m[1], err)
	}
	if _, err := anyone.Conn().Create(parent+"/sources", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a client without credentials creating there after the setAcl: %v; want ErrNoAuth", err)
	}
	if err := elect.MakeRoot(owner, parent+"/sources"); err != nil {
		t.Errorf("the copy making its other root there after the setAcl: %v", err)
	}
}

// TestOpenRootSetAclKeepsTheOtherIdentities: the warning of an open root
// shared by two identities printed a setAcl naming only the warned
// copy's: run as printed, it locked the other out. It keeps the entries
// already there, everyone's cut to READ; where the root hides the
// other's hash from the warned copy (user:x), it names the entries to
// add to the ACL its maker sees.
func TestOpenRootSetAclKeepsTheOtherIdentities(t *testing.T) {
	alphaACL, betaACL := zk.DigestACL(zk.PermAll, "alpha", "pw")[0], zk.DigestACL(zk.PermAll, "beta", "pw")[0]
	open := zk.ACL{Perms: zk.PermCreate | zk.PermRead, Scheme: "world", ID: "anyone"}
	t.Run("shown", func(t *testing.T) { followOpenRootAdvice(t, []zk.ACL{alphaACL, betaACL, open}) })
	t.Run("hidden", func(t *testing.T) { followOpenRootAdvice(t, []zk.ACL{alphaACL, open}) })
}

// followOpenRootAdvice has alpha make a root with ACL acl, beta warned of
// it, does what the warning says, and checks that both may create there
// and a client without credentials may not.
func followOpenRootAdvice(t *testing.T, acl []zk.ACL) {
	addrs := sharedAddrs(t)
	root := groupPath(t) + "-root"
	alpha := session(t, addrs, elect.WithDigestAuth("alpha:pw"))
	beta := session(t, addrs, elect.WithDigestAuth("beta:pw"))
	if _, err := alpha.Conn().Create(root, nil, 0, acl); err != nil { // open, as an older herald made it
		t.Fatal(err)
	}
	werr := elect.CheckRoot(ctxT(t, 10*time.Second), beta, root)
	if werr == nil {
		t.Fatal("no warning of a root open to all")
	}
	set := aclAsTold(t, "warning", werr.Error(), root, func() []zk.ACL {
		set, _, _ := alpha.Conn().GetACL(root) // as its maker sees it, everyone's cut to READ
		for i := range set {
			if set[i].Scheme == "world" {
				set[i].Perms &= zk.PermRead
			}
		}
		return set
	})
	if _, err := alpha.Conn().SetACL(root, set, -1); err != nil {
		t.Fatalf("setting %s as told (%v): %v", elect.FormatACL(set), werr, err)
	}
	createsUnder(t, root, fmt.Sprintf("doing what the warning said (%v)", werr), map[string]*elect.Session{"alpha": alpha, "beta": beta})
	if _, err := session(t, addrs).Conn().Create(root+"/m", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a client without credentials creating under the root after it: %v; want ErrNoAuth", err)
	}
}

// TestRootRefusedNamesX509EntriesOneALine: a refused copy is told which
// entries to add to the root's ACL, joined by commas; an x509 subject
// holds commas too (CN=host-a,O=Example), and zkCli's setAcl, which
// splits at every comma with no quoting or escape, cannot take it at
// all. Such entries are named one a line, saying so.
func TestRootRefusedNamesX509EntriesOneALine(t *testing.T) {
	addrs := sharedAddrs(t)
	root := groupPath(t) + "-root"
	rootMadeBy(t, addrs, "maker", root)
	acl, err := elect.ParseACL("x509:CN=host-a,O=Example:cdrwa,x509:CN=host-b,O=Example:cdrwa,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	acl = append(acl, zk.DigestACL(zk.PermAll, "other", "pw")...)
	other := session(t, addrs, elect.WithDigestAuth("other:pw"), elect.WithDefaultACL(acl))
	msg := elect.RootRefused(ctxT(t, 10*time.Second), other, root, zk.ErrNoAuth).Error()
	for _, m := range regexp.MustCompile(`add (\S+) to the ACL`).FindAllStringSubmatch(msg, -1) {
		if want, _ := elect.ParseACL(m[1]); elect.FormatACL(zkCliACL(m[1])) != elect.FormatACL(want) {
			t.Errorf("told to add %s, which zkCli reads as %s: %s", m[1], elect.FormatACL(zkCliACL(m[1])), msg)
		}
	}
	for _, e := range []string{"x509:CN=host-a,O=Example:cdr", "x509:CN=host-b,O=Example:cdr"} {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(e) + `\s*$`).MatchString(msg) {
			t.Errorf("the entry %s is not on a line of its own: %s", e, msg)
		}
	}
	if !strings.Contains(msg, "zkCli") {
		t.Errorf("the error does not say zkCli cannot take them: %s", msg)
	}
}
