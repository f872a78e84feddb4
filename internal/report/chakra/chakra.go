// Package chakra writes execution traces in MLCommons Chakra's protobuf
// schema (package ChakraProtoMsg, schema/protobuf/et_def.proto of
// github.com/mlcommons/chakra), the input of ASTRA-sim's workload layer: one
// file per NPU holding a GlobalMetadata message and then the NPU's Node
// messages, each prefixed with its length as a varint (Chakra's protolib
// encodeMessage; its decodeMessage and ASTRA-sim's feeder read them back).
//
// The messages are encoded field by field with protowire, with the field
// numbers of Chakra's published schema; no generated code is involved. The
// package knows only its own types (Node, Attr, Metadata), not the
// simulator's: experiment builds the nodes. ReadTrace, in decode.go, is an
// independent reader of the same format (it shares no code with the
// writer), the reference the tests check the writer against. astra.go writes
// the system, network and memory configurations ASTRA-sim reads beside the
// traces.
//
// # Attributes and their conventions
//
// Chakra's schema names a node's attributes but leaves most of their
// meaning to the tools that read them. dcpsim writes the ones ASTRA-sim's
// workload layer reads (astra-sim/workload/Workload.cc at astra-sim 518bd51,
// through Chakra's feeder), with the meaning ASTRA-sim gives them:
//
//   - is_cpu_op (bool), on every node: false. ASTRA-sim replays a CPU COMP
//     node but its statistics pass (Statistics::extract_comp_comm_overlap)
//     throws on any CPU interval, so no per-NPU statistics are printed; a
//     comm node on the CPU throws at once (Workload::issue_comm). Time that
//     is not a GPU kernel, such as the planner's stall, is a GPU COMP node
//     without work: replayed for its duration, nearly free under the
//     roofline (which prices kernels from their work).
//   - num_ops (int64) and tensor_size (uint64), on every GPU COMP node: the
//     node's floating-point operations and the bytes it moves to and from
//     HBM, the inputs of ASTRA-sim's roofline (roofline-enabled: time =
//     num_ops / min(peak-perf, local-mem-bw · num_ops/tensor_size);
//     Workload::issue_comp). Both are required there: a GPU COMP node
//     without num_ops aborts the NPU (the run still exits 0), and one with
//     tensor_size 0 is skipped without issuing the nodes that wait for it
//     (Workload::skip_invalid), so the NPU never finishes, and one whose
//     roofline time rounds to 0 ns trips the analytical backend's event
//     queue assertion. So no GPU COMP node is below IdleNumOps and
//     IdleTensorSize, a nominal kernel that a node without work (the
//     planner's stall, a GPU held by its domain) carries.
//   - duration_micros (the node's field), replayed by ASTRA-sim for a COMP
//     node when the roofline is off; ignored for communication, which
//     ASTRA-sim simulates from comm_size on its own network.
//   - comm_type (int64, CollectiveCommType), comm_size (int64, bytes) and
//     pg_name (string, the integer id of a group of comm_groups.json) on a
//     COMM_COLL node. comm_size is what ASTRA-sim's collective starts from
//     on each rank (Sys::generate_collective, the phases of
//     astraccl/native_collectives Ring.cc and AllToAll.cc), which is not
//     always NCCL's count (nccl-tests' size): an ALL_GATHER's comm_size is
//     each rank's input, 1/n of the gathered output (Ring.cc: each of the
//     n−1 steps sends comm_size bytes and the result is n·comm_size; Chakra's
//     PyTorch converter writes the input too); a REDUCE_SCATTER's is the
//     full input (steps of comm_size/n, result comm_size/n); an ALL_REDUCE's
//     the buffer; an ALL_TO_ALL's the send buffer (comm_size/n to each
//     peer). CommSize converts NCCL's count. ASTRA-sim hangs on an
//     ALL_GATHER smaller than its preferred-dataset-splits (its chunks
//     would be 0 bytes), so a non-empty collective is at least 1 byte.
//   - comm_src, comm_dst (int32, NPU ids), comm_tag (int32) and comm_size
//     (int64, bytes) on COMM_SEND and COMM_RECV nodes: a send and its
//     receive carry the same four values (ASTRA-sim matches them on tag,
//     source, destination and size). An empty transfer (kept so that a GPU
//     holding no tokens keeps its pipeline's order) is 1 byte: ASTRA-sim's
//     analytical frontend asserts that a message has one
//     (ChunkIdGenerator.cc) and aborts (TransferSize).
//   - pg_desc (string) names the group for people; ASTRA-sim does not read
//     it.
package chakra

