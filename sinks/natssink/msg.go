package natssink

import (
	"fmt"
	"net/textproto"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/publish"
)

// MaxSubject is the longest subject herald publishes on. A NATS server
// refuses a protocol line longer than its max_control_line (4,096 bytes
// unless configured) by closing the connection, and a sink that retried
// such an event would hold every later event up for ever. An event whose
// subject is longer (a group path of thousands of bytes, or of many
// characters outside [A-Za-z0-9_-], which take three bytes each) is
// refused like one larger than the maximum payload: dropped from the NATS
// sinks only, and counted. The margin leaves room for the rest of the line
// and for the owners bucket's longer keys.
const MaxSubject = 3800

// Msg renders an event as the NATS message herald publishes: subject
// herald.<type>.<group tokens>, CloudEvents binary-mode headers (ce-id,
// ce-type, ...; content-type) and the JSON event as body. Header names keep
// their case on the wire, as the CloudEvents NATS binding wants.
func Msg(e publish.Event) (*nats.Msg, error) {
	subj, err := publish.Subject(e.Type, e.Group)
	if err != nil {
		return nil, err
	}
	if len(subj) > MaxSubject {
		return nil, fmt.Errorf("its subject is %d bytes (group %.60s…), more than the %d herald publishes on: a NATS server closes the connection of a client that sends a protocol line longer than its max_control_line (4,096 bytes unless configured); give the group a shorter path",
			len(subj), e.Group, MaxSubject)
	}
	hs, body, err := publish.Encode(e, publish.NATSPrefix)
	if err != nil {
		return nil, err
	}
	h := make(nats.Header, len(hs))
	for _, kv := range hs {
		h[kv.Key] = []string{kv.Value} // not Set: no canonicalisation, ever
	}
	return &nats.Msg{Subject: subj, Header: h, Data: body}, nil
}

// Decode reads an event from a message written by Msg. The message's
// subject must be the one Msg gives the event: a subscriber or consumer
// filters by subject, so an event of another group (or type) filed under
// it would reach readers who asked for that one only. Such a message is
// refused.
func Decode(m *nats.Msg) (publish.Event, error) {
	e, err := publish.Decode(publish.NATSPrefix, func(k string) (string, bool) {
		v, ok := m.Header[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}, m.Data)
	if err != nil {
		return e, err
	}
	want, err := publish.Subject(e.Type, e.Group)
	if err != nil {
		return e, err
	}
	if m.Subject != want {
		return e, fmt.Errorf("natssink: subject %q but a %s event of group %q (its subject is %q)", m.Subject, e.Type, e.Group, want)
	}
	return e, nil
}

// WireSize is what m counts against a server's maximum payload: its data
// and its headers as NATS encodes them ("NATS/1.0", a line per value, a
// blank line). extra adds headers a publisher will set (JetStream's
// Nats-Msg-Id, for one).
func WireSize(m *nats.Msg, extra map[string]string) int {
	n := len(m.Data)
	if len(m.Header) == 0 && len(extra) == 0 {
		return n
	}
	n += len("NATS/1.0\r\n") + len("\r\n")
	for k, vs := range m.Header {
		if _, dup := extra[k]; dup {
			continue
		}
		for _, v := range vs {
			n += len(k) + len(textproto.TrimString(v)) + 4
		}
	}
	for k, v := range extra {
		n += len(k) + len(textproto.TrimString(v)) + 4
	}
	return n
}
