package publish

import (
	"fmt"
	"net/url"
	"strings"
)

// CloudEvents 1.0 requires "source" to be a non-empty URI-reference
// (RFC 3986, section 4.1). herald's sources are relative references such
// as "herald-run/host-1", "herald-lock/job-7" or "herald-bridge@host-1".

// Source returns prefix followed by name, with every byte of name that may
// not stand as is in one URI path segment percent-encoded (RFC 3986 pchar,
// with ':' and '/' encoded too, so name stays one segment wherever it
// lands, including the first). prefix is written as is: give one that is a
// valid URI-reference itself, e.g. "herald-run/" or "herald-bridge@".
// An empty name becomes "unknown".
//
//	Source("herald-run/", "host with space") == "herald-run/host%20with%20space"
func Source(prefix, name string) string {
	if name == "" {
		name = "unknown"
	}
	var b strings.Builder
	b.Grow(len(prefix) + len(name))
	b.WriteString(prefix)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isUnreserved(c) || isSubDelim(c) || c == '@' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// ValidateSource reports whether s can be a CloudEvents source: a
// non-empty URI-reference per RFC 3986. net/url alone is too lenient (it
// takes spaces, for one), so every byte is checked against the RFC's
// character set, every '%' must start a %XX escape, and '[' ']' may only
// enclose an IP literal host. The error says what is wrong and how to fix it.
func ValidateSource(s string) error {
	const hint = `give a URI-reference such as "herald-bridge@host-1" or "https://example.com/bridge-a", percent-encoding other characters (a space as %20)`
	if s == "" {
		return fmt.Errorf("publish: source is empty: %s", hint)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return fmt.Errorf("publish: source %q: '%%' at byte %d does not start a %%XX escape: write it as %%25; %s", s, i, hint)
			}
		case isUnreserved(c) || isSubDelim(c) || strings.IndexByte(":/?#[]@", c) >= 0:
		default:
			return fmt.Errorf("publish: source %q: character %q at byte %d may not appear in a URI-reference: %s", s, rune(c), i, hint)
		}
	}
	if strings.Count(s, "#") > 1 {
		return fmt.Errorf("publish: source %q has more than one '#': %s", s, hint)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("publish: source %q is not a URI-reference (%v): %s", s, err, hint)
	}
	if n := strings.Count(s, "[") + strings.Count(s, "]"); n > 0 {
		if !strings.HasPrefix(u.Host, "[") || strings.Count(u.Host, "[")+strings.Count(u.Host, "]") != n {
			return fmt.Errorf("publish: source %q: '[' and ']' may only enclose an IP literal host (http://[::1]/x): %s", s, hint)
		}
	}
	if u.Scheme == "" && u.Host == "" && u.Opaque == "" && u.Path == "" && u.RawQuery == "" && u.Fragment == "" {
		return fmt.Errorf("publish: source %q names nothing: %s", s, hint)
	}
	return nil
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool { return strings.IndexByte("!$&'()*+,;=", c) >= 0 }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
