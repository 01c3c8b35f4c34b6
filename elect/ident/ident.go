// Package ident reads who owns a leadership from the bytes other systems
// keep in ZooKeeper: Kafka's /controller, HBase's /hbase/master, Hadoop's
// ActiveStandbyElectorLock (HDFS NameNodes and YARN ResourceManagers),
// Solr's overseer and shard leaders, Helix's controller, Pulsar's load
// manager leader and Mesos' masters.
//
// Its functions are pure: they take a node's path and data and touch no
// server. Decode never panics and always returns a usable Identity: data
// that does not decode in the format asked for falls back to the generic
// form (the text, else hex), with Fallback set and an error saying why, so
// a caller can count it and go on.
package ident

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// Format names a way a system writes its leader's identity.
type Format string

// The formats Decode reads.
const (
	// Auto chooses the format from the node's path (see ForPath).
	Auto Format = "auto"
	// Generic is the node's data as text (valid UTF-8 without control
	// characters, trimmed), else as hex: for everything else.
	Generic Format = "generic"
	// Kafka is Kafka's /controller: JSON {"version":1|2,"brokerid":N,
	// "timestamp":"<ms>"[,"kraftControllerEpoch":E]}. ID is the broker id.
	Kafka Format = "kafka"
	// HBase is HBase's /hbase/master (and backup-masters): 0xFF, a
	// big-endian int32 length, that many bytes of process id and salt,
	// "PBUF", then protobuf Master{ServerName master, rpc_version,
	// info_port}. ID is the ServerName, "host,port,startcode".
	HBase Format = "hbase"
	// HadoopHA is Hadoop's ActiveStandbyElectorLock (and ActiveBreadCrumb):
	// protobuf ActiveNodeInfo{nameserviceId, namenodeId, hostname, port,
	// zkfcPort} written by HDFS's ZKFC; ID is the NameNode id. Data that
	// is a YARN ActiveRMInfoProto instead is read as YarnRM under YARN's
	// base path (/yarn-leader-election); elsewhere its bytes are also a
	// NameNode's record cut short, so its "system" field says it is not
	// known which (ID is field 2, the rm or NameNode id, either way).
	HadoopHA Format = "hadoop-ha"
	// YarnRM is a YARN ResourceManager's ActiveStandbyElectorLock:
	// protobuf ActiveRMInfoProto{clusterId, rmId}; ID is the rm id.
	YarnRM Format = "yarn-rm"
	// SolrOverseer is Solr's /overseer_elect/leader: JSON {"id":
	// "<session>-<node name>-n_<seq>"}; ID is that id.
	SolrOverseer Format = "solr-overseer"
	// SolrLeader is a Solr shard leader,
	// /collections/<c>/leaders/<shard>/leader: JSON {core, node_name,
	// base_url, core_node_name}; ID is the core node name (the replica).
	SolrLeader Format = "solr-leader"
	// Helix is Helix's /<cluster>/CONTROLLER/LEADER: a ZNRecord in JSON;
	// ID is its id, the controller's instance name.
	Helix Format = "helix"
	// Pulsar is Pulsar's /loadbalance/leader: JSON {brokerId, serviceUrl};
	// ID is the broker id (the service URL for brokers that write none).
	Pulsar Format = "pulsar"
	// Mesos is a Mesos master's json.info_<seq>: JSON MasterInfo {id, ip,
	// port, pid, hostname, address, version}; ID is the master's id.
	Mesos Format = "mesos"
)

// Formats lists the formats a user may name, in the order help texts show
// them.
var Formats = []Format{Auto, Generic, Kafka, HBase, HadoopHA, YarnRM, SolrOverseer, SolrLeader, Helix, Pulsar, Mesos}

// ParseFormat reads a format's name as a flag or a config file gives it.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("ident: unknown format %q; want one of %s", s, strings.Join(names, ", "))
}