import (
	"errors"
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// SchemaVersion is the GlobalMetadata version written: Chakra's own
// generator writes "1.0.0" for traces of this schema.
const SchemaVersion = "1.0.0"

// NodeType is Chakra's NodeType enum.
type NodeType int32

// Chakra's node types.
const (
	InvalidNode  NodeType = 0
	MetadataNode NodeType = 1
	MemLoadNode  NodeType = 2
	MemStoreNode NodeType = 3
	CompNode     NodeType = 4
	CommSendNode NodeType = 5
	CommRecvNode NodeType = 6
	CommCollNode NodeType = 7
)

// String is the enum's name in the schema.
func (t NodeType) String() string {
	switch t {
	case InvalidNode:
		return "INVALID_NODE"
	case MetadataNode:
		return "METADATA_NODE"
	case MemLoadNode:
		return "MEM_LOAD_NODE"
	case MemStoreNode:
		return "MEM_STORE_NODE"
	case CompNode:
		return "COMP_NODE"
	case CommSendNode:
		return "COMM_SEND_NODE"
	case CommRecvNode:
		return "COMM_RECV_NODE"
	case CommCollNode:
		return "COMM_COLL_NODE"
	}
	return fmt.Sprintf("NodeType(%d)", int32(t))
}

// CollectiveCommType is Chakra's CollectiveCommType enum, the value of a
// COMM_COLL_NODE's "comm_type" attribute (an int64).
type CollectiveCommType int64

// Chakra's collective types.
const (
	AllReduce          CollectiveCommType = 0
	Reduce             CollectiveCommType = 1
	AllGather          CollectiveCommType = 2
	Gather             CollectiveCommType = 3
	Scatter            CollectiveCommType = 4
	Broadcast          CollectiveCommType = 5
	AllToAll           CollectiveCommType = 6
	ReduceScatter      CollectiveCommType = 7
	ReduceScatterBlock CollectiveCommType = 8
	Barrier            CollectiveCommType = 9
)

// AttrKind is which member of AttributeProto's value oneof an Attr sets.
type AttrKind uint8

// The value kinds written (AttributeProto field numbers in the comments).
const (
	KindDouble AttrKind = iota + 1 // double_val = 3
	KindInt32                      // int32_val = 7
	KindInt64                      // int64_val = 9
	KindUint32                     // uint32_val = 11
	KindUint64                     // uint64_val = 13
	KindBool                       // bool_val = 27
	KindString                     // string_val = 29
)

// Attr is one AttributeProto: a name and one value, in the field its Kind
// names (Int for the signed kinds, Uint for the unsigned ones).
type Attr struct {
	Name  string
	Kind  AttrKind
	Int   int64
	Uint  uint64
	Float float64
	Bool  bool
	Str   string
}

// BoolAttr, Int32Attr, Int64Attr, Uint32Attr, Uint64Attr, DoubleAttr and
// StringAttr build an Attr of their kind.
func BoolAttr(name string, v bool) Attr   { return Attr{Name: name, Kind: KindBool, Bool: v} }
func Int32Attr(name string, v int32) Attr { return Attr{Name: name, Kind: KindInt32, Int: int64(v)} }
func Int64Attr(name string, v int64) Attr { return Attr{Name: name, Kind: KindInt64, Int: v} }
func Uint32Attr(name string, v uint32) Attr {
	return Attr{Name: name, Kind: KindUint32, Uint: uint64(v)}
}
func Uint64Attr(name string, v uint64) Attr  { return Attr{Name: name, Kind: KindUint64, Uint: v} }
func DoubleAttr(name string, v float64) Attr { return Attr{Name: name, Kind: KindDouble, Float: v} }
func StringAttr(name string, v string) Attr  { return Attr{Name: name, Kind: KindString, Str: v} }

// Node is one Chakra Node. Inputs and outputs (IOInfo) are not written.
type Node struct {
	ID   uint64
	Name string
	Type NodeType
	// CtrlDeps and DataDeps are the ids of the nodes this one waits for:
	// control (issue order) and data dependencies.
	CtrlDeps, DataDeps []uint64
	// StartMicros and DurationMicros are the node's start and duration in
	// microseconds (ASTRA-sim replays a compute node for DurationMicros).
	StartMicros, DurationMicros uint64
	Attrs                       []Attr
}

// Metadata is the GlobalMetadata message that opens a trace.
type Metadata struct {
	Version string
	Attrs   []Attr
}

// Field numbers of et_def.proto.
const (
	mdVersion, mdAttr = 1, 2

	nodeID, nodeName, nodeType, nodeCtrlDeps, nodeDataDeps = 1, 2, 3, 4, 5
	nodeStart, nodeDuration, nodeAttr                      = 6, 7, 10

	attrName                                  = 1
	attrDouble, attrInt32, attrInt64          = 3, 7, 9
	attrUint32, attrUint64, attrBool, attrStr = 11, 13, 27, 29
)

// flushBytes is the size at which WriteTrace hands its buffer to w.
const flushBytes = 1 << 16

// WriteTrace writes md and then nodes to w, each message prefixed with its
// varint length. It stops at an attribute of an unknown kind, a NaN or
// infinite double, a 32-bit value out of range, or a message that would
// encode to zero bytes (Chakra's decodeMessage reads a zero length as the
// end of the file), writing nothing of that message (earlier ones may have
// been written).
func WriteTrace(w io.Writer, md Metadata, nodes []Node) error {
	var e encoder
	if err := e.metadata(md); err != nil {
		return fmt.Errorf("chakra: metadata: %w", err)
	}
	for i := range nodes {
		if err := e.node(&nodes[i]); err != nil {
			return fmt.Errorf("chakra: node %d (id %d, %q): %w", i, nodes[i].ID, nodes[i].Name, err)
		}
		if len(e.out) >= flushBytes {
			if _, err := w.Write(e.out); err != nil {
				return err
			}
			e.out = e.out[:0]
		}
	}
	_, err := w.Write(e.out)
	return err
}

// encoder builds messages in body and appends them, length-prefixed, to
// out.
type encoder struct {
	out, body []byte
}

// finish appends the message in body to out, prefixed with its length.
func (e *encoder) finish() {
	e.out = protowire.AppendVarint(e.out, uint64(len(e.body)))
	e.out = append(e.out, e.body...)
	e.body = e.body[:0]
}

func (e *encoder) metadata(md Metadata) error {
	b := e.body[:0]
	if md.Version != "" {
		b = protowire.AppendTag(b, mdVersion, protowire.BytesType)
		b = protowire.AppendString(b, md.Version)
	}
	var err error
	for _, a := range md.Attrs {
		if b, err = appendAttr(b, mdAttr, &a); err != nil {
			return err
		}
	}
	e.body = b
	if len(b) == 0 {
		return errors.New("encodes to zero bytes: give a version")
	}
	e.finish()
	return nil
}

func (e *encoder) node(n *Node) error {
	b := e.body[:0]
	if n.ID != 0 {
		b = protowire.AppendTag(b, nodeID, protowire.VarintType)
		b = protowire.AppendVarint(b, n.ID)
	}
	if n.Name != "" {
		b = protowire.AppendTag(b, nodeName, protowire.BytesType)
		b = protowire.AppendString(b, n.Name)
	}
	if n.Type != 0 {
		b = protowire.AppendTag(b, nodeType, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(n.Type)))
	}
	b = appendPacked(b, nodeCtrlDeps, n.CtrlDeps)
	b = appendPacked(b, nodeDataDeps, n.DataDeps)
	if n.StartMicros != 0 {
		b = protowire.AppendTag(b, nodeStart, protowire.VarintType)
		b = protowire.AppendVarint(b, n.StartMicros)
	}
	if n.DurationMicros != 0 {
		b = protowire.AppendTag(b, nodeDuration, protowire.VarintType)
		b = protowire.AppendVarint(b, n.DurationMicros)
	}
	var err error
	for i := range n.Attrs {
		if b, err = appendAttr(b, nodeAttr, &n.Attrs[i]); err != nil {
			e.body = b[:0]
			return err
		}
	}
	e.body = b
	if len(b) == 0 {
		return errors.New("encodes to zero bytes: Chakra's reader would take it for the end of the trace")
	}
	e.finish()
	return nil
}

