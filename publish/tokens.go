package publish

import (
	"errors"
	"fmt"
	"strings"
)

// Group paths become NATS subject tokens, KV keys and Kafka keys by one
// reversible rule: the path's segments joined by '.', every byte outside
// [A-Za-z0-9_-] written as '=' and two uppercase hex digits. The result is a
// valid NATS subject suffix and a valid JetStream KV key.

// ErrBadGroup is returned for a group path that cannot be encoded or decoded.
var ErrBadGroup = errors.New("publish: bad group path")

const hexDigits = "0123456789ABCDEF"

func plain(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// Tokens encodes an absolute ZooKeeper path ("/jobs/nightly") as
// "jobs.nightly".
func Tokens(group string) (string, error) {
	if !strings.HasPrefix(group, "/") || group == "/" || strings.HasSuffix(group, "/") {
		return "", fmt.Errorf("%w: %q must be an absolute path below the root, without a trailing '/'", ErrBadGroup, group)
	}
	var b strings.Builder
	b.Grow(len(group) + 8)
	for i, seg := range strings.Split(group[1:], "/") {
		if seg == "" {
			return "", fmt.Errorf("%w: %q has an empty segment", ErrBadGroup, group)
		}
		if i > 0 {
			b.WriteByte('.')
		}
		for j := 0; j < len(seg); j++ {
			c := seg[j]
			if plain(c) {
				b.WriteByte(c)
				continue
			}
			b.WriteByte('=')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String(), nil
}

// MustTokens is Tokens for paths already validated.
func MustTokens(group string) string {
	t, err := Tokens(group)
	if err != nil {
		panic(err)
	}
	return t
}

// GroupFromTokens reverses Tokens.
func GroupFromTokens(tokens string) (string, error) {
	if tokens == "" {
		return "", fmt.Errorf("%w: empty tokens", ErrBadGroup)
	}
	var b strings.Builder
	b.Grow(len(tokens) + 1)
	b.WriteByte('/')
	for i := 0; i < len(tokens); i++ {
		c := tokens[i]
		switch {
		case c == '.':
			if i == 0 || i == len(tokens)-1 || tokens[i-1] == '.' {
				return "", fmt.Errorf("%w: %q has an empty token", ErrBadGroup, tokens)
			}
			b.WriteByte('/')
		case c == '=':
			if i+2 >= len(tokens) {
				return "", fmt.Errorf("%w: %q ends inside an escape", ErrBadGroup, tokens)
			}
			hi, lo := unhex(tokens[i+1]), unhex(tokens[i+2])
			if hi < 0 || lo < 0 {
				return "", fmt.Errorf("%w: %q has a bad escape at byte %d", ErrBadGroup, tokens, i)
			}
			d := byte(hi<<4 | lo)
			if plain(d) {
				return "", fmt.Errorf("%w: %q escapes a plain byte at %d", ErrBadGroup, tokens, i)
			}
			if d == '/' {
				// Tokens never escapes '/': it separates segments and
				// becomes '.'. Accepting "=2F" would give one group two
				// keys and decode "=2F" to the invalid path "//".
				return "", fmt.Errorf("%w: %q escapes '/' at byte %d: use '.' between segments", ErrBadGroup, tokens, i)
			}
			b.WriteByte(d)
			i += 2
		case plain(c):
			b.WriteByte(c)
		default:
			return "", fmt.Errorf("%w: %q holds byte %q outside the token alphabet", ErrBadGroup, tokens, c)
		}
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// SubjectPrefix is the first token of every subject herald publishes on.
const SubjectPrefix = "herald"

// Subject returns the NATS subject of an event: herald.<type with _>.<tokens>,
// e.g. herald.leader_elected.jobs.nightly.
func Subject(t Type, group string) (string, error) {
	tok, err := Tokens(group)
	if err != nil {
		return "", err
	}
	return SubjectPrefix + "." + strings.ReplaceAll(string(t), ".", "_") + "." + tok, nil
}

// ParseSubject splits a herald subject into its type and group.
func ParseSubject(subject string) (Type, string, error) {
	parts := strings.SplitN(subject, ".", 3)
	if len(parts) != 3 || parts[0] != SubjectPrefix {
		return "", "", fmt.Errorf("%w: subject %q is not herald.<type>.<group>", ErrBadGroup, subject)
	}
	t := Type(strings.ReplaceAll(parts[1], "_", "."))
	if !t.Valid() {
		return "", "", fmt.Errorf("%w: subject %q names unknown type %q", ErrBadGroup, subject, parts[1])
	}
	g, err := GroupFromTokens(parts[2])
	return t, g, err
}
