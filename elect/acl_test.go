package elect_test

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
)

func TestParseACL(t *testing.T) {
	good := map[string][]zk.ACL{
		"auth::cdrwa,world:anyone:r": {{Scheme: "auth", ID: "", Perms: zk.PermAll}, {Scheme: "world", ID: "anyone", Perms: zk.PermRead}},
		"digest:ops:Ab9+/x=:cdrwa":   {{Scheme: "digest", ID: "ops:Ab9+/x=", Perms: zk.PermAll}},
		" ip:10.0.0.0/8:rw ":         {{Scheme: "ip", ID: "10.0.0.0/8", Perms: zk.PermRead | zk.PermWrite}},
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
	}
	for in, want := range bad {
		if _, err := elect.ParseACL(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseACL(%q) = %v; want an error containing %q", in, err, want)
		}
	}
}
