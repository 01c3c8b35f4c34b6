package publish

import (
	"fmt"
	"strconv"
	"time"

	json "github.com/goccy/go-json"
)

// CloudEvents 1.0, binary content mode, written by hand: the context
// attributes travel as message headers and the data (the JSON event) as the
// body. Kafka spells the header prefix "ce_", NATS "ce-".
const (
	SpecVersion     = "1.0"
	ContentType     = "application/json"
	KafkaPrefix     = "ce_"
	NATSPrefix      = "ce-"
	ContentTypeName = "content-type"
)

// Header is one message header.
type Header struct{ Key, Value string }

// Encode renders an event as binary-mode CloudEvents headers (with the given
// prefix) and a JSON body. The extension attributes "recipe", "term" and
// "zxid" let consumers route and fence without parsing the body.
func Encode(e Event, prefix string) ([]Header, []byte, error) {
	if err := e.Validate(); err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return nil, nil, fmt.Errorf("publish: encode %s: %w", e.ID, err)
	}
	h := []Header{
		{prefix + "specversion", SpecVersion},
		{prefix + "id", e.ID},
		{prefix + "source", e.Source},
		{prefix + "type", string(e.Type)},
		{prefix + "subject", e.Group},
		{prefix + "time", e.Time.UTC().Format(time.RFC3339Nano)},
		{prefix + "recipe", string(e.Recipe)},
		{prefix + "term", strconv.FormatInt(e.Term, 10)},
		{prefix + "zxid", strconv.FormatInt(e.Zxid, 10)},
		{ContentTypeName, ContentType},
	}
	return h, data, nil
}

// Decode reads a binary-mode CloudEvents message written by Encode. lookup
// returns a header's value (prefix included in the name). The headers and the
// body must agree: a message whose id, type or subject headers differ from
// its body is rejected, so a consumer never acts on a half-rewritten message.
func Decode(prefix string, lookup func(key string) (string, bool), data []byte) (Event, error) {
	var e Event
	sv, ok := lookup(prefix + "specversion")
	if !ok {
		return e, fmt.Errorf("publish: message has no %sspecversion header: not a binary-mode CloudEvent", prefix)
	}
	if sv != SpecVersion {
		return e, fmt.Errorf("publish: CloudEvents specversion %q, want %q", sv, SpecVersion)
	}
	if ct, ok := lookup(ContentTypeName); ok && ct != ContentType {
		return e, fmt.Errorf("publish: content-type %q, want %q", ct, ContentType)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("publish: event body is not herald JSON: %w", err)
	}
	for _, c := range []struct{ attr, want string }{
		{"id", e.ID}, {"type", string(e.Type)}, {"subject", e.Group},
	} {
		got, ok := lookup(prefix + c.attr)
		if !ok {
			return e, fmt.Errorf("publish: message lacks header %s%s", prefix, c.attr)
		}
		if got != c.want {
			return e, fmt.Errorf("publish: header %s%s=%q disagrees with body %q", prefix, c.attr, got, c.want)
		}
	}
	if err := e.Validate(); err != nil {
		return e, err
	}
	return e, nil
}
