package publish

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zkherald/herald/elect"
)

// kvKey is what JetStream accepts as a KV key.
var kvKey = regexp.MustCompile(`^[-/_=\.a-zA-Z0-9]+$`)

// checkTokens fails unless tok is a valid KV key and a valid run of NATS
// subject tokens.
func checkTokens(t *testing.T, group, tok string) {
	t.Helper()
	if !kvKey.MatchString(tok) || strings.HasPrefix(tok, ".") || strings.HasSuffix(tok, ".") {
		t.Fatalf("Tokens(%q) = %q: not a valid KV key", group, tok)
	}
	for _, part := range strings.Split(tok, ".") {
		if part == "" || strings.ContainsAny(part, " \t\r\n.*>") {
			t.Fatalf("Tokens(%q) = %q: bad subject token %q", group, tok, part)
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"/jobs/nightly", "/a", "/a b/c.d", "/x/*/>", "/ü/=41", "//", "/a/", "relative", "/%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, group string) {
		tok, err := Tokens(group)
		if err != nil {
			return
		}
		checkTokens(t, group, tok)
		back, err := GroupFromTokens(tok)
		if err != nil || back != group {
			t.Fatalf("GroupFromTokens(Tokens(%q)=%q) = %q, %v", group, tok, back, err)
		}
		for _, ty := range Types {
			subj, err := Subject(ty, group)
			if err != nil {
				t.Fatal(err)
			}
			gt, gg, err := ParseSubject(subj)
			if err != nil || gt != ty || gg != group {
				t.Fatalf("ParseSubject(%q) = %s %q %v", subj, gt, gg, err)
			}
		}
	})
}

// Every token string GroupFromTokens accepts must be the one Tokens makes
// of the result: one group, one key, or two bridges would write two keys.
func FuzzGroupFromTokens(f *testing.F) {
	for _, s := range []string{"jobs.nightly", "a=20b", "a..b", "=2F", "a=2Fb", "=4", "x=zz", ".a", "a."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		g, err := GroupFromTokens(tok)
		if err != nil {
			return
		}
		again, err := Tokens(g)
		if err != nil || again != tok {
			t.Fatalf("GroupFromTokens(%q) = %q, whose Tokens is %q, %v", tok, g, again, err)
		}
	})
}

func FuzzEnvelope(f *testing.F) {
	f.Add(uint8(0), "/jobs/nightly", "n_0000000001", "cand-1", int64(5), int64(9), "bridge", false, true)
	f.Add(uint8(6), "/x/y z", "lock-", "", int64(-1), int64(0), "", true, false)
	f.Fuzz(func(t *testing.T, ti uint8, group, node, id string, term, zxid int64, source string, gap, snap bool) {
		for _, s := range []string{group, node, id, source} {
			if !utf8.ValidString(s) {
				return // ZooKeeper paths and data-derived ids are UTF-8
			}
		}
		e := Event{
			Type: Types[int(ti)%len(Types)], Group: group, Recipe: elect.RecipeLock,
			Owner: &Participant{ID: id, Node: node, Session: "0x1", Sequence: 3},
			Term:  term, Zxid: zxid, Gap: gap, Snapshot: snap, Source: source,
			Time: time.Unix(1700000000, 123456789).In(time.FixedZone("x", 3600)),
		}
		if e.Type == CandidateJoined || e.Type == CandidateLeft {
			e.Candidate = e.Owner
		}
		e = e.WithID()
		if e.Validate() != nil {
			return
		}
		for _, prefix := range []string{NATSPrefix, KafkaPrefix} {
			hs, body, err := Encode(e, prefix)
			if err != nil {
				t.Fatalf("Encode of a valid event: %v", err)
			}
			m := map[string]string{}
			for _, h := range hs {
				m[h.Key] = h.Value
			}
			got, err := Decode(prefix, func(k string) (string, bool) { v, ok := m[k]; return v, ok }, body)
			if err != nil {
				t.Fatalf("Decode(Encode(e)): %v", err)
			}
			if !got.Time.Equal(e.Time) {
				t.Fatalf("time %v, want %v", got.Time, e.Time)
			}
			got.Time = e.Time
			if !reflect.DeepEqual(got, e) {
				t.Fatalf("round trip\n%+v\nwant\n%+v", got, e)
			}
		}
	})
}

// FuzzDecodeBody: whatever bytes arrive as a body, Decode returns an event
// or an error, never panics, and anything it accepts is a valid event.
func FuzzDecodeBody(f *testing.F) {
	e := Event{Type: LeaderElected, Group: "/jobs/nightly", Recipe: elect.RecipeElection,
		Owner: &Participant{ID: "a", Node: "n_0000000001", Session: "0x1", Sequence: 1}, Term: 5, Zxid: 9,
		Time: time.Unix(1700000000, 0).UTC(), Source: "bridge"}
	e = e.WithID()
	hs, body, err := Encode(e, NATSPrefix)
	if err != nil {
		f.Fatal(err)
	}
	m := map[string]string{}
	for _, h := range hs {
		m[h.Key] = h.Value
	}
	f.Add(body)
	f.Add([]byte(`{"id":1}`))
	f.Add([]byte(`{"owner":{"node":[]}}`))
	f.Add([]byte(`{"time":"not a time"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(NATSPrefix, func(k string) (string, bool) { v, ok := m[k]; return v, ok }, data)
		if err == nil && got.Validate() != nil {
			t.Fatalf("Decode accepted an invalid event: %+v", got)
		}
	})
}
