package publish

import (
	"net/url"
	"strings"
	"testing"
)

func TestSourceEncodesWhatAURICannotHold(t *testing.T) {
	for _, tc := range []struct{ prefix, name, want string }{
		{"herald-run/", "host with space", "herald-run/host%20with%20space"},
		{"herald-run/", "host-1.example_a~b", "herald-run/host-1.example_a~b"},
		{"herald-lock/", "a/b?c#d", "herald-lock/a%2Fb%3Fc%23d"},
		{"herald-lock/", "100%", "herald-lock/100%25"},
		{"herald-bridge@", "host:[::1]", "herald-bridge@host%3A%5B%3A%3A1%5D"},
		{"herald-bridge@", "héte\x00", "herald-bridge@h%C3%A9te%00"},
		{"herald-bridge@", "", "herald-bridge@unknown"},
		{"", "a:b", "a%3Ab"}, // a colon in the first segment would read as a scheme
		{"herald-run/", "user@host!$&'()*+,;=", "herald-run/user@host!$&'()*+,;="},
	} {
		got := Source(tc.prefix, tc.name)
		if got != tc.want {
			t.Errorf("Source(%q, %q) = %q, want %q", tc.prefix, tc.name, got, tc.want)
		}
		if err := ValidateSource(got); err != nil {
			t.Errorf("Source(%q, %q) = %q is not valid: %v", tc.prefix, tc.name, got, err)
		}
		// The name comes back whole: the encoding is reversible.
		if dec, err := url.PathUnescape(strings.TrimPrefix(got, tc.prefix)); err != nil || (tc.name != "" && dec != tc.name) {
			t.Errorf("unescape %q = %q, %v; want %q", got, dec, err, tc.name)
		}
	}
}

func TestValidateSource(t *testing.T) {
	for _, ok := range []string{
		"herald-bridge@host-1", "herald-run/host%20with%20space", "herald", "/a/b",
		"https://example.com/bridges/a?zone=1#x", "urn:herald:bridge:a", "http://[::1]:8080/x",
		"mailto:ops@example.com", "//example.com/x", "a?b", "#frag", "./a:b",
	} {
		if err := ValidateSource(ok); err != nil {
			t.Errorf("ValidateSource(%q): %v", ok, err)
		}
	}
	for _, tc := range []struct{ src, says string }{
		{"", "empty"},
		{"bridge a", "character ' '"},
		{"herald-run/host with space", "character ' '"},
		{"http://[bad", "not a URI-reference"},
		{"a[1]", "IP literal"},
		{"http://h/a]", "IP literal"},
		{"100%", "%XX"},
		{"a%zz", "%XX"},
		{"a#b#c", "more than one '#'"},
		{"tab\there", "character"},
		{"héte", "character"},
		{`a"b`, "character"},
		{"a<b>", "character"},
		{"a\\b", "character"},
		{"a{b}", "character"},
		{"a|b", "character"},
		{"a^b", "character"},
		{"a`b", "character"},
		{":a", "not a URI-reference"},
		{"1http://x", "not a URI-reference"},
	} {
		err := ValidateSource(tc.src)
		if err == nil {
			t.Errorf("ValidateSource(%q) accepted it", tc.src)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "percent-encoding") {
			t.Errorf("ValidateSource(%q) = %v; want it to say %q and what to do", tc.src, err, tc.says)
		}
	}
}

func FuzzSourceIsValid(f *testing.F) {
	f.Add("herald-run/", "host with space")
	f.Add("herald-bridge@", "[::1]:%zz#")
	f.Fuzz(func(t *testing.T, prefix, name string) {
		if ValidateSource(prefix+"x") != nil || strings.ContainsAny(prefix, ":?#") {
			return // the prefix is the caller's: only valid, plain ones
		}
		if s := Source(prefix, name); ValidateSource(s) != nil {
			t.Fatalf("Source(%q, %q) = %q: %v", prefix, name, s, ValidateSource(s))
		}
	})
}