// appendPacked appends a packed repeated uint64 field (proto3's default
// encoding of repeated scalars); nothing for an empty list.
func appendPacked(b []byte, num protowire.Number, vs []uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	size := 0
	for _, v := range vs {
		size += protowire.SizeVarint(v)
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	for _, v := range vs {
		b = protowire.AppendVarint(b, v)
	}
	return b
}

// attrValueSize is the encoded size of a's value field, or -1 for an
// unknown kind.
func attrValueSize(a *Attr) int {
	switch a.Kind {
	case KindDouble:
		return protowire.SizeTag(attrDouble) + protowire.SizeFixed64()
	case KindInt32:
		return protowire.SizeTag(attrInt32) + protowire.SizeVarint(uint64(int64(int32(a.Int))))
	case KindInt64:
		return protowire.SizeTag(attrInt64) + protowire.SizeVarint(uint64(a.Int))
	case KindUint32:
		return protowire.SizeTag(attrUint32) + protowire.SizeVarint(uint64(uint32(a.Uint)))
	case KindUint64:
		return protowire.SizeTag(attrUint64) + protowire.SizeVarint(a.Uint)
	case KindBool:
		return protowire.SizeTag(attrBool) + 1
	case KindString:
		return protowire.SizeTag(attrStr) + protowire.SizeBytes(len(a.Str))
	}
	return -1
}

// appendAttr appends a as the embedded message field num. A oneof member is
// written even when it holds its zero value (proto3 keeps a oneof's
// presence).
func appendAttr(b []byte, num protowire.Number, a *Attr) ([]byte, error) {
	vs := attrValueSize(a)
	if vs < 0 {
		return b, fmt.Errorf("attribute %q: unknown kind %d", a.Name, a.Kind)
	}
	if a.Kind == KindDouble && (math.IsNaN(a.Float) || math.IsInf(a.Float, 0)) {
		return b, fmt.Errorf("attribute %q: %v is not a finite number", a.Name, a.Float)
	}
	if a.Kind == KindInt32 && a.Int != int64(int32(a.Int)) || a.Kind == KindUint32 && a.Uint > math.MaxUint32 {
		return b, fmt.Errorf("attribute %q: value out of the 32-bit range", a.Name)
	}
	size := vs
	if a.Name != "" {
		size += protowire.SizeTag(attrName) + protowire.SizeBytes(len(a.Name))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	if a.Name != "" {
		b = protowire.AppendTag(b, attrName, protowire.BytesType)
		b = protowire.AppendString(b, a.Name)
	}
	switch a.Kind {
	case KindDouble:
		b = protowire.AppendTag(b, attrDouble, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(a.Float))
	case KindInt32:
		b = protowire.AppendTag(b, attrInt32, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(int32(a.Int)))) // negative int32: ten bytes, sign-extended
	case KindInt64:
		b = protowire.AppendTag(b, attrInt64, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.Int))
	case KindUint32:
		b = protowire.AppendTag(b, attrUint32, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(uint32(a.Uint)))
	case KindUint64:
		b = protowire.AppendTag(b, attrUint64, protowire.VarintType)
		b = protowire.AppendVarint(b, a.Uint)
	case KindBool:
		b = protowire.AppendTag(b, attrBool, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(a.Bool))
	case KindString:
		b = protowire.AppendTag(b, attrStr, protowire.BytesType)
		b = protowire.AppendString(b, a.Str)
	}
	return b, nil
}

