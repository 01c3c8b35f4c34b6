package elect

import (
	"encoding/base64"
	"fmt"
	"strconv"
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
			return nil, fmt.Errorf("elect: ACL entry %q: want scheme:id:perms, e.g. world:anyone:r", shownEntry(entry))
		}
		id, letters := rest[:i], rest[i+1:]
		if !aclScheme(scheme) {
			return nil, fmt.Errorf("elect: ACL entry %q: unknown scheme %q (world, auth, digest, ip, x509 or sasl)", shownEntry(entry), scheme)
		}
		if scheme == "world" && id != "anyone" {
			return nil, fmt.Errorf("elect: ACL entry %q: the world scheme's only id is anyone", entry)
		}
		if scheme != "world" && scheme != "auth" && id == "" {
			return nil, fmt.Errorf("elect: ACL entry %q: scheme %s needs an id", shownEntry(entry), scheme)
		}
		if scheme == "digest" && !digestID(id) {
			// The entry is not repeated: it may hold a password.
			user, _, _ := strings.Cut(id, ":")
			switch {
			case !strings.Contains(id, ":") && strings.Trim(letters, "cdrwa") == "":
				return nil, fmt.Errorf("elect: ACL entry digest:%s:...: no hash: want digest:USER:HASH:PERMS, the hash BASE64(SHA1(user:password)), e.g. digest:%s:<hash>:cdrwa", user, user)
			case !strings.Contains(id, ":"):
				// digest:USER:SOMETHING, perms forgotten: SOMETHING, a
				// hash or a password, is not repeated.
				return nil, fmt.Errorf("elect: ACL entry digest:%s:...: no perms: want digest:USER:HASH:PERMS, the hash BASE64(SHA1(user:password)), e.g. digest:%s:<hash>:cdrwa", user, user)
			}
			return nil, fmt.Errorf("elect: ACL entry digest:%s:...: the digest id looks like a plaintext password: give user:BASE64(SHA1(user:password)), the hash ZooKeeper compares, e.g. digest:%s:<hash>:cdrwa", user, user)
		}
		if err := checkIPID(scheme, id); err != nil {
			return nil, err
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
				return nil, fmt.Errorf("elect: ACL entry %q: permission %q is not one of c, d, r, w, a", shownEntry(entry), c)
			}
		}
		if perms == 0 {
			return nil, fmt.Errorf("elect: ACL entry %q grants nothing; give permissions from cdrwa", shownEntry(entry))
		}
		readable = readable || perms&zk.PermRead != 0
		out = append(out, zk.ACL{Scheme: scheme, ID: id, Perms: perms})
	}
	if !readable {
		return nil, fmt.Errorf("elect: ACL %q lets no one read; add at least world:anyone:r or auth::r, since every participant and observer must read and watch the nodes", shownACL(out))
	}
	return out, nil
}

// shownEntry is an ACL entry as an error may show it: a digest entry, or
// one whose scheme is unknown (a misspelt digest: Digest, digst), holds a
// hash or perhaps a plaintext password after its user, which is masked;
// so does an auth entry with an id (auth:user:password:cdrwa, which
// ZooKeeper's shell takes, ignoring the id).
func shownEntry(entry string) string {
	scheme, rest, ok := strings.Cut(entry, ":")
	switch {
	case !ok:
		return "***"
	case scheme == "world" || scheme == "ip" || scheme == "x509" || scheme == "sasl",
		scheme == "auth" && strings.HasPrefix(rest, ":"):
		return entry
	}
	user, _, _ := strings.Cut(rest, ":")
	return scheme + ":" + user + ":***"
}

// shownACL is FormatACL for an error: an auth entry's id, which ZooKeeper
// ignores, may hold user:password, and is masked after the user.
func shownACL(acl []zk.ACL) string {
	shown := make([]zk.ACL, len(acl))
	for i, a := range acl {
		if a.Scheme == "auth" && a.ID != "" {
			user, _, _ := strings.Cut(a.ID, ":")
			a.ID = user + ":***"
		}
		shown[i] = a
	}
	return FormatACL(shown)
}

