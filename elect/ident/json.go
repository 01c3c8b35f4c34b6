package ident

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// object reads data as one JSON object, keeping its values raw. Numbers
// stay exact (UseNumber) and trailing data is an error.
func object(data []byte) (map[string]json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]json.RawMessage
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return nil, errors.New("not a JSON object: null")
	}
	if d.More() {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
}

// str reads a JSON string member; ok is false when it is missing or null.
func str(m map[string]json.RawMessage, key string) (string, bool, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%q is not a string: %s", key, short(raw))
	}
	return s, true, nil
}

// integer reads a JSON integer member within [lo, hi]; ok is false when it
// is missing or null.
func integer(m map[string]json.RawMessage, key string, lo, hi int64) (int64, bool, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil { // json.Number would take "3" too
		return 0, false, fmt.Errorf("%q is not a number: %s", key, short(raw))
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, false, fmt.Errorf("%q is %s, not an integer in [%d, %d]", key, n, lo, hi)
	}
	return v, true, nil
}

// short is raw JSON cut for an error message.
func short(raw []byte) string { return cut(string(raw), 40) }

// put records a text field when it is printable text.
func (id *Identity) put(key, value string) {
	if v, ok := textField(value); ok {
		if id.Fields == nil {
			id.Fields = map[string]string{}
		}
		id.Fields[key] = v
	}
}

// decodeKafka reads Kafka's /controller (ZkData.scala ControllerZNode):
// version 1 {"version":1,"brokerid":N,"timestamp":"<ms>"}, version 2 adds
// "kraftControllerEpoch" (-1 for a ZooKeeper-mode controller; a KRaft
// controller during a migration writes its epoch).
func decodeKafka(data []byte) (Identity, error) {
	m, err := object(data)
	if err != nil {
		return Identity{}, err
	}
	broker, ok, err := integer(m, "brokerid", math.MinInt32, math.MaxInt32)
	if err != nil {
		return Identity{}, err
	}
	if !ok {
		return Identity{}, errors.New(`no "brokerid"`)
	}
	id := Identity{Format: Kafka, ID: strconv.FormatInt(broker, 10)}
	id.put("broker_id", id.ID)
	if v, ok, err := integer(m, "version", math.MinInt32, math.MaxInt32); err != nil {
		return Identity{}, err
	} else if ok {
		id.put("version", strconv.FormatInt(v, 10))
	}
	// Kafka writes the timestamp as a string of milliseconds; a number
	// is read too.
	if ts, ok, err := str(m, "timestamp"); err == nil && ok {
		id.put("timestamp", ts)
	} else if n, ok, err := integer(m, "timestamp", math.MinInt64, math.MaxInt64); err == nil && ok {
		id.put("timestamp", strconv.FormatInt(n, 10))
	}
	if e, ok, err := integer(m, "kraftControllerEpoch", math.MinInt32, math.MaxInt32); err != nil {
		return Identity{}, err
	} else if ok {
		id.put("kraft_controller_epoch", strconv.FormatInt(e, 10))
		if e >= 0 {
			id.put("controller", "kraft") // a KRaft controller during a migration
		}
	}
	return id, nil
}

// ParseEpoch reads an epoch node's data: a decimal integer as text, as
// Kafka's /controller_epoch holds it (ControllerEpochZNode).
func ParseEpoch(data []byte) (int64, error) {
	s := strings.TrimSpace(string(data))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ident: epoch %q: %w: not a decimal integer", cut(s, 40), ErrMalformed)
	}
	return v, nil
}

// decodeSolrOverseer reads /overseer_elect/leader: {"id": "<election
// node>"}, the name of the winning node of /overseer_elect/election. The
// overseer's id is the Solr node name that election node carries, as the
// election group's owner is named and as Solr's OVERSEERSTATUS names its
// leader, so that both views of one overseer agree; the election node
// itself is kept as a field.
func decodeSolrOverseer(data []byte) (Identity, error) {
	_, id, err := objectWithID(data, SolrOverseer)
	if err != nil {
		return Identity{}, err
	}
	if n, ok := ParseSolrNode(id.ID); ok {
		id.put("election_node", id.ID)
		id.put("session", fmt.Sprintf("0x%x", uint64(n.Session)))
		id.put("node_name", n.ID)
		id.put("sequence", strconv.FormatInt(int64(n.Sequence), 10))
		id.ID = n.ID
	}
	return id, nil
}

// SolrNode is what a Solr election node's name says.
type SolrNode struct {
	// Session is the ZooKeeper session that created it (as its name
	// claims), ID the node name (overseer) or core node name (shard).
	Session  int64
	ID       string
	Sequence int32
}

// ParseSolrNode reads a Solr election node's name,
// "<session>-<id>-n_<10-digit sequence>" (LeaderElector.java). The
// session is decimal and may be negative.
func ParseSolrNode(name string) (SolrNode, bool) {
	i := strings.LastIndex(name, "-n_")
	if i < 0 {
		return SolrNode{}, false
	}
	seq, err := strconv.ParseInt(name[i+3:], 10, 32)
	if err != nil || seq < 0 {
		return SolrNode{}, false
	}
	rest := name[:i]
	j := strings.IndexByte(rest[min(1, len(rest)):], '-') // a leading '-' is the session's sign
	if j < 0 {
		return SolrNode{}, false
	}
	j += min(1, len(rest))
	sid, err := strconv.ParseInt(rest[:j], 10, 64)
	if err != nil || j+1 >= len(rest) {
		return SolrNode{}, false
	}
	return SolrNode{Session: sid, ID: rest[j+1:], Sequence: int32(seq)}, true
}