// Identity is who owns a leadership, as its system names it.
type Identity struct {
	// ID names the owner the way its system does (see each Format).
	// Empty when the node holds no data.
	ID string `json:"id"`
	// Format is what decoded the data: the format asked for (or the one
	// its path chose), or Generic after a fallback.
	Format Format `json:"format"`
	// Fields are the structured parts, by snake_case name, as text (a
	// Kafka broker_id, an HBase host, port and start_code, ...).
	Fields map[string]string `json:"fields,omitempty"`
	// Fallback says the data did not decode as the format asked for: ID
	// is the generic form, and Decode's error says why.
	Fallback bool `json:"fallback,omitempty"`
}

// String is the identity for people: the id and its fields.
func (id Identity) String() string {
	keys := make([]string, 0, len(id.Fields))
	for k := range id.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(id.ID)
	for i, k := range keys {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + id.Fields[k])
	}
	if len(keys) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// ErrMalformed is wrapped by every error Decode returns for data that is
// not in the format asked for.
var ErrMalformed = errors.New("malformed leader data")

// Decode reads the owner's identity from the data of the node at path, in
// format f (Auto: the one ForPath chooses). It never panics. On an error
// (wrapping ErrMalformed, or naming an unknown format) the Identity is
// still usable: the generic form of the data, with Fallback set.
func Decode(f Format, nodePath string, data []byte) (Identity, error) {
	if f == Auto || f == "" {
		f = ForPath(nodePath)
	}
	var (
		id  Identity
		err error
	)
	switch f {
	case Generic:
		return decodeGeneric(data), nil
	case Kafka:
		id, err = decodeKafka(data)
	case HBase:
		id, err = decodeHBase(data)
	case HadoopHA:
		id, err = decodeHadoop(nodePath, data)
	case YarnRM:
		id, err = decodeYarn(data)
	case SolrOverseer:
		id, err = decodeSolrOverseer(data)
	case SolrLeader:
		id, err = decodeSolrLeader(data)
	case Helix:
		id, err = decodeHelix(data)
	case Pulsar:
		id, err = decodePulsar(data)
	case Mesos:
		id, err = decodeMesos(data)
	default:
		g := decodeGeneric(data)
		g.Fallback = true
		return g, fmt.Errorf("ident: unknown format %q for %s", f, nodePath)
	}
	if err != nil {
		g := decodeGeneric(data)
		g.Fallback = true
		return g, fmt.Errorf("ident: %s data at %s: %w: %w", f, nodePath, ErrMalformed, err)
	}
	if id.Format == "" {
		id.Format = f
	}
	return id, nil
}

// ForPath chooses the format by where each system keeps its leader:
//
//	.../controller                      Kafka
//	.../master                          HBase
//	.../ActiveStandbyElectorLock        HadoopHA (YarnRM under /yarn-leader-election)
//	.../ActiveBreadCrumb                the same
//	.../overseer_elect/leader           SolrOverseer
//	.../leaders/<shard>/leader          SolrLeader
//	.../CONTROLLER/LEADER               Helix
//	.../loadbalance/leader              Pulsar
//	.../json.info_<seq>                 Mesos
//
// and Generic for anything else.
func ForPath(p string) Format {
	p = path.Clean("/" + p)
	base, dir := path.Base(p), path.Dir(p)
	parent := path.Base(dir)
	switch {
	case base == "controller":
		return Kafka
	case base == "master":
		return HBase
	case base == "ActiveStandbyElectorLock" || base == "ActiveBreadCrumb":
		if strings.HasPrefix(p, "/yarn-leader-election/") {
			return YarnRM
		}
		return HadoopHA
	case base == "leader" && parent == "overseer_elect":
		return SolrOverseer
	case base == "leader" && path.Base(path.Dir(dir)) == "leaders":
		return SolrLeader
	case base == "LEADER" && parent == "CONTROLLER":
		return Helix
	case base == "leader" && parent == "loadbalance":
		return Pulsar
	case strings.HasPrefix(base, "json.info_"):
		return Mesos
	}
	return Generic
}
