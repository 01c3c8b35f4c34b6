package elect_test

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

func TestParseACL(t *testing.T) {
	good := map[string][]zk.ACL{
		"auth::cdrwa,world:anyone:r":                    {{Scheme: "auth", ID: "", Perms: zk.PermAll}, {Scheme: "world", ID: "anyone", Perms: zk.PermRead}},
		"digest:ops:bK2vrtycP3OyZ7p+aGPDYWwk0ZA=:cdrwa": {{Scheme: "digest", ID: "ops:bK2vrtycP3OyZ7p+aGPDYWwk0ZA=", Perms: zk.PermAll}},
		" ip:10.0.0.0/8:rw ":                            {{Scheme: "ip", ID: "10.0.0.0/8", Perms: zk.PermRead | zk.PermWrite}},
		// A certificate subject keeps its commas (RFC 2253, as ZooKeeper's
		// x509 provider names it).
		`x509:CN=host-a,O=Example\, Inc.:cdrwa, x509:CN=host-b:cdrwa,world:anyone:r`: {
			{Scheme: "x509", ID: `CN=host-a,O=Example\, Inc.`, Perms: zk.PermAll},
			{Scheme: "x509", ID: "CN=host-b", Perms: zk.PermAll},
			{Scheme: "world", ID: "anyone", Perms: zk.PermRead},
		},
	}
	for in, want := range good {
		got, err := elect.ParseACL(in)
		if err != nil {
			t.Errorf("ParseACL(%q): %v", in, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("ParseACL(%q) = %+v; want %+v", in, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("ParseACL(%q)[%d] = %+v; want %+v", in, i, got[i], want[i])
			}
		}
		if back, err := elect.ParseACL(elect.FormatACL(got)); err != nil || len(back) != len(got) {
			t.Errorf("FormatACL(%+v) = %q does not parse back: %v", got, elect.FormatACL(got), err)
		}
	}
	bad := map[string]string{
		"":                    "empty",
		"world:anyone":        "scheme:id:perms",
		"world:someone:r":     "anyone",
		"kerberos:x:r":        "unknown scheme",
		"digest::r":           "needs an id",
		"world:anyone:rx":     "not one of",
		"world:anyone:":       "grants nothing",
		"ip:127.0.0.1:cdwa":   "no one read",
		"world:anyone:r,oops": "scheme:id:perms",
		"x509:CN=a,O=b":       "scheme:id:perms",
		// A password where ZooKeeper wants its hash, or a hash cut short.
		"digest:alice:secret:cdrwa,world:anyone:r":  "looks like a plaintext password: give user:BASE64(SHA1(user:password))",
		"digest:alice:cdrwa":                        "no hash",
		"digest:alice:pw":                           "no perms",
		"digest:alice:bK2vrtycP3OyZ7p+aGPDYWwk0ZA=": "no perms",
		"digest:ops:Ab9+/x=:cdrwa":                  "looks like a plaintext password",
	}
	for in, want := range bad {
		if _, err := elect.ParseACL(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseACL(%q) = %v; want an error containing %q", in, err, want)
		}
	}
}

// A digest entry holding a password is refused without repeating the
// password.
func TestParseACLDoesNotEchoAPassword(t *testing.T) {
	// The perms forgotten, the scheme misspelt or capitalised, a bad
	// permission: each of these repeated the password before.
	for _, acl := range []string{
		"digest:alice:hunter2:cdrwa,world:anyone:r",
		"digest:alice:hunter2",
		"Digest:alice:hunter2:cdrwa",
		"digst:alice:hunter2:cdrwa",
		"digest :alice:hunter2:cdrwa",
		"digest:alice:bK2vrtycP3OyZ7p+aGPDYWwk0ZA=:hunter2",
	} {
		_, err := elect.ParseACL(acl)
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "hunter") {
			t.Errorf("ParseACL(%q): %v; want a refusal that does not repeat the password", acl, err)
		}
	}
	// auth:USER:PASSWORD:perms, as ZooKeeper's shell lets one write it
	// (it ignores the id): the errors about it quoted the password.
	for _, acl := range []string{"auth:alice:hunter2:rx", "auth:alice:hunter2:w", "auth:alice:hunter2:"} {
		if _, err := elect.ParseACL(acl); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseACL(%q): %v; want a refusal that does not repeat the password", acl, err)
		}
	}
	acl, err := elect.ParseACL("auth:alice:hunter2:r,world:anyone:r")
	if err != nil {
		t.Fatal(err)
	}
	if err := elect.CheckOwnAccess(acl, "alice:hunter2", false); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("CheckOwnAccess(auth:alice:hunter2:r,...): %v; want a refusal that does not repeat the password", err)
	}
}

// TestCheckOwnAccess: an ACL that gives the session's own identity no
// create and delete is refused where that can be told; one that may name
// the session (an address, a certificate subject) is let through.
func TestCheckOwnAccess(t *testing.T) {
	alice := zk.DigestACL(zk.PermAll, "alice", "secret")[0].ID
	bob := zk.DigestACL(zk.PermAll, "bob", "other")[0].ID
	for _, c := range []struct {
		acl    string
		digest string
		cert   bool
		want   string // "" for accepted
	}{
		{"world:anyone:cdrwa", "", false, ""},
		{"world:anyone:r", "", false, "does not let this session create, write and delete"},
		{"world:anyone:r", "alice:secret", false, "digest:alice:BASE64(SHA1(alice:password)):cdrwa"},
		{"world:anyone:rw", "", false, ""},              // herald's parents give writers create and delete
		{"world:anyone:cdr", "", false, "grants write"}, // a checkpoint written once could not be written again
		{"world:anyone:cdra", "", false, "grants write"},
		{"auth::cdrwa,world:anyone:r", "alice:secret", false, ""},
		{"auth::cdrwa,world:anyone:r", "", true, ""},
		{"auth::cdrwa,world:anyone:r", "", false, "no identity"},
		{"auth::r", "alice:secret", false, "does not let this session"},
		{"digest:" + alice + ":cdrwa,world:anyone:r", "alice:secret", false, ""},
		{"digest:" + alice + ":cdrwa,world:anyone:r", "alice:wrong", false, "does not let this session"},
		{"digest:" + bob + ":cdrwa,world:anyone:r", "alice:secret", false, "does not let this session"},
		{"digest:" + alice + ":cdrwa,world:anyone:r", "", false, "world:anyone:cdrwa"},
		{"ip:10.0.0.0/8:cdrwa,world:anyone:r", "", false, ""},
		{"x509:CN=host-a:cdrwa,world:anyone:r", "", true, ""},
		{"x509:CN=host-a:cdrwa,world:anyone:r", "", false, "does not let this session"},
	} {
		acl, err := elect.ParseACL(c.acl)
		if err != nil {
			t.Fatalf("ParseACL(%q): %v", c.acl, err)
		}
		err = elect.CheckOwnAccess(acl, c.digest, c.cert)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckOwnAccess(%s, %q, cert %v): %v; want it accepted", c.acl, c.digest, c.cert, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckOwnAccess(%s, %q, cert %v): %v; want an error saying %q", c.acl, c.digest, c.cert, err, c.want)
		}
		if err != nil && c.digest != "" && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckOwnAccess(%s, %q): the error repeats the password: %v", c.acl, c.digest, err)
		}
	}
}