// decodeSolrLeader reads /collections/<c>/leaders/<shard>/leader, the
// leader's ZkNodeProps: core, node_name, base_url, core_node_name.
func decodeSolrLeader(data []byte) (Identity, error) {
	m, err := object(data)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Format: SolrLeader}
	for k := range m {
		if s, ok, err := str(m, k); err == nil && ok {
			id.put(k, s)
		}
	}
	switch {
	case id.Fields["core_node_name"] != "":
		id.ID = id.Fields["core_node_name"]
	case id.Fields["core"] != "":
		id.ID = id.Fields["core"]
	default:
		return Identity{}, errors.New(`no "core_node_name" or "core"`)
	}
	return id, nil
}

// decodeHelix reads /<cluster>/CONTROLLER/LEADER, a ZNRecord: {"id":
// "<controller instance>", "simpleFields": {"HELIX_VERSION", "LIVE_INSTANCE",
// "SESSION_ID", ...}, "listFields": {}, "mapFields": {}}.
func decodeHelix(data []byte) (Identity, error) {
	m, id, err := objectWithID(data, Helix)
	if err != nil {
		return Identity{}, err
	}
	if raw, ok := m["simpleFields"]; ok && string(raw) != "null" {
		var simple map[string]json.RawMessage
		if err := json.Unmarshal(raw, &simple); err != nil {
			return Identity{}, fmt.Errorf(`"simpleFields" is not an object: %s`, short(raw))
		}
		for k := range simple {
			if s, ok, err := str(simple, k); err == nil && ok {
				id.put(strings.ToLower(k), s)
			}
		}
	}
	return id, nil
}

// decodePulsar reads /loadbalance/leader, LeaderBroker: {"brokerId",
// "serviceUrl"} (brokers before 3.0 write serviceUrl alone).
func decodePulsar(data []byte) (Identity, error) {
	m, err := object(data)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Format: Pulsar}
	for _, kv := range [][2]string{{"brokerId", "broker_id"}, {"serviceUrl", "service_url"}} {
		s, ok, err := str(m, kv[0])
		if err != nil {
			return Identity{}, err
		}
		if ok {
			id.put(kv[1], s)
		}
	}
	if id.ID = id.Fields["broker_id"]; id.ID == "" {
		id.ID = id.Fields["service_url"]
	}
	if id.ID == "" {
		return Identity{}, errors.New(`no "brokerId" or "serviceUrl"`)
	}
	return id, nil
}

// decodeMesos reads a master's json.info_<seq>: MasterInfo as JSON (the
// protobuf's field names): id, ip (IPv4 in network byte order, as a
// number), port, pid, hostname, version, address {hostname, ip, port}.
func decodeMesos(data []byte) (Identity, error) {
	m, id, err := objectWithID(data, Mesos)
	if err != nil {
		return Identity{}, err
	}
	for _, k := range []string{"pid", "hostname", "version"} {
		if s, ok, err := str(m, k); err == nil && ok {
			id.put(k, s)
		}
	}
	if ip, ok, err := integer(m, "ip", 0, math.MaxUint32); err != nil {
		return Identity{}, err
	} else if ok {
		id.put("ip", fmt.Sprintf("%d.%d.%d.%d", ip&0xff, ip>>8&0xff, ip>>16&0xff, ip>>24&0xff))
	}
	if port, ok, err := integer(m, "port", 0, math.MaxUint32); err != nil {
		return Identity{}, err
	} else if ok {
		id.put("port", strconv.FormatInt(port, 10))
	}
	if raw, ok := m["address"]; ok && string(raw) != "null" {
		var addr map[string]json.RawMessage
		if err := json.Unmarshal(raw, &addr); err != nil {
			return Identity{}, fmt.Errorf(`"address" is not an object: %s`, short(raw))
		}
		// The address, when present, is what Mesos itself prefers.
		if s, ok, err := str(addr, "ip"); err == nil && ok {
			id.put("ip", s)
		}
		if s, ok, err := str(addr, "hostname"); err == nil && ok {
			id.put("hostname", s)
		}
		if p, ok, err := integer(addr, "port", 0, math.MaxUint32); err == nil && ok {
			id.put("port", strconv.FormatInt(p, 10))
		}
	}
	return id, nil
}

// objectWithID reads a JSON object whose text field "id" names the owner,
// as Solr's overseer leader, Helix's ZNRecord and Mesos' MasterInfo do.
func objectWithID(data []byte, f Format) (map[string]json.RawMessage, Identity, error) {
	m, err := object(data)
	if err != nil {
		return nil, Identity{}, err
	}
	s, ok, err := str(m, "id")
	if err != nil {
		return nil, Identity{}, err
	}
	v, good := textField(s)
	if !ok || !good {
		return nil, Identity{}, errors.New(`no "id" text`)
	}
	return m, Identity{Format: f, ID: v}, nil
}