// IdleNumOps and IdleTensorSize are the num_ops and tensor_size of a GPU
// COMP node without work, and the least any GPU COMP node carries (see the
// package doc): a nominal kernel of 1 MFLOP over 100 kB, which ASTRA-sim's
// roofline runs in max(num_ops/peak-perf, tensor_size/local-mem-bw), at
// least 1 ns on any GPU with under 100 TB/s of HBM (25 ns on an H20).
const (
	IdleNumOps     = 1_000_000
	IdleTensorSize = 100_000
)

// CommSize is the comm_size of a collective of type t over ranks ranks that
// moves ncclBytes per rank as NCCL counts them (nccl-tests' size: an
// all-gather's output, a reduce-scatter's input, an all-reduce's buffer, an
// all-to-all's send buffer): the same bytes, except an ALL_GATHER's, which
// ASTRA-sim takes as each rank's input, ncclBytes/ranks (see the package
// doc). It rounds to the nearest byte, and a collective of more than 0 bytes
// is at least 1 byte; 0 for none (ncclBytes <= 0 or NaN) or ranks < 1.
func CommSize(t CollectiveCommType, ncclBytes float64, ranks int) int64 {
	if !(ncclBytes > 0) || ranks < 1 {
		return 0
	}
	if t == AllGather {
		ncclBytes /= float64(ranks)
	}
	if ncclBytes >= math.MaxInt64 {
		return math.MaxInt64
	}
	return max(1, int64(math.Round(ncclBytes)))
}

// TransferSize is the comm_size of a COMM_SEND or COMM_RECV moving bytes:
// rounded to the byte, at least 1 (an empty transfer; see the package doc).
func TransferSize(bytes float64) int64 {
	if bytes >= math.MaxInt64 {
		return math.MaxInt64
	}
	if !(bytes >= 1) {
		return 1
	}
	return int64(math.Round(bytes))
}
