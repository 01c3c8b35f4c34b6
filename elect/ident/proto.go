package ident

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The protobuf messages the systems write, declared as their .proto files
// do (proto2; names, numbers, types and labels as upstream) and decoded by
// google.golang.org/protobuf's dynamic messages, which check the required
// fields:
//
//	hbase-protocol HBase.proto, ZooKeeper.proto (package hbase.pb):
//	  message ServerName { required string host_name = 1; optional uint32 port = 2; optional uint64 start_code = 3; }
//	  message Master { required ServerName master = 1; optional uint32 rpc_version = 2; optional uint32 info_port = 3; }
//	hadoop-hdfs HAZKInfo.proto (package hadoop.hdfs):
//	  message ActiveNodeInfo { required string nameserviceId = 1; required string namenodeId = 2;
//	    required string hostname = 3; required int32 port = 4; required int32 zkfcPort = 5; }
//	hadoop-yarn yarn_server_resourcemanager_service_protos.proto (package hadoop.yarn):
//	  message ActiveRMInfoProto { optional string clusterId = 1; optional string rmId = 2; }
var (
	hbaseMaster    protoreflect.MessageDescriptor
	activeNodeInfo protoreflect.MessageDescriptor
	activeRMInfo   protoreflect.MessageDescriptor
)