// digestID tells whether id is a digest identity as ZooKeeper stores it:
// user:hash, the hash the base64 of a SHA-1 (20 bytes, 28 characters).
func digestID(id string) bool {
	i := strings.LastIndex(id, ":")
	if i <= 0 {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(id[i+1:])
	return err == nil && len(b) == 20
}

// CheckOwnAccess refuses an ACL under which the session it is given to
// could not use the nodes herald creates with it, where that can be told
// from the ACL and the session's credentials: digest is WithDigestAuth's
// "user:password" ("" for none), cert whether the session presents a
// client certificate. herald gives the parents it creates create, read
// and delete for every entry that may write, delete or administer, and
// herald writes nodes it created (the leader's office record, the
// checkpoint, a lock's release mark), so an entry serves the session when
// it grants write to an identity the session has: world:anyone,
// auth: (every identity of the session), or a digest entry whose hash is
// that of the credentials. An ip entry, or an x509 one when the session
// presents a certificate, may name the session or not, which cannot be
// told here: with one of them that grants enough, the ACL is let
// through. A sasl entry never names it (herald's client has no SASL).
//
// A refused ACL would leave parents behind that the session cannot
// create its nodes in or delete, and that later runs with the right ACL
// could not use either.
func CheckOwnAccess(acl []zk.ACL, digest string, cert bool) error {
	// Write: the parents then get create, read and delete too; without
	// it a checkpoint or office record written once cannot be written
	// again.
	enough := func(p int32) bool { return p&zk.PermWrite != 0 }
	var mine string
	if user, pw, ok := strings.Cut(digest, ":"); ok {
		mine = zk.DigestACL(zk.PermAll, user, pw)[0].ID
	}
	for _, a := range acl {
		switch a.Scheme {
		case "auth":
			if digest == "" && !cert {
				return fmt.Errorf("elect: the ACL names auth:: but the session has no identity; give digest credentials or a TLS client certificate, or use world:anyone")
			}
			if enough(a.Perms) {
				return nil
			}
		case "world":
			if enough(a.Perms) {
				return nil
			}
		case "digest":
			if mine != "" && a.ID == mine && enough(a.Perms) {
				return nil
			}
		case "x509":
			if cert && enough(a.Perms) {
				return nil // may be this certificate's subject
			}
		case "sasl":
			// herald's client cannot log in with SASL.
		default:
			if enough(a.Perms) {
				return nil // an address may be this session's: not to be told here
			}
		}
	}
	fix := "world:anyone:cdrwa"
	if mine != "" {
		user, _, _ := strings.Cut(digest, ":")
		fix = "digest:" + user + ":BASE64(SHA1(" + user + ":password)):cdrwa naming the credentials given, or auth::cdrwa"
	} else if cert {
		fix = "auth::cdrwa (the client certificate's subject) or world:anyone:cdrwa"
	}
	return fmt.Errorf("elect: ACL %s does not let this session create, write and delete the nodes herald creates with it (no entry grants write, which herald's parents add create and delete to, to an identity the session has); herald would leave parents behind that no run could use: add an entry such as %s", shownACL(acl), fix)
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
	case "world", "auth", "digest", "ip", "x509", "sasl":
		return true
	}
	return false
}

// checkIPID refuses an ip entry whose id no ZooKeeper takes: not an
// address (a host name, 10.0.0.300, 10.1) or a prefix longer than the
// address. ZooKeeper refuses such an entry only at the first create, as
// "invalid ACL specified", which names neither the entry nor the flag.
// An IPv6 address written as ZooKeeper reads one passes: newer servers
// take it.
func checkIPID(scheme, id string) error {
	if scheme != "ip" {
		return nil
	}
	addr, bits, masked := strings.Cut(id, "/")
	size := 0
	if strings.Contains(addr, ":") && hexGroups(addr) {
		size = 128
	} else if dottedQuad(addr) {
		size = 32
	}
	if size == 0 {
		hint := "not a host name"
		if strings.Contains(addr, ":") && strings.Contains(addr, ".") {
			hint = "an IPv6 address in hex groups only: no ZooKeeper reads an IPv4 tail, so give an IPv4 client's address as 10.0.0.1"
		}
		return fmt.Errorf("elect: ACL entry ip:%s: %q is not an IP address (ZooKeeper's ip scheme takes an address, or address/bits, %s)", id, addr, hint)
	}
	if n, err := strconv.Atoi(bits); masked && (err != nil || n < 0 || n > size) {
		return fmt.Errorf("elect: ACL entry ip:%s: the prefix length %q is not a number from 0 to %d", id, bits, size)
	}
	return nil
}

// hexGroups reports whether s is an IPv6 address as ZooKeeper reads one
// (IPAuthenticationProvider.parseV6addr): eight groups of one to four hex
// digits, or fewer around one "::". Unlike net.ParseIP it takes no IPv4
// tail (::ffff:10.0.0.1), which every ZooKeeper refuses.
func hexGroups(s string) bool {
	var groups []string
	switch halves := strings.Split(s, "::"); len(halves) {
	case 1:
		if groups = strings.Split(s, ":"); len(groups) != 8 {
			return false
		}
	case 2:
		for _, h := range halves {
			if h != "" {
				groups = append(groups, strings.Split(h, ":")...)
			}
		}
		if len(groups) >= 8 {
			return false
		}
	default:
		return false
	}
	for _, g := range groups {
		if g == "" || len(g) > 4 || strings.Trim(g, "0123456789abcdefABCDEF") != "" {
			return false
		}
	}
	return true
}

// dottedQuad reports whether s is an IPv4 address as ZooKeeper reads one:
// four decimal numbers up to 255 (leading zeros allowed, unlike
// net.ParseIP).
func dottedQuad(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 || strings.TrimLeft(p, "0123456789") != "" {
			return false
		}
	}
	return true
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
