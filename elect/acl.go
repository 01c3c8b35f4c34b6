package elect

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// ParseACL reads an ACL in the notation of ZooKeeper's own shell
// (setAcl): comma-separated scheme:id:perms entries, where perms are
// letters of cdrwa (create, delete, read, write, admin). The id may itself
// hold colons, as digest ids do (digest:user:hash:cdrwa). Examples:
//
//	auth::cdrwa,world:anyone:r     every identity of the creating session
//	world:anyone:cdrwa             open to all
//	digest:ops:7x5rG...=:cdrwa,world:anyone:r
//	ip:10.0.0.0/8:cdrwa
//	x509:CN=host-a,O=Example:cdrwa,x509:CN=host-b,O=Example:cdrwa,world:anyone:r
//
// An x509 id is a certificate's subject as ZooKeeper's x509 provider names
// it (RFC 2253), commas and all.
//
// A set that no one may read is refused: herald's observers and every
// other recipe must read and watch the nodes.
func ParseACL(s string) ([]zk.ACL, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("elect: empty ACL; give scheme:id:perms entries, e.g. auth::cdrwa,world:anyone:r")
	}
	var out []zk.ACL
	var readable bool
	for _, entry := range aclEntries(s) {
		scheme, rest, ok := strings.Cut(entry, ":")
		i := strings.LastIndex(rest, ":")
		if !ok || i < 0 || scheme == "" {
			return nil, fmt.Errorf("elect: ACL entry %q: want scheme:id:perms, e.g. world:anyone:r", entry)
		}
		id, letters := rest[:i], rest[i+1:]
		if !aclScheme(scheme) {
			return nil, fmt.Errorf("elect: ACL entry %q: unknown scheme %q (world, auth, digest, ip, x509 or sasl)", entry, scheme)
		}
		if scheme == "world" && id != "anyone" {
			return nil, fmt.Errorf("elect: ACL entry %q: the world scheme's only id is anyone", entry)
		}
		if scheme != "world" && scheme != "auth" && id == "" {
			return nil, fmt.Errorf("elect: ACL entry %q: scheme %s needs an id", entry, scheme)
		}
		var perms int32
		for _, c := range letters {
			switch c {
			case 'c':
				perms |= zk.PermCreate
			case 'd':
				perms |= zk.PermDelete
			case 'r':
				perms |= zk.PermRead
			case 'w':
				perms |= zk.PermWrite
			case 'a':
				perms |= zk.PermAdmin
			default:
				return nil, fmt.Errorf("elect: ACL entry %q: permission %q is not one of c, d, r, w, a", entry, c)
			}
		}
		if perms == 0 {
			return nil, fmt.Errorf("elect: ACL entry %q grants nothing; give permissions from cdrwa", entry)
		}
		readable = readable || perms&zk.PermRead != 0
		out = append(out, zk.ACL{Scheme: scheme, ID: id, Perms: perms})
	}
	if !readable {
		return nil, fmt.Errorf("elect: ACL %q lets no one read; add at least world:anyone:r or auth::r, since every participant and observer must read and watch the nodes", s)
	}
	return out, nil
}

// aclEntries splits an ACL list on its commas, except those inside an
// x509 id: a certificate subject as ZooKeeper names it (RFC 2253) holds
// commas between its parts, "x509:CN=herald,O=Example:cdrwa". A piece that
// does not start with a scheme continues the x509 entry before it.
func aclEntries(s string) []string {
	var out []string
	for _, piece := range strings.Split(s, ",") {
		scheme, _, _ := strings.Cut(strings.TrimSpace(piece), ":")
		if n := len(out); n > 0 && !aclScheme(scheme) && strings.HasPrefix(strings.TrimSpace(out[n-1]), "x509:") {
			out[n-1] += "," + piece // as written: `O=Example\, Inc.` keeps its space
			continue
		}
		out = append(out, piece)
	}
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

func aclScheme(s string) bool {
	switch s {
	case "world", "auth", "digest", "ip", "x509", "sasl", "super":
		return true
	}
	return false
}

// FormatACL writes acl in ParseACL's notation.
func FormatACL(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		var b strings.Builder
		for _, p := range []struct {
			bit int32
			c   byte
		}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
			if a.Perms&p.bit != 0 {
				b.WriteByte(p.c)
			}
		}
		parts[i] = a.Scheme + ":" + a.ID + ":" + b.String()
	}
	return strings.Join(parts, ",")
}