func init() {
	hbase := file("herald/ident/hbase.proto", "hbase.pb",
		message("ServerName",
			field("host_name", 1, required, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
			field("port", 2, optional, descriptorpb.FieldDescriptorProto_TYPE_UINT32, ""),
			field("start_code", 3, optional, descriptorpb.FieldDescriptorProto_TYPE_UINT64, "")),
		message("Master",
			field("master", 1, required, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".hbase.pb.ServerName"),
			field("rpc_version", 2, optional, descriptorpb.FieldDescriptorProto_TYPE_UINT32, ""),
			field("info_port", 3, optional, descriptorpb.FieldDescriptorProto_TYPE_UINT32, "")))
	hadoop := file("herald/ident/hazkinfo.proto", "hadoop.hdfs",
		message("ActiveNodeInfo",
			field("nameserviceId", 1, required, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
			field("namenodeId", 2, required, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
			field("hostname", 3, required, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
			field("port", 4, required, descriptorpb.FieldDescriptorProto_TYPE_INT32, ""),
			field("zkfcPort", 5, required, descriptorpb.FieldDescriptorProto_TYPE_INT32, "")))
	yarn := file("herald/ident/yarn_rm.proto", "hadoop.yarn",
		message("ActiveRMInfoProto",
			field("clusterId", 1, optional, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
			field("rmId", 2, optional, descriptorpb.FieldDescriptorProto_TYPE_STRING, "")))
	hbaseMaster = hbase.Messages().ByName("Master")
	activeNodeInfo = hadoop.Messages().ByName("ActiveNodeInfo")
	activeRMInfo = yarn.Messages().ByName("ActiveRMInfoProto")
}

var (
	required = descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()
	optional = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
)

func field(name string, num int32, label *descriptorpb.FieldDescriptorProto_Label, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Label: label, Type: typ.Enum()}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

func message(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
	return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
}

// file builds a proto2 file of messages; the declarations are fixed, so a
// failure is a bug and panics at start.
func file(name, pkg string, msgs ...*descriptorpb.DescriptorProto) protoreflect.FileDescriptor {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String(name), Package: proto.String(pkg), Syntax: proto.String("proto2"), MessageType: msgs,
	}, new(protoregistry.Files))
	if err != nil {
		panic(fmt.Sprintf("ident: declare %s: %v", name, err))
	}
	return fd
}

// decodeMessage unmarshals data as md, required fields checked.
func decodeMessage(md protoreflect.MessageDescriptor, data []byte) (protoreflect.Message, error) {
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("protobuf %s: %w", md.FullName(), plainSpaced{err})
	}
	return m, nil
}

// plainSpaced is a protobuf error whose text has plain spaces: protobuf
// puts a non-breaking space in some of its messages at random (so that
// nobody matches them), which a log line or a terminal shows as an odd
// character or an escape.
type plainSpaced struct{ err error }

func (e plainSpaced) Error() string { return strings.ReplaceAll(e.err.Error(), "\u00a0", " ") }
func (e plainSpaced) Unwrap() error { return e.err }

// onlyKnownFields reports whether data, decoded as md, holds no field md
// does not declare.
func onlyKnownFields(md protoreflect.MessageDescriptor, data []byte) bool {
	m, err := decodeMessage(md, data)
	return err == nil && len(m.GetUnknown()) == 0
}

// get reads a field by name: its value and whether it was set.
func get(m protoreflect.Message, name protoreflect.Name) (protoreflect.Value, bool) {
	fd := m.Descriptor().Fields().ByName(name)
	return m.Get(fd), m.Has(fd)
}

// hbaseMagic and pbufMagic are HBase's ZKMetadata magic byte and
// ProtobufUtil's PB_MAGIC.
const hbaseMagic = 0xFF

var pbufMagic = []byte("PBUF")

// decodeHBase reads /hbase/master (MasterAddressTracker.toByteArray,
// stored through RecoverableZooKeeper): 0xFF, a big-endian int32 length,
// that many bytes (the process identifier, then an 8-byte salt), "PBUF",
// then the Master message. Data without the 0xFF prefix is read from
// "PBUF" on, as ZKMetadata.removeMetaData does.
func decodeHBase(data []byte) (Identity, error) {
	id := Identity{Format: HBase}
	rest := data
	if len(rest) > 0 && rest[0] == hbaseMagic {
		if len(rest) < 5 {
			return Identity{}, errors.New("metadata cut short: no id length")
		}
		n := int64(int32(binary.BigEndian.Uint32(rest[1:5])))
		if n < 0 || n > int64(len(rest)-5) {
			return Identity{}, fmt.Errorf("metadata id length %d does not fit %d bytes", n, len(rest))
		}
		meta := rest[5 : 5+n]
		if len(meta) >= 8 { // RecoverableZooKeeper's identifier, then the salt
			id.put("zk_identifier", string(meta[:len(meta)-8]))
		}
		rest = rest[5+n:]
	}
	if !bytes.HasPrefix(rest, pbufMagic) {
		return Identity{}, errors.New(`no "PBUF" magic before the protobuf`)
	}
	m, err := decodeMessage(hbaseMaster, rest[len(pbufMagic):])
	if err != nil {
		return Identity{}, err
	}
	snv, _ := get(m, "master")
	sn := snv.Message()
	host, _ := get(sn, "host_name")
	h, ok := textField(host.String())
	if !ok {
		return Identity{}, errors.New("ServerName.host_name is not text")
	}
	port, _ := get(sn, "port")
	start, _ := get(sn, "start_code")
	// ServerName.toString: "host,port,startcode".
	id.ID = h + "," + strconv.FormatUint(port.Uint(), 10) + "," + strconv.FormatUint(start.Uint(), 10)
	id.put("host", h)
	id.put("port", strconv.FormatUint(port.Uint(), 10))
	id.put("start_code", strconv.FormatUint(start.Uint(), 10))
	if v, ok := get(m, "rpc_version"); ok {
		id.put("rpc_version", strconv.FormatUint(v.Uint(), 10))
	}
	if v, ok := get(m, "info_port"); ok {
		id.put("info_port", strconv.FormatUint(v.Uint(), 10))
	}
	return id, nil
}

// decodeHadoop reads an ActiveStandbyElectorLock written by HDFS's ZKFC
// (DFSZKFailoverController.targetToData): the ActiveNodeInfo message with
// no prefix. Data that is not one, but is a YARN ActiveRMInfoProto (the
// ResourceManager's elector writes those under the same node name), is
// read by twoFields.
func decodeHadoop(nodePath string, data []byte) (Identity, error) {
	m, err := decodeMessage(activeNodeInfo, data)
	if err != nil {
		// Only data with no field beyond the RM's two: an ActiveNodeInfo
		// cut after its first fields decodes as one too.
		if rm, rmErr := decodeYarn(data); rmErr == nil && onlyKnownFields(activeRMInfo, data) {
			return twoFields(nodePath, rm), nil
		}
		return Identity{}, err
	}
	id := Identity{Format: HadoopHA}
	text := func(name protoreflect.Name) (string, error) {
		v, _ := get(m, name)
		s, ok := textField(v.String())
		if !ok {
			return "", fmt.Errorf("ActiveNodeInfo.%s is not text", name)
		}
		return s, nil
	}
	ns, err := text("nameserviceId")
	if err != nil {
		return Identity{}, err
	}
	nn, err := text("namenodeId")
	if err != nil {
		return Identity{}, err
	}
	host, err := text("hostname")
	if err != nil {
		return Identity{}, err
	}
	port, _ := get(m, "port")
	zkfc, _ := get(m, "zkfcPort")
	id.ID = nn
	id.put("nameservice", ns)
	id.put("namenode", nn)
	id.put("host", host)
	id.put("port", strconv.FormatInt(port.Int(), 10))
	id.put("zkfc_port", strconv.FormatInt(zkfc.Int(), 10))
	return id, nil
}

// UnknownHadoopSystem is the "system" field of a two-field record read as
// Hadoop's (twoFields): which system wrote it is not known.
const UnknownHadoopSystem = "unknown: a YARN ActiveRMInfoProto{clusterId, rmId}, or an HDFS ActiveNodeInfo cut after its namenodeId; the path does not tell"

// twoFields names a two-field record {1: text, 2: text} read at nodePath
// as Hadoop's (rm, as decodeYarn reads it). Under YARN's base path
// (/yarn-leader-election) it is a ResourceManager's; elsewhere it is the
// bytes of a NameNode's ActiveNodeInfo cut after its namenodeId too, and a
// YARN may be given any base path, /hadoop-ha included, so neither system
// is named: the owner is field 2 either way (the rm or NameNode id), and
// the fields say both readings. Read as YARN's wherever it sat, a NameNode
// record cut short by another writer was named a ResourceManager.
func twoFields(nodePath string, rm Identity) Identity {
	if strings.HasPrefix(path.Clean("/"+nodePath), "/yarn-leader-election/") {
		return rm
	}
	id := Identity{Format: HadoopHA, ID: rm.ID}
	id.put("system", UnknownHadoopSystem)
	id.put("namenode_or_rm", rm.ID)
	if c, ok := rm.Fields["cluster_id"]; ok {
		id.put("nameservice_or_cluster", c)
	}
	return id
}

// decodeYarn reads a ResourceManager's ActiveStandbyElectorLock
// (ActiveStandbyElectorBasedElectorService.createActiveNodeInfo):
// ActiveRMInfoProto{clusterId, rmId}; the rm id is required here, since
// every field of the message is optional and almost any bytes would do.
func decodeYarn(data []byte) (Identity, error) {
	m, err := decodeMessage(activeRMInfo, data)
	if err != nil {
		return Identity{}, err
	}
	rm, _ := get(m, "rmId")
	r, ok := textField(rm.String())
	if !ok {
		return Identity{}, errors.New("ActiveRMInfoProto.rmId is missing or not text")
	}
	id := Identity{Format: YarnRM, ID: r}
	id.put("rm_id", r)
	if c, ok := get(m, "clusterId"); ok {
		cs, good := textField(c.String())
		if !good {
			return Identity{}, errors.New("ActiveRMInfoProto.clusterId is not text")
		}
		id.put("cluster_id", cs)
	}
	return id, nil
}
